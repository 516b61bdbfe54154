"""Code written for a newer Python than the one running cudalint is analyzed anyway (cudalint.inputs.newsyntax).

Each construct is linted as a user meets it: `python -m cudalint` in a subprocess, on the oldest
interpreter the machine has (3.10), on this suite's own, and on 3.13 when it is there. Every file also
holds a real CUD001, whose exact line is asserted: it must not be lost to the construct.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import interpreters

HEAD = "import os\nimport torch\n\n"
WRITE_AFTER_CHECK = 'if torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
CUD001 = "CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line {init}); the driver read it then, so this write has no effect"

# name: (the Python that first reads it, source, the expected first line of output)
CASES = {
    "type_alias": ((3, 12), HEAD + "type Vec = list[float]\ntype Pair[T] = tuple[T, T]\n" + WRITE_AFTER_CHECK, "7:5", 6),
    "generic_function": ((3, 12), HEAD + "def first[T](xs: list[T]) -> T:\n    return xs[0]\n\n\n" + WRITE_AFTER_CHECK, "9:5", 8),
    "generic_class": ((3, 12), HEAD + "class Box[T: (int, str)](object):\n    pass\n\n\n" + WRITE_AFTER_CHECK, "9:5", 8),
    "type_params_over_lines": ((3, 12), HEAD + "def first[\n    T,  # the element\n    U: int,\n](xs: list[T]) -> T:\n    return xs[0]\n" + WRITE_AFTER_CHECK, "10:5", 9),
    "type_param_default": ((3, 13), HEAD + "def first[T = int](xs: list[T]) -> T:\n    return xs[0]\n\n\nclass Box[T = str]: ...\ntype L[T = int] = list[T]\n" + WRITE_AFTER_CHECK, "11:5", 10),
    # the interpolation runs: it is the initializing call
    "t_string": ((3, 14), HEAD + 'print(t"{torch.cuda.is_available()!r:>{8}}")\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n', "5:1", 4),
    # columns after the construct on its line stay exact (a two-byte character before them)
    "t_string_same_line": ((3, 14), HEAD + "torch.cuda.is_available()\nmsg = t\"{len('é')}\"; os.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n", "5:22", 4),
    "except_without_parentheses": ((3, 14), HEAD + "try:\n    torch.cuda.is_available()\nexcept RuntimeError, ValueError:\n    pass\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n", "8:1", 5),
    "except_star": ((3, 11), HEAD + "try:\n    torch.cuda.is_available()\nexcept* RuntimeError:\n    pass\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n", "8:1", 5),
    "f_string_nested_quotes": ((3, 12), HEAD + 'd = {"k": 1}\nprint(f"{d["k"]}")\n' + WRITE_AFTER_CHECK, "7:5", 6),
    "f_string_backslash": ((3, 12), HEAD + "print(f\"{'\\n'.join(['a'])}\", f'{torch.cuda.is_available()}')\nos.environ[\"CUDA_VISIBLE_DEVICES\"] = \"1\"\n", "5:1", 4),
}
# what cannot be rewritten (an empty line inside a type parameter list, inside an f-string's braces)
UNHANDLED = {
    "type_params_with_blank_line": ((3, 12), HEAD + "def first[\n    T,\n\n](xs: list[T]) -> T:\n    return xs[0]\n" + WRITE_AFTER_CHECK, "4:10", "type parameter list"),
    "f_string_with_blank_line": ((3, 12), HEAD + 'x = f"{\n\n1}"\n' + WRITE_AFTER_CHECK, "4:5", "f-string with a quote, backslash or comment inside {} (PEP 701)"),
}
VERSIONS = ["3.10", "3.11", "3.13"]


@pytest.fixture(scope="module", params=VERSIONS)
def linted(request, tmp_path_factory) -> tuple[tuple[int, int], dict[str, str]]:
    """(interpreter version, {case: cudalint's output on it}), one run of cudalint over all cases."""
    python = interpreters.find(request.param)
    if python is None:
        if request.param == "3.10":
            pytest.fail("no Python 3.10 (the oldest supported) on this machine: install it with pyenv")
        pytest.skip(f"no Python {request.param} on this machine")
    python = interpreters.with_dependencies(python, interpreters.home(request.config))
    work = tmp_path_factory.mktemp("newer-" + request.param)
    for name, (_, text, *_rest) in {**CASES, **UNHANDLED}.items():
        (work / f"{name}.py").write_text(text, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(interpreters.ROOT))
    proc = subprocess.run(
        [python, "-m", "cudalint", "--no-cache", "--jobs", "1", "."], cwd=work, capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    version = tuple(int(p) for p in request.param.split("."))
    out: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        if not line.startswith(" ") and ".py:" in line:
            out.setdefault(line.split(".py:")[0], line)
    return version, out  # type: ignore[return-value]


@pytest.mark.parametrize("case", sorted(CASES))
def test_newer_construct_keeps_the_finding(linted, case: str) -> None:
    version, out = linted
    _, _, where, init = CASES[case]
    assert out.get(case) == f"{case}.py:{where}: " + CUD001.format(init=init)


@pytest.mark.parametrize("case", sorted(UNHANDLED))
def test_construct_that_cannot_be_rewritten_says_which_python_reads_it(linted, case: str) -> None:
    version, out = linted
    needs, _, where, name = UNHANDLED[case]
    if version >= needs:  # read natively: the finding is there
        assert out.get(case, "").startswith(f"{case}.py:") and "CUD001" in out[case]
        return
    running = "%d.%d" % version
    assert out.get(case) == (
        f"{case}.py:{where}: CUD900 this file uses Python {needs[0]}.{needs[1]} syntax ({name}), which Python {running} "
        f"running cudalint cannot parse; run cudalint with Python >= {needs[0]}.{needs[1]}"
    )


def test_python2_except_is_still_reported_as_python2(tmp_path: Path) -> None:
    """`except E, e:` is Python 2 (a lower-case name after the comma), not 3.14's unparenthesized types:
    the same verdict from every Python, 3.14 included, which reads it as `except (E, e):`
    (cudalint.inputs.source.python2_except; run on 3.14.10 with tools/python314.sh)."""
    (tmp_path / "py2.py").write_text("try:\n    pass\nexcept Exception, e:\n    pass\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "cudalint", "--no-cache", "py2.py"],
        cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(interpreters.ROOT)),
    )
    assert proc.stdout.splitlines()[0] == "py2.py:3:8: CUD900 syntax error: multiple exception types must be parenthesized (Python 2 syntax?)"


@pytest.mark.parametrize("case", sorted({**CASES, **UNHANDLED}))
def test_offsets_agree_with_libcst_positions(case: str) -> None:
    """newsyntax's cheap spans are libcst's PositionProvider ranges, as offsets (the Module aside)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from cudalint.inputs.newsyntax import offsets

    text = {**CASES, **UNHANDLED}[case][1]
    module = cst.parse_module(text)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"] + [len(text) + 1]
    spans = offsets(module)
    for node, r in positions.items():
        if not isinstance(node, cst.Module):
            want = (starts[r.start.line - 1] + r.start.column, starts[r.end.line - 1] + r.end.column)
            assert spans[node] == want, (type(node).__name__, spans[node], want)
