"""Read, decode and parse one file. Whatever goes wrong becomes a CUD900 finding, never a crash."""
from __future__ import annotations

import io
import os
import re
import stat
import sys
import tokenize

from cudalint.core.findings import Finding
from cudalint.core.record import record
from cudalint.core.sized_read import read_upto

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional, Union
    import ast

    import libcst as cst


@record
class Source:
    path: str
    text: str


def problem(path: str, reason: str, line: int = 1, column: int = 1) -> Finding:
    return Finding.at("CUD900", path, (line, column, line, column), reason)


# libcst needs about 200 bytes of memory per byte of source (a 50 MB file of short statements took
# 11.6 GB and 4 minutes): past this size a file is reported, not parsed.
MAX_FILE_BYTES = 10 * 1024 * 1024
# CPython's tokenizer refuses more than 200 nested brackets (MAXLEVEL), and libcst's parser takes
# minutes on such input: we ask CPython for its error message instead.
MAX_BRACKET_DEPTH = 200
# CPython's syntax tree takes about 1 KB per name or number (a 1 MB list literal of 524,000 numbers:
# 523 MB to parse alone; real code stays far below: the densest file in the stdlib, timm,
# transformers, vllm and SciPy has about 60,000): past this many, a file is reported, not parsed.
MAX_WORDS = 300_000
# a byte of a name or number (any byte of a non-ASCII character too) -> 1, any other -> 0
_WORD_BYTES = bytes(1 if (chr(b).isalnum() and b < 128) or b == 95 or b >= 128 else 0 for b in range(256))
_ONLY_AST = 0x400  # ast.PyCF_ONLY_AST, without importing ast
_BRACKETS = re.compile(r"[()\[\]{}]")


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def read(path: str) -> Union[Source, Finding]:
    data = read_bytes(path)
    if isinstance(data, Finding):
        return data
    return decode(path, data)


def read_bytes(path: str) -> Union[bytes, Finding]:
    try:
        # opening a FIFO or a device would block or never end: only regular files are read
        if not stat.S_ISREG(os.stat(path).st_mode) and not os.path.isdir(path):
            return problem(path, "skipped: not a regular file (a FIFO, socket or device)")
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_FILE_BYTES:
                return problem(
                    path,
                    f"skipped: the file is {_megabytes(size)}, more than the {_megabytes(MAX_FILE_BYTES)} "
                    "cudalint parses (exclude it, or split it)",
                )
            data = read_upto(fh, size, MAX_FILE_BYTES)
            if len(data) > MAX_FILE_BYTES:  # a pipe or a file that grew while we read it
                return problem(path, f"skipped: more than the {_megabytes(MAX_FILE_BYTES)} cudalint parses")
            return data
    except IsADirectoryError:
        return problem(path, "cannot read: is a directory")
    except PermissionError:
        return problem(path, "cannot read: permission denied")
    except FileNotFoundError:
        return problem(path, "cannot read: no such file (a broken symlink?)")
    except OSError as exc:
        return problem(path, f"cannot read: {exc.strerror or exc}")


def words(data: bytes) -> int:
    """How many names and numbers `data` holds (strings and comments counted too: an upper bound):
    the places where a word starts, counted at C speed (a 10 MB file in a few milliseconds)."""
    marks = data.translate(_WORD_BYTES)
    return marks.count(b"\x00\x01") + (marks[:1] == b"\x01")


def too_big(path: str, data: bytes) -> Optional[Finding]:
    """A CUD900 for source whose syntax tree would take too much memory (see MAX_WORDS)."""
    if len(data) <= 2 * MAX_WORDS:  # (a word and a separator: no shorter text can hold more)
        return None
    n = words(data)
    if n <= MAX_WORDS:
        return None
    return problem(
        path,
        f"skipped: {n:,} names and numbers, more than the {MAX_WORDS:,} cudalint analyzes in one file "
        f"(its syntax tree would take about {n * 1024 / 2**30:.1f} GB); exclude it, or split it",
    )


