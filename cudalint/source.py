"""Read, decode and parse one file. Whatever goes wrong becomes a CUD900 finding, never a crash."""
from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass
from typing import Optional, Union

import libcst as cst

from cudalint.findings import Finding


@dataclass(frozen=True)
class Source:
    path: str
    text: str


def problem(path: str, reason: str, line: int = 1, column: int = 1) -> Finding:
    return Finding.at("CUD900", path, (line, column, line, column), reason)


def read(path: str) -> Union[Source, Finding]:
    data = read_bytes(path)
    if isinstance(data, Finding):
        return data
    return decode(path, data)


def read_bytes(path: str) -> Union[bytes, Finding]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except IsADirectoryError:
        return problem(path, "cannot read: is a directory")
    except PermissionError:
        return problem(path, "cannot read: permission denied")
    except FileNotFoundError:
        return problem(path, "cannot read: no such file (a broken symlink?)")
    except OSError as exc:
        return problem(path, f"cannot read: {exc.strerror or exc}")


def decode(path: str, data: bytes) -> Union[Source, Finding]:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return problem(path, f"cannot decode: {exc.msg if hasattr(exc, 'msg') else exc}")
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


def parse(src: Source) -> Union[cst.Module, Finding]:
    try:
        return cst.parse_module(src.text)
    except cst.ParserSyntaxError as exc:
        message = str(exc.message).strip().splitlines()[0] if exc.message else "invalid syntax"
        return problem(src.path, f"syntax error: {message}", line=exc.raw_line, column=exc.raw_column + 1)
    except RecursionError:
        return problem(src.path, "cannot parse: nested too deeply")
    except Exception as exc:  # libcst's native parser raises a few others on odd input
        return problem(src.path, f"cannot parse: {type(exc).__name__}: {exc}")
