"""The files `--fix` reads and writes: refused when outside the project or not what was analysed;
written atomically.
"""
from __future__ import annotations

import io
import os
import signal
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from typing import Optional, Sequence, Union

from cudalint.inputs import source
from cudalint.core.findings import Finding


# ---------- reading and writing files --------------------------------------------------------
@dataclass(frozen=True)
class Loaded:
    path: str
    data: bytes
    text: str
    encoding: str


def load(path: str) -> Union[Loaded, str]:
    """The file's bytes, text and encoding (so it is written back the same way), or why not."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return f"{path}: cannot read: {exc.strerror or exc}"
    decoded = source.decode(path, data)
    if isinstance(decoded, Finding):
        return f"{path}: {decoded.message}"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return f"{path}: cannot decode: {exc}"
    if data.startswith(b"\xef\xbb\xbf"):
        encoding = "utf-8-sig"
    return Loaded(path, data, decoded.text, encoding)


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == root or os.path.commonpath([real, root]) == root for root in roots)


def refusal(path: str, roots: Sequence[str], st: os.stat_result) -> Optional[str]:
    """Why `--fix` must not rewrite this file, with a `help:` line; None when it may. `roots` are the
    real paths of what the user named: a fix never leaves them through a symbolic link, and never
    splits a hard-linked file (a new file under one name, the old code under the others)."""
    real = os.path.realpath(path)
    if not _inside(real, roots):
        return (
            f"{path}: not fixed: it is a symbolic link to {real}, outside the paths being fixed\n"
            f"help: if that file is yours to change, run `cudalint --fix {real}`"
        )
    if st.st_nlink > 1:
        return (
            f"{path}: not fixed: the file has {st.st_nlink} hard links, and a fix writes a new file: "
            "the other names would keep the old code\n"
            "help: apply the fix by hand (`cudalint --diff` shows it), or give this name its own copy and run --fix again"
        )
    return None


def write_atomic(loaded: Loaded, text: str, roots: Sequence[str] = ()) -> Optional[str]:
    """Replace the file with `text`, all or nothing. Returns a problem, or None when written.
    `roots`: the real paths of what the user named (cudalint.fixes.files.refusal); () when not checked."""
    real = os.path.realpath(loaded.path)
    try:
        st = os.stat(real)
    except OSError as exc:
        return f"{loaded.path}: not fixed: {exc.strerror or exc}"
    if roots:
        refused = refusal(loaded.path, roots, st)
        if refused:
            return refused
    # root may write anything: honour the file's mode bits anyway, a read-only file stays as it is
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(real, os.W_OK):
        return f"{loaded.path}: not fixed: the file is read-only"
    try:
        data = text.encode(loaded.encoding)
    except UnicodeEncodeError as exc:
        return f"{loaded.path}: not fixed: the fix cannot be encoded as {loaded.encoding}: {exc.reason}"
    directory = os.path.dirname(real) or "."
    tmp = None
    # SIGINT and SIGTERM wait while the temporary file exists: an interrupted --fix leaves the old
    # file or the new one, and nothing else (they are delivered once it is renamed or removed)
    blocked = {signal.SIGINT, signal.SIGTERM}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked) if hasattr(signal, "pthread_sigmask") else None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(real)}.", suffix=".cudalint-tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if hasattr(os, "chown") and os.geteuid() == 0:
            os.chown(tmp, st.st_uid, st.st_gid)
        with open(real, "rb") as fh:
            if fh.read() != loaded.data:
                return f"{loaded.path}: not fixed: the file changed while cudalint was running"
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        return f"{loaded.path}: not fixed: cannot write: {exc.strerror or exc}"
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        if old_mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    return None