def _detect_encoding(data: bytes) -> str:
    try:
        return tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:
        if b"\x00" not in data:
            raise
        # Python 3.14's detect_encoding refuses a NUL in the two lines it reads ("source code cannot
        # contain null bytes"), where older ones named the encoding: the bytes without their NULs
        # (same offsets) give every version's verdict, and the NUL is reported below, with its line
        # (a UTF-16 file: "cannot decode as utf-8", as before)
        return tokenize.detect_encoding(io.BytesIO(data.replace(b"\x00", b" ")).readline)[0]


def decode(path: str, data: bytes) -> Union[Source, Finding]:
    try:
        encoding = _detect_encoding(data)
    except SyntaxError as exc:
        reason = exc.msg if hasattr(exc, "msg") else str(exc)
        if reason == "invalid or missing encoding declaration":  # bytes that are not UTF-8, no cookie
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                line = data[: bad.start].count(b"\n") + 1
                return problem(path, f"cannot decode as utf-8 (no coding declaration says otherwise): {bad.reason}", line=line)
        return problem(path, f"cannot decode: {reason}")
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        line = data[: getattr(exc, "start", 0)].count(b"\n") + 1
        return problem(path, f"cannot decode as {encoding}: {getattr(exc, 'reason', exc)}", line=line)
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        return problem(path, "cannot parse: the file contains a NUL byte", line=line)
    return Source(path=path, text=text)


def _too_deep(src: Source) -> Optional[Finding]:
    """More than 200 nested brackets is a syntax error for CPython: report CPython's message."""
    if src.text.count("(") + src.text.count("[") + src.text.count("{") <= MAX_BRACKET_DEPTH:
        return None
    depth = deepest = 0
    for m in _BRACKETS.finditer(src.text):  # strings and comments included: an upper bound
        depth = depth + 1 if m.group() in "([{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    if deepest <= MAX_BRACKET_DEPTH:
        return None
    try:
        _compile_quietly(src)
    except SyntaxError as exc:
        return problem(src.path, f"syntax error: {exc.msg}", line=exc.lineno or 1, column=exc.offset or 1)
    except (RecursionError, MemoryError, ValueError):
        return problem(src.path, "cannot parse: nested too deeply")
    return None


def _compile_quietly(src: Source) -> None:
    """Compile to an AST only for CPython's syntax error; its SyntaxWarnings are not the user's concern here."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(src.text, src.path, "exec", dont_inherit=True, flags=_ONLY_AST)


def _python_says(src: Source) -> Optional[Finding]:
    """CPython's verdict on a file libcst rejected (only then: it costs a second parse)."""
    try:
        _compile_quietly(src)
    except SyntaxError as exc:
        hint = " (Python 2 syntax?)" if _looks_like_python2(exc) else ""
        return problem(src.path, f"syntax error: {exc.msg}{hint}", line=exc.lineno or 1, column=exc.offset or 1)
    except (RecursionError, MemoryError, ValueError):
        return None
    return None


def _looks_like_python2(exc: SyntaxError) -> bool:
    text = (exc.text or "").strip()
    return "Missing parentheses in call to" in exc.msg or text.startswith(("exec ", "print ")) or "`" in text or (
        text.startswith("except ") and "," in text
    ) or "ur'" in text or 'ur"' in text


# Python 3.14 reads `except E, e:` as PEP 758's `except (E, e):`, where older Pythons refuse it and
# cudalint.inputs.newsyntax keeps it Python 2 (two names, the last lowercase: Python 2 bound the
# exception to it; exception classes are CapWords). On 3.14 such a clause gets the verdict the older
# ones give, so that a file's findings do not depend on the Python that runs cudalint. The pattern
# (a clause whose last name ends it) picks the few files whose tree is looked at.
PEP758 = sys.version_info >= (3, 14)
_PYTHON2_EXCEPT = re.compile(r"except[ \t]+[^:\n#]*,[ \t]*[^\W\d]\w*[ \t]*:")


