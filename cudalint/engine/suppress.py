"""Suppressions beyond a line's `# noqa`: the file-level directive and `--add-noqa`.

`# cudalint: noqa` on a line of its own silences every finding in the file; `# cudalint: noqa:
CUD001, CUD004` only those codes (prefixes work, as in `--ignore`). This is ruff's `# ruff: noqa`;
a bare `# noqa` on a line of its own stays a line suppression, as in ruff and unlike flake8's
`# flake8: noqa`, so a stray comment cannot silence a whole file.
"""
from __future__ import annotations

import io
import os
import re
import tokenize
from collections import defaultdict
from typing import Iterable, Mapping, Optional, Sequence

from cudalint.core.findings import Finding

FILE_NOQA_RE = re.compile(
    r"^[ \t]*#[ \t]*cudalint[ \t]*:[ \t]*noqa(?:[ \t]*:[ \t]*(?P<codes>[A-Za-z]+[0-9]*(?:[,\s]+[A-Za-z]+[0-9]*)*))?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def file_directive(text: str) -> Optional[tuple[str, ...]]:
    """None: no directive; (): every code; else the codes or prefixes the file silences."""
    if "cudalint" not in text:
        return None
    codes: list[str] = []
    found = False
    for m in FILE_NOQA_RE.finditer(text):
        found = True
        if m.group("codes") is None:
            return ()
        codes.extend(c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c)
    return tuple(codes) if found else None


def _text_of(path: str, texts: Mapping[str, str]) -> str:
    if path in texts:
        return texts[path]
    from cudalint.inputs.source import read_bytes  # (a FIFO or a device is never opened; size limit)

    data = read_bytes(path)
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else ""


def apply_file_directives(findings: Iterable[Finding], texts: Mapping[str, str], originals: Mapping[str, str] = {}) -> list[Finding]:
    """Drop the findings their file's `# cudalint: noqa` silences (`originals`: notebooks' cell text)."""
    findings = list(findings)
    directives: dict[str, Optional[tuple[str, ...]]] = {}
    out = []
    for f in findings:
        if f.code == "CUD900":  # the file could not be read or parsed: no directive in it counts
            out.append(f)
            continue
        if f.path not in directives:
            text = originals[f.path] if f.path in originals else _text_of(f.path, texts)
            directives[f.path] = file_directive(text)
        codes = directives[f.path]
        if codes is not None and (not codes or any(f.code.startswith(c) for c in codes)):
            continue
        out.append(f)
    return out


# ---------- --add-noqa -------------------------------------------------------------------------
_LINE_NOQA_RE = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def _unsafe_lines(text: str) -> set[int]:
    """Lines where a comment cannot go at the end: inside a multi-line string, or ending in `\\`."""
    bad: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                bad.update(range(tok.start[0], tok.end[0]))
            # f-strings spread over lines (3.12+ tokenizes their parts)
            if getattr(tokenize, "FSTRING_MIDDLE", None) == tok.type and tok.end[0] > tok.start[0]:
                bad.update(range(tok.start[0], tok.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, text.count("\n") + 2))
    for n, line in enumerate(text.split("\n"), 1):
        if line.rstrip("\r").endswith("\\"):
            bad.add(n)
    return bad


def add_noqa_text(text: str, codes_by_line: Mapping[int, Sequence[str]]) -> tuple[str, int, list[int]]:
    """The text with `# noqa: CODES` added (or merged into the line's noqa); (text, added, skipped lines)."""
    lines = text.split("\n")
    unsafe = _unsafe_lines(text)
    added = 0
    skipped: list[int] = []
    for line_no, codes in sorted(codes_by_line.items()):
        if not 1 <= line_no <= len(lines) or line_no in unsafe:
            skipped.append(line_no)
            continue
        line = lines[line_no - 1]
        end = "\r" if line.endswith("\r") else ""
        body = line[: len(line) - len(end)]
        m = _LINE_NOQA_RE.search(body)
        if m is not None and m.group("codes") is None:
            continue  # a bare `# noqa` silences everything already
        have = [c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c] if m else []
        new = [c for c in sorted(set(codes)) if c not in have]
        if not new:
            continue
        if m is not None:
            merged = ", ".join(have + new)
            body = body[: m.start()] + f"# noqa: {merged}" + body[m.end():]
        else:
            body = body.rstrip() + f"  # noqa: {', '.join(new)}"
        lines[line_no - 1] = body + end
        added += 1
    return "\n".join(lines), added, skipped


def add_noqa(findings: Iterable[Finding]) -> tuple[int, list[str]]:
    """Write `# noqa: CODE` on every reported line of a .py file; (lines changed, problems)."""
    from cudalint.inputs import source

    by_path: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for f in findings:
        if f.code == "CUD900":
            continue
        by_path[f.path][f.line].append(f.code)
    total = 0
    problems: list[str] = []
    for path, lines in sorted(by_path.items()):
        if not path.endswith((".py", ".pyi")):
            problems.append(f"{path}: --add-noqa edits .py files only; add `# noqa: CODE` in the notebook's cell")
            continue
        try:
            st = os.lstat(path)
        except OSError as exc:
            problems.append(f"{path}: cannot read: {exc.strerror or exc}")
            continue
        if os.path.islink(path) or st.st_nlink > 1:
            problems.append(f"{path}: not edited: a symbolic link or a file with several hard links")
            continue
        data = source.read_bytes(path)
        if isinstance(data, Finding):
            problems.append(f"{path}: {data.message}")
            continue
        decoded = source.decode(path, data)
        if isinstance(decoded, Finding):
            problems.append(f"{path}: {decoded.message}")
            continue
        new, added, skipped = add_noqa_text(decoded.text, lines)
        for line in skipped:
            problems.append(f"{path}:{line}: no `# noqa` added: the line ends inside a string or with a backslash")
        if added:
            problem = _write(path, new, data, st.st_mode)
            if problem:
                problems.append(problem)
                continue
            total += added
    return total, problems


def _write(path: str, text: str, original: bytes, mode: int) -> Optional[str]:
    """Replace the file atomically, in its own encoding (a BOM kept)."""
    import tempfile

    encoding, _ = tokenize.detect_encoding(io.BytesIO(original).readline)  # utf-8-sig keeps a BOM
    data = text.encode(encoding)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cudalint-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.chmod(tmp, mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:
        return f"{path}: cannot write: {exc.strerror or exc}"
    return None
