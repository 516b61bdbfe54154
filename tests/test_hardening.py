"""Bad input never crashes a run nor hides the findings of other files.

Each case puts one bad input next to `canary.py`, a file with a CUD001 at line 4, and runs the real
CLI on the directory. The run must exit 1 (findings), print nothing on stderr (no traceback), print
exactly the expected line for the bad file, and still report the canary's finding.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path
from typing import Callable

import pytest

from cudalint.inputs.source import MAX_FILE_BYTES

_DETECT = tokenize.detect_encoding  # (the real one: the tests below put 3.14's in its place)

CANARY = 'import os\nimport torch\ntorch.cuda.init()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
CANARY_LINE = (
    "canary.py:4:1: CUD001 CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.init() "
    "(line 3); the driver read it then, so this write has no effect"
)
BUG = b'import os\nimport torch\ntorch.cuda.init()\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def _symlink(name: str, target: str) -> Callable[[Path], None]:
    return lambda d: os.symlink(target, d / name)


def _loop(d: Path) -> None:
    os.symlink("b.py", d / "a.py")
    os.symlink("a.py", d / "b.py")


def _dir_loop(d: Path) -> None:
    (d / "pkg").mkdir()
    (d / "pkg" / "mod.py").write_text("x = 1\n")
    os.symlink("..", d / "pkg" / "up")


def _fifo(d: Path) -> None:
    os.mkfifo(d / "fifo.py")


def _big(d: Path) -> None:
    line = b"x = 1  # generated padding, the kind of file a code generator leaves behind\n"
    with open(d / "big.py", "wb") as fh:
        fh.write(BUG)
        fh.write(line * (50 * 1024 * 1024 // len(line) + 1))


def _deep(expr: str) -> bytes:
    return (f"import os\nimport torch\ntorch.cuda.init()\nx = {expr}\n" + 'os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n').encode()


SYNTAX = "CUD900 syntax error:"
# (id, how to make the bad input, the lines the user sees for it (besides the canary's finding))
CASES: list[tuple[str, Callable[[Path], None], list[str]]] = [
    ("syntax_error", _write("bad.py", b"def f(:\n    pass\n"), [f"bad.py:1:7: {SYNTAX} invalid syntax"]),
    ("python2_print", _write("py2.py", b'print "hello"\n'), [f"py2.py:1:1: {SYNTAX} Missing parentheses in call to 'print'. Did you mean print(...)? (Python 2 syntax?)"]),
    ("python2_exec", _write("py2.py", b"exec 'x = 1'\n"), [f"py2.py:1:1: {SYNTAX} Missing parentheses in call to 'exec'. Did you mean exec(...)? (Python 2 syntax?)"]),
    ("python2_octal", _write("py2.py", b"x = 0777\n"), [f"py2.py:1:5: {SYNTAX} leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers"]),
    # CPython decides what is Python (libcst once accepted Python 2's `except E, e:` and analyzed it)
    ("python2_except_comma", _write("py2.py", b"try:\n    pass\nexcept Exception, e:\n    pass\n"), [f"py2.py:3:8: {SYNTAX} multiple exception types must be parenthesized (Python 2 syntax?)"]),
    ("python2_backticks", _write("py2.py", b"x = `1`\n"), [f"py2.py:1:5: {SYNTAX} invalid syntax (Python 2 syntax?)"]),
    ("non_utf8", _write("latin.py", b"x = '\xe9t\xe9'\n"), ["latin.py:1:1: CUD900 cannot decode as utf-8 (no coding declaration says otherwise): invalid continuation byte"]),
    ("unknown_encoding", _write("enc.py", b"# -*- coding: klingon -*-\nx = 1\n"), ["enc.py:1:1: CUD900 cannot decode: unknown encoding: klingon"]),
    ("utf16", _write("u16.py", "x = 1\n".encode("utf-16")), ["u16.py:1:1: CUD900 cannot decode as utf-8 (no coding declaration says otherwise): invalid start byte"]),
    ("bom_and_wrong_cookie", _write("bom.py", b"\xef\xbb\xbf# coding: latin-1\nx = 1\n"), ["bom.py:1:1: CUD900 cannot decode: encoding problem: utf-8"]),
    ("nul_byte", _write("nul.py", b"x = 1\ny = 2\x00\n"), ["nul.py:2:1: CUD900 cannot parse: the file contains a NUL byte"]),
    # (in the lines whose encoding Python 3.14's tokenize checks: cudalint.inputs.source._detect_encoding)
    ("nul_byte_first_line", _write("nul.py", b"x = 1\x00\n"), ["nul.py:1:1: CUD900 cannot parse: the file contains a NUL byte"]),
    ("nul_byte_under_a_cookie", _write("nul.py", b"# -*- coding: latin-1 -*-\nx = '\xe9'\x00\n"), ["nul.py:2:1: CUD900 cannot parse: the file contains a NUL byte"]),
    ("inconsistent_tabs", _write("tabs.py", b"if True:\n        x = 1\n\ty = 2\n"), [f"tabs.py:3:1: {SYNTAX} inconsistent use of tabs and spaces in indentation"]),
    ("file_50mb", _big, ["big.py:1:1: CUD900 skipped: the file is 50.0 MB, more than the 10.0 MB cudalint parses (exclude it, or split it)"]),
    ("nested_parens_1000", _write("deep.py", _deep("(" * 1000 + "1" + ")" * 1000)), [f"deep.py:4:205: {SYNTAX} too many nested parentheses"]),
    ("nested_lists_1000", _write("deep.py", _deep("[" * 1000 + "]" * 1000)), [f"deep.py:4:205: {SYNTAX} too many nested parentheses"]),
    ("nested_calls_1000", _write("deep.py", _deep("f(" * 1000 + ")" * 1000)), [f"deep.py:4:406: {SYNTAX} too many nested parentheses"]),
    ("broken_symlink", _symlink("gone.py", "does-not-exist.py"), ["gone.py:1:1: CUD900 cannot read: no such file (a broken symlink?)"]),
    ("symlink_loop_file", _loop, ["a.py:1:1: CUD900 cannot read: Too many levels of symbolic links", "b.py:1:1: CUD900 cannot read: Too many levels of symbolic links"]),
    # a link to a folder above: every file it reaches is linted through its real path (lmql's `docs/latest -> .`)
    ("symlink_loop_directory", _dir_loop, []),
    ("fifo", _fifo, ["fifo.py:1:1: CUD900 skipped: not a regular file (a FIFO, socket or device)"]),
    # malformed notebooks (cudalint.inputs.notebook reads them; these pin what the user sees)
    ("notebook_truncated_json", _write("nb.ipynb", b'{"cells": ['), ["nb.ipynb:1:12: CUD900 not a notebook: invalid JSON: Expecting value"]),
    ("notebook_empty", _write("nb.ipynb", b""), ["nb.ipynb:1:1: CUD900 not a notebook: invalid JSON: Expecting value"]),
    ("notebook_not_an_object", _write("nb.ipynb", b"[1, 2]"), ["nb.ipynb:1:1: CUD900 not a notebook: the JSON document is not an object"]),
    ("notebook_cell_source_not_text", _write("nb.ipynb", b'{"cells": [{"cell_type": "code", "source": 5}], "nbformat": 4}'), ["nb.ipynb:1:1: CUD900 not a notebook: the source of cell 1 is not text"]),
    ("notebook_binary", _write("nb.ipynb", b"\xff\xfe{"), ["nb.ipynb:1:1: CUD900 cannot decode as utf-8 (no coding declaration says otherwise): invalid start byte"]),
    ("notebook_cell_syntax_error", _write("nb.ipynb", b'{"cells": [{"cell_type": "code", "source": ["def f(:\\n"]}], "nbformat": 4, "metadata": {}}'), ["nb.ipynb:cell 1:1:7: CUD900 syntax error: invalid syntax"]),
]

# valid but unusual input: analyzed like any other file, findings at the right lines
VALID: list[tuple[str, bytes, list[str]]] = [
    ("empty", b"", []),
    ("only_comments", b"# nothing here\n", []),
    ("bom", b"\xef\xbb\xbf" + BUG, ["x.py:4:1: CUD001"]),
    ("crlf", BUG.replace(b"\n", b"\r\n"), ["x.py:4:1: CUD001"]),
    ("cr_only", BUG.replace(b"\n", b"\r"), ["x.py:4:1: CUD001"]),
    ("no_final_newline", BUG.rstrip(b"\n"), ["x.py:4:1: CUD001"]),
    ("latin1_cookie", b"# -*- coding: latin-1 -*-\n" + BUG.replace(b'"1"\n', b'"1"  # caf\xe9\n'), ["x.py:5:1: CUD001"]),
    ("tab_indentation", b"import os\nimport torch\n\n\ndef f():\n\ttorch.cuda.init()\n\tif True:\n\t\tos.environ['CUDA_VISIBLE_DEVICES'] = '1'\n", ["x.py:8:3: CUD001"]),
    ("deep_binop_1000", _deep("+".join(["1"] * 1000)), ["x.py:5:1: CUD001"]),
    ("deep_not_1000", _deep("not " * 1000 + "1"), ["x.py:5:1: CUD001"]),
    ("deep_attribute_1000", _deep("a" + ".b" * 1000), ["x.py:5:1: CUD001"]),
    ("deep_lambda_1000", _deep("lambda: " * 1000 + "1"), ["x.py:5:1: CUD001"]),
    ("deep_and_1000", _deep(" and ".join(["torch.cuda.is_available()"] * 1000)), ["x.py:5:1: CUD001"]),
    ("deep_ternary_300", _deep("torch.cuda.is_available() if b else " * 300 + "1"), ["x.py:5:1: CUD001"]),
]


def run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cudalint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
    )


def _lines(proc: subprocess.CompletedProcess) -> list[str]:
    return [line for line in proc.stdout.splitlines() if not line.startswith(" ") and not line.startswith(("Found", "All"))]


@pytest.mark.parametrize("name,make,expected", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_clear_line_and_the_run_goes_on(tmp_path: Path, name, make, expected) -> None:
    (tmp_path / "canary.py").write_text(CANARY)
    make(tmp_path)
    proc = run_cli(["."], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    assert sorted(_lines(proc)) == sorted(expected + [CANARY_LINE])


@pytest.mark.parametrize("name,data,expected", VALID, ids=[c[0] for c in VALID])
def test_unusual_but_valid_input_is_analyzed(tmp_path: Path, name, data, expected) -> None:
    (tmp_path / "x.py").write_bytes(data)
    proc = run_cli(["x.py"], tmp_path)
    assert proc.stderr == ""
    assert proc.returncode == (1 if expected else 0)
    got = [line.split(" CUDA_")[0] for line in _lines(proc)]
    assert got == expected


def test_deeply_nested_input_in_worker_processes(tmp_path: Path, monkeypatch) -> None:
    """Workers send their results pickled, and pickling recurses: the deep cases above, linted by
    two workers, give the findings a serial run gives (cudalint.engine.tasks._run_chunk's deep stack)."""
    from cudalint.engine import runner
    from cudalint.api import lint_paths

    for name, data, _expected in VALID:
        (tmp_path / f"{name}.py").write_bytes(data)
    serial = lint_paths([str(tmp_path)], jobs=1, cache=None)
    monkeypatch.setattr(runner, "PARALLEL_MIN_FILES", 2)
    parallel = lint_paths([str(tmp_path)], jobs=2, cache=None)
    deep = [f for f in parallel.findings if "deep_ternary_300" in f.path]
    assert deep and [(f.path, f.line, f.code) for f in deep] == [(str(tmp_path / "deep_ternary_300.py"), 5, "CUD001")]
    assert parallel.findings == serial.findings


def test_a_long_chain_of_calls_under_an_import_is_walked_with_a_deep_stack(tmp_path: Path) -> None:
    """CUD003 walks an imported module's top level through the calls it makes, across modules: 300
    modules each calling the next one's function exceeded the default stack (the 4,000-module
    project of benchmarks/adversarial.py ended in "internal error: RecursionError", no findings)."""
    from cudalint.api import lint_paths

    depth = 300
    for i in range(depth):
        body = f"import m{i + 1}\n\n\ndef f():\n    m{i + 1}.f()\n" if i + 1 < depth else "import torch\n\n\ndef f():\n    torch.cuda.init()\n"
        (tmp_path / f"m{i}.py").write_text(body + ("\nf()\n" if i == 0 else ""))
    (tmp_path / "main.py").write_text("import m0\n")
    found = lint_paths([str(tmp_path)], jobs=1, cache=None).findings
    assert [(Path(f.path).name, f.line, f.code) for f in found] == [("m0.py", 7, "CUD003")]
    assert found[0].message.startswith("f() (through torch.cuda.init() at ")


def test_missing_path_on_the_command_line(tmp_path: Path) -> None:
    """A typo on the command line is a usage error (exit 2, as ruff), not a finding (#18)."""
    (tmp_path / "canary.py").write_text(CANARY)
    proc = run_cli(["nope.py", "canary.py"], tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "cudalint: nope.py: no such file or directory\n")


def test_size_limit_is_ten_megabytes() -> None:
    assert MAX_FILE_BYTES == 10 * 1024 * 1024


def test_a_file_longer_than_its_size_says_is_read_whole() -> None:
    """A file is read to the size fstat gives, and on when there is more (a file that grew, or one
    of /proc, whose size is 0): never only as far as the size said."""
    from cudalint.inputs.source import read_bytes

    data = read_bytes("/proc/self/status")
    assert isinstance(data, bytes) and data.startswith(b"Name:") and b"VmRSS" in data


def test_a_file_that_grew_past_the_limit_while_read_is_skipped(tmp_path: Path, monkeypatch) -> None:
    """fstat said 10 bytes, the file holds more than 10 MB by the time it is read: skipped, not cut."""
    from cudalint.inputs import source
    from cudalint.core.findings import Finding

    big = tmp_path / "grown.py"
    big.write_bytes(b"x = 1\n" * (MAX_FILE_BYTES // 6 + 1))
    real = os.fstat
    monkeypatch.setattr(source.os, "fstat", lambda fd: os.stat_result((*real(fd)[:6], 10, *real(fd)[7:])))
    got = source.read_bytes(str(big))
    assert isinstance(got, Finding) and got.message == "skipped: more than the 10.0 MB cudalint parses"


def test_a_cache_entry_longer_than_its_size_says_is_read_whole(tmp_path: Path, monkeypatch) -> None:
    from cudalint.core import cache_files

    cache_files.write(tmp_path, "x/entry.json", b'{"value": "' + b"v" * 5000 + b'"}')
    assert cache_files.read(tmp_path, "x/entry.json") == {"value": "v" * 5000}
    real = os.fstat

    def fstat(fd):  # the size as it was before the rest of the entry was written
        st = real(fd)
        return os.stat_result((*st[:6], 10, *st[7:]))

    monkeypatch.setattr(cache_files.os, "fstat", fstat)
    assert cache_files.read(tmp_path, "x/entry.json") == {"value": "v" * 5000}


# ---------- unreadable files and directories ---------------------------------------------------
def _as_nobody(fn: Callable[[], object]) -> object:
    """Run `fn` where permissions bite. As root (as in CI containers) mode 000 means nothing, so a
    forked child drops its effective uid to nobody (65534) first; the result comes back as JSON."""
    if os.geteuid() != 0:
        return fn()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setegid(65534)
            os.seteuid(65534)
            payload = json.dumps({"ok": fn()})
        except BaseException as exc:  # reported to the parent, never raised in a forked pytest
            payload = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            code = 1
        with os.fdopen(write, "w") as fh:
            fh.write(payload)
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as fh:
        data = json.loads(fh.read() or '{"error": "no output"}')
    os.waitpid(pid, 0)
    assert "error" not in data, data["error"]
    return data["ok"]


def _cli_in_process(args: list[str], cwd: str) -> dict:
    from click.testing import CliRunner

    from cudalint.cli import cli

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(cli, args, env={"NO_COLOR": "1"})
    finally:
        os.chdir(old)
    return {"exit": result.exit_code, "stdout": result.stdout, "exception": repr(result.exception) if result.exception and not isinstance(result.exception, SystemExit) else None}


@pytest.fixture
def shared_dir():
    """A directory nobody can traverse (pytest's tmp_path is private to its user)."""
    d = tempfile.mkdtemp(prefix="cudalint-perm-")
    os.chmod(d, 0o755)
    yield Path(d)
    for root, dirs, _files in os.walk(d):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    subprocess.run(["rm", "-rf", d], check=True)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_unreadable_file_or_directory(shared_dir: Path, what: str) -> None:
    (shared_dir / "canary.py").write_text(CANARY)
    if what == "file":
        (shared_dir / "secret.py").write_text("x = 1\n")
        os.chmod(shared_dir / "secret.py", 0)
        expected = "secret.py:1:1: CUD900 cannot read: permission denied"
    else:
        (shared_dir / "private").mkdir()
        (shared_dir / "private" / "mod.py").write_text("x = 1\n")
        os.chmod(shared_dir / "private", 0)
        expected = "private:1:1: CUD900 cannot read directory: permission denied"
    _cli_in_process(["canary.py"], str(shared_dir))  # import everything while we may still read it
    result = _as_nobody(lambda: _cli_in_process(["."], str(shared_dir)))
    assert result["exception"] is None
    assert result["exit"] == 1
    lines = [line for line in result["stdout"].splitlines() if not line.startswith((" ", "Found"))]
    assert sorted(lines) == sorted([expected, CANARY_LINE])


def test_a_file_reached_twice_is_listed_once(tmp_path: Path) -> None:
    """A file given by name and found again in its folder, through a folder reached by a link, or
    through a link to the file itself: one entry each (the walk takes a file's real path from its
    folder's; a link's from the link)."""
    from cudalint.inputs.discover import discover

    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg" / "a.py").write_text("x = 1\n")
    (real / "b.py").write_text("x = 2\n")
    os.symlink(real / "pkg", tmp_path / "pkg_link")
    os.symlink(real / "b.py", real / "pkg" / "b_link.py")
    found = discover([str(real / "pkg" / "a.py"), str(tmp_path / "pkg_link"), str(real)], respect_gitignore=False)
    assert found.problems == ()
    assert sorted(os.path.relpath(f, tmp_path) for f in found.files) == ["pkg_link/b_link.py", "real/pkg/a.py"]
    alone = discover([str(tmp_path / "pkg_link" / "a.py"), str(real / "pkg")], respect_gitignore=False)
    assert sorted(os.path.relpath(f, tmp_path) for f in alone.files) == ["pkg_link/a.py", "real/pkg/b_link.py"]


def test_a_link_to_a_folder_above_lists_each_file_once_and_is_no_finding(tmp_path: Path) -> None:
    """lmql-lang/lmql's `docs/latest -> .`: every file the link reaches is listed through its real
    path, once; the walk ends (no hang) and nothing goes unchecked, so nothing is reported."""
    from cudalint.inputs.discover import discover

    (tmp_path / "docs").mkdir()
    (tmp_path / "main.py").write_text("x = 1\n")
    (tmp_path / "docs" / "conf.py").write_text("x = 2\n")
    os.symlink(".", tmp_path / "docs" / "latest")
    os.symlink("..", tmp_path / "docs" / "up")
    found = discover([str(tmp_path)])
    assert found.problems == ()
    assert sorted(os.path.relpath(f, tmp_path) for f in found.files) == ["docs/conf.py", "main.py"]
    through = discover([str(tmp_path / "docs" / "latest")])  # given through the link itself (`up` reaches the root)
    assert through.problems == () and sorted(os.path.basename(f) for f in through.files) == ["conf.py", "main.py"]


# What Python 3.14 changed under the verdicts above (CI runs 3.11; tools/python314.sh runs the whole
# suite on 3.14): its tokenize refuses a NUL where it looks for an encoding, and its parser reads
# Python 2's `except E, e:` as PEP 758's `except (E, e):`. The verdicts stay those of 3.10 to 3.13.
def _detect_encoding_of_python314(readline):
    """tokenize.detect_encoding as Python 3.14 has it, for the lines that matter here: a NUL in the
    (at most two) lines it reads is a SyntaxError before any encoding is looked at."""
    lines = [readline(), readline()]
    if any(b"\x00" in line for line in lines):
        raise SyntaxError("source code cannot contain null bytes")
    rest = iter(lines)
    return _DETECT(lambda: next(rest, b""))


@pytest.mark.parametrize(
    "data,expected",
    [
        ("x = 1\n".encode("utf-16"), "cannot decode as utf-8 (no coding declaration says otherwise): invalid start byte"),
        (b"x = 1\x00\n", "cannot parse: the file contains a NUL byte"),
        (b"# -*- coding: latin-1 -*-\nx = '\xe9'\x00\n", "cannot parse: the file contains a NUL byte"),
        (b"# -*- coding: klingon -*-\nx = 1\x00\n", "cannot decode: unknown encoding: klingon"),
    ],
    ids=["utf16", "nul_first_line", "nul_under_a_cookie", "nul_under_an_unknown_cookie"],
)
def test_a_nul_gets_the_same_verdict_from_the_tokenize_of_python_314(monkeypatch, data: bytes, expected: str) -> None:
    from cudalint.inputs import source

    before = source.decode("x.py", data)
    monkeypatch.setattr(source.tokenize, "detect_encoding", _detect_encoding_of_python314)
    after = source.decode("x.py", data)
    assert before.message == after.message == expected
    assert before.line == after.line


def _tree_of_python314(text: str):
    """The tree Python 3.14 makes of `except A, b:`: that of `except (A, b):`, its tuple starting
    where its first element does (older Pythons read only the parenthesized text)."""
    import ast
    import re

    tree = ast.parse(re.sub(r"except(\*?) (.*), (\w+):", r"except\1 (\2, \3):", text))
    lines = text.splitlines()
    for node in ast.walk(tree):
        if type(node) is ast.ExceptHandler and type(node.type) is ast.Tuple:
            line = lines[node.lineno - 1]
            node.type.col_offset = node.type.elts[0].col_offset = line.index(" ", line.index("except")) + 1
    return tree


@pytest.mark.parametrize(
    "text,expected",
    [
        ("try:\n    pass\nexcept Exception, e:\n    pass\n", (3, 8)),
        ("def f():\n    try:\n        pass\n    except (ValueError, OSError), err:\n        pass\n", (4, 12)),
    ],
    ids=["except_name_comma_name", "except_tuple_comma_name"],
)
def test_python2_except_gets_the_same_verdict_from_python_314(text: str, expected) -> None:
    from cudalint.inputs import source

    found = source.python2_except(source.Source(path="py2.py", text=text), _tree_of_python314(text))
    assert (found.line, found.column, found.message) == (*expected, "syntax error: multiple exception types must be parenthesized (Python 2 syntax?)")


@pytest.mark.parametrize(
    "text",
    [
        "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",  # PEP 758: two classes
        "try:\n    pass\nexcept (ValueError, e):\n    pass\n",  # parenthesized: a tuple, in every version
        "try:\n    pass\nexcept ValueError, _e:\n    pass\n",  # not lowercase: as cudalint.inputs.newsyntax judges it
        "try:\n    pass\nexcept* ValueError, e:\n    pass\n",  # PEP 758 in `except*`, never Python 2
        "x = [a, b]\n# except A, b:\n",
    ],
    ids=["pep758_classes", "parenthesized", "underscore_name", "except_star", "a_comment"],
)
def test_python_314_code_that_is_not_python2_stays_code(text: str) -> None:
    from cudalint.inputs import source

    tree = _tree_of_python314(text) if "except (" not in text else __import__("ast").parse(text)
    assert source.python2_except(source.Source(path="ok.py", text=text), tree) is None