def _may_have_python2_except(text: str) -> bool:
    # (`str.find` and a match where a line starts with `except`: lightning and ultralytics, 6 MB, in
    # 7 ms, where one multi-line search took 55, a third of a percent of their summarizing)
    at = text.find("except")
    while at != -1:
        if not text[text.rfind("\n", 0, at) + 1 : at].strip(" \t") and _PYTHON2_EXCEPT.match(text, at):
            return True
        at = text.find("except", at + 6)
    return False


def python2_except(src: Source, tree: "ast.Module") -> Optional[Finding]:
    """The CUD900 of a Python 2 `except E, e:` in a tree Python 3.14 made (None: there is none)."""
    if not _may_have_python2_except(src.text):
        return None
    import ast

    for node in ast.walk(tree):
        if type(node) is not ast.Try:  # (`except*` is never Python 2: ast.TryStar)
            continue
        for handler in node.handlers:
            kind = handler.type
            if type(kind) is not ast.Tuple or len(kind.elts) != 2 or handler.name is not None:
                continue
            first, last = kind.elts
            # unparenthesized: the tuple starts where its first element does
            if type(last) is ast.Name and last.id[:1].islower() and (kind.lineno, kind.col_offset) == (first.lineno, first.col_offset):
                line = re.split(r"\r\n|\r|\n", src.text)[first.lineno - 1]
                column = len(line.encode("utf-8")[: first.col_offset].decode("utf-8", "replace")) + 1
                # (the message of CPython 3.10 to 3.13 for this clause)
                return problem(src.path, "syntax error: multiple exception types must be parenthesized (Python 2 syntax?)", line=first.lineno, column=column)
    return None


def parse(src: Source) -> Union["ast.Module", Finding]:
    """CPython's own syntax tree: what the analyzer reads (a fifth of libcst's parse time)."""
    big = too_big(src.path, src.text.encode("utf-8", "surrogatepass")) if len(src.text) > 2 * MAX_WORDS else None
    if big is not None:
        return big
    import warnings

    # (CPython's tokenizer refuses more than 200 nested brackets itself: `_too_deep` is asked only when
    # the parse fails, and gives the verdict it gives libcst's callers; scanning every file's
    # brackets first was 2 % of the summarizers' time)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like: not the user's concern here
            tree = compile(src.text, src.path, "exec", dont_inherit=True, flags=_ONLY_AST)
        return (python2_except(src, tree) or tree) if PEP758 else tree
    except SyntaxError as exc:
        deep = _too_deep(src)
        if deep is not None:
            return deep
        from cudalint.inputs.newsyntax import parse_newer  # code for a newer Python: only this path pays for it

        newer = parse_newer(src.text, src.path, exc)
        if newer is not None:
            return newer
        hint = " (Python 2 syntax?)" if _looks_like_python2(exc) else ""
        return problem(src.path, f"syntax error: {exc.msg}{hint}", line=exc.lineno or 1, column=exc.offset or 1)
    except (RecursionError, MemoryError):
        return problem(src.path, "cannot parse: nested too deeply")
    except ValueError as exc:
        return _too_deep(src) or problem(src.path, f"cannot parse: {exc}")


def parse_cst(src: Source) -> Union["cst.Module", Finding]:
    """libcst's concrete tree, for the fixer (it rewrites code and keeps every comment and space)."""
    import libcst as cst  # imported on the first parse: a run served from the cache never pays for it

    deep = _too_deep(src)
    if deep is not None:
        return deep
    try:
        return cst.parse_module(src.text)
    except cst.ParserSyntaxError as exc:
        python = _python_says(src)  # CPython's message and place are the ones users know
        if python is not None:
            return python
        message = str(exc.message).strip().splitlines()[0] if exc.message else "invalid syntax"
        return problem(src.path, f"syntax error: {message}", line=exc.raw_line, column=exc.raw_column + 1)
    except RecursionError:
        return problem(src.path, "cannot parse: nested too deeply")
    except Exception as exc:  # libcst's native parser raises a few others on odd input
        return problem(src.path, f"cannot parse: {type(exc).__name__}: {exc}")
