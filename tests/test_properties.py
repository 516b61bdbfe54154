"""Property tests: random valid programs (hypothesmith) and random mutations of the fixtures never
crash the analyzer, give the same output every time, and `# noqa` suppresses what it names."""
from __future__ import annotations

import json
import re

import hypothesmith
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cudalint.api import lint_files
from cudalint.core.catalogue import load_catalogue
from cudalint.inputs.config import Config
from tests.fixture_expectations import FIXTURES

CATALOGUE = load_catalogue(())
CONFIG = Config()
SOURCES = sorted(p for p in FIXTURES.rglob("*.py"))
TEXTS = [p.read_text(encoding="utf-8") for p in SOURCES]
BOUNDED = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)


def lint_text(text: str, name: str = "prog.py") -> list[dict]:
    """Lint one file's text as if it were on disk (nothing is written)."""
    result = lint_files([name], CONFIG, CATALOGUE, overlay={name: text})
    return [f.to_json() for f in result.findings]


def check_deterministic(text: str) -> list[dict]:
    first = lint_text(text)
    assert json.dumps(first) == json.dumps(lint_text(text))
    return first


@BOUNDED
@given(hypothesmith.from_grammar())
def test_random_valid_programs(code: str) -> None:
    check_deterministic(code)


_BUG = 'import os\nimport torch\ntorch.cuda.init()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar(), st.booleans())
def test_random_programs_around_a_bug(code: str, before: bool) -> None:
    """A random program before or after a known bug: still no crash, same answer twice."""
    check_deterministic(code + "\n" + _BUG if before else _BUG + code)


# ---------- mutations of the fixtures -------------------------------------------------------------
_CHARS = st.sampled_from(list("()[]{}:;,.'\"\\#=\t \n\r") + ["\x00", "\x0c", "\ufeff", "é", "    ", "if x:", "lambda", "async ", "\"\"\""])


@st.composite
def mutated(draw) -> str:
    lines = draw(st.sampled_from(TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "insert", "indent", "truncate"]))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "insert":
            at = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:at] + draw(_CHARS) + lines[i][at:]
        elif kind == "indent":
            lines[i] = draw(st.sampled_from(["    ", "\t", "  "])) + lines[i]
        else:
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: draw(st.integers(0, len(lines[-1])))]
    return "".join(lines)


@BOUNDED
@given(mutated())
def test_mutated_fixtures_never_crash_and_are_deterministic(text: str) -> None:
    check_deterministic(text)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(st.sampled_from(TEXTS), mutated()), st.data())
def test_noqa_suppresses_exactly_what_it_names(text: str, data) -> None:
    findings = [f for f in lint_text(text) if f["code"] != "CUD900"]
    assume(findings)
    target = data.draw(st.sampled_from(findings))
    parts = re.split(r"(\r\n|\r|\n)", text)  # Python's line ends, and only those
    lines, ends = parts[0::2], parts[1::2] + [""]
    line = target["line"]
    assume(line <= len(lines) and not lines[line - 1].rstrip().endswith("\\"))
    lines[line - 1] = lines[line - 1] + f"  # noqa: {target['code']}"
    suppressed = "".join(a + b for a, b in zip(lines, ends))
    after = lint_text(suppressed)
    assume(not any(f["code"] == "CUD900" for f in after))  # the comment landed inside a string
    assert not any(f["line"] == line and f["code"] == target["code"] for f in after)
    kept = sorted((f["line"], f["code"], f["message"]) for f in findings if not (f["line"] == line and f["code"] == target["code"]))
    assert sorted((f["line"], f["code"], f["message"]) for f in after) == kept


def test_noqa_lines_count_only_python_line_ends() -> None:
    """Found by the property test's alphabet: str.splitlines() splits at a form feed, Python does not."""
    for odd in ("\x0c", "\x0b", "\x1c", "\x85", "\u2028"):
        text = f"import os\nimport torch\ntorch.cuda.init()  # {odd} odd\n" + 'os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # noqa: CUD001\n'
        assert lint_text(text) == [], repr(odd)
