"""The cache's files, read as untrusted input and written only where they belong.

A cache folder may come from a tarball, a clone or an attacker. What it holds must never change what
cudalint reports, make it write outside the folder, or stop a run. So every entry:

- is signed: its first line is a keyed BLAKE2b (cudalint.digest), under a key that never leaves
  this machine, of the entry's name inside the folder and of its content (the summaries' records in
  their packs too: cudalint.core.cache_packs). An entry cudalint did not write here (planted,
  copied from elsewhere, renamed, damaged, truncated) fails the check and is a miss. The key is
  `CUDALINT_CACHE_KEY` when set (CI restoring a cache between machines sets the same secret on
  each), else 32 random bytes in `$XDG_CACHE_HOME/cudalint/key` (`~/.cache/cudalint/key`), made
  once, readable by its owner only. Without a key there is no cache: every entry is a miss.
- is named by cudalint alone: names come from hex digests and fixed folder names; a name read from
  the cache (an index entry's key) is used only if it is a hex digest (`is_key`).
- stays inside the folder: a folder that is a symbolic link is not followed; before a write, the
  target's folder must resolve inside the cache folder; files are created new (never opened for
  writing where they are) and renamed into place, so a link planted at an entry's name is replaced,
  not written through. Files cudalint did not create (`.gitignore`, `CACHEDIR.TAG`) are never
  overwritten.
- is bounded: an entry larger than MAX_ENTRY_BYTES is a miss, not a read.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import stat

from cudalint.core.sized_read import read_upto
from cudalint.digest import hasher, same, signature

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Callable, Optional
    from cudalint.fspath import PathLike as Folder  # (a string on the command line's path, a Path in the server's)

MAX_ENTRY_BYTES = 512 * 1024 * 1024
_HEADER = b"cudalint-cache-2 "
_HEX = re.compile(r"[0-9a-f]{16,64}\Z")
_KEY_ENV = "CUDALINT_CACHE_KEY"
# how an entry is opened to be read: never through a link, never blocking on a FIFO planted there
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def is_key(value: object) -> bool:
    """A content key or digest as cudalint makes them (lowercase hex): the only names read from the
    cache that may become part of a path."""
    return isinstance(value, str) and _HEX.match(value) is not None


_secret_memo: dict[str, Optional[bytes]] = {}


def secret() -> Optional[bytes]:
    """This machine's signing key (see the module doc); None when it can be neither read nor made."""
    env = os.environ.get(_KEY_ENV)
    if env:
        return hasher(env.encode("utf-8", "surrogateescape")).digest()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = os.path.join(base, "cudalint", "key")
    if path not in _secret_memo:
        _secret_memo[path] = _read_or_make_key(path)
    return _secret_memo[path]


def _read_or_make_key(path: str) -> Optional[bytes]:
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
                    return None  # not ours alone: anyone who can read it could sign entries
                data = os.read(fd, 64)
            finally:
                os.close(fd)
            return data if len(data) == 32 else None
        except FileNotFoundError:
            pass
        except OSError:
            return None
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            continue  # another run made it meanwhile: read theirs
        except OSError:
            return None
        try:
            os.write(fd, os.urandom(32))
        finally:
            os.close(fd)
    return None


def usable_root(directory: Folder) -> Optional[Folder]:
    """The cache folder to use, or None: a symbolic link (committed in a repository, say) is never
    followed out of place, nor is anything but a folder used."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return directory
    except OSError:
        return None
    return directory if stat.S_ISDIR(st.st_mode) else None


def _mac(key: bytes, name: str, payload: bytes) -> bytes:
    return signature(key, name.encode("utf-8", "surrogateescape") + b"\0" + payload)


def read(root: Folder, name: str, parse: Callable[[bytes], Any] = json.loads) -> Optional[Any]:
    """The value of entry `name` (a path relative to `root`, '/'-separated), or None: missing,
    unsigned or wrongly signed, too big, not a regular file, or `parse` refused it."""
    key = secret()
    if key is None:
        return None
    try:
        fd = os.open(os.path.join(root, name), _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = read_upto(fh, st.st_size, MAX_ENTRY_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    head, sep, payload = data.partition(b"\n")
    if not sep or not head.startswith(_HEADER) or len(data) > MAX_ENTRY_BYTES:
        return None
    if not same(head[len(_HEADER):], _mac(key, name, payload)):
        return None
    try:
        return parse(payload)
    except (ValueError, TypeError, KeyError, RecursionError, AttributeError):
        return None


def write(root: Folder, name: str, payload: bytes) -> None:
    """Sign `payload` and put it at `name`, atomically; never outside `root`, never a failure (a
    read-only or full disk only costs time)."""
    key = secret()
    if key is None:
        return
    root = os.fspath(root)
    target = os.path.join(root, name)
    folder = os.path.dirname(target)
    try:
        if not _ready(root, folder):
            return  # a folder inside the cache is a link that leads out of it
        fd, tmp = _new_file(folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_HEADER + _mac(key, name, payload) + b"\n")
                fh.write(payload)
            os.replace(tmp, target)  # readers see the old entry or the new one, never half of one
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except (OSError, ValueError):
        pass


def write_json(root: Folder, name: str, value: object) -> None:
    """`write` of `value` as compact JSON; a value JSON cannot hold (nested too deeply, a TOML date)
    is not written: the cache is an optimization, never a failure."""
    try:
        payload = json.dumps(value, separators=(",", ":")).encode("utf-8", "surrogateescape")  # one shot: json.dump never uses the C encoder
    except (RecursionError, ValueError, TypeError):
        return
    write(root, name, payload)


# folders of the cache this process made or found and checked to resolve inside it, with their
# identity then: a cold run writes thousands of entries into 256 folders, and the checks cost two
# `realpath`s each (a fifth of writing a small entry). A folder whose path now leads to another
# folder (a link planted since, in a long-lived process: the language server) is checked again.
_checked: dict[tuple[str, str], tuple[int, int]] = {}


def _ready(root: str, folder: str) -> bool:
    """Whether `folder` exists (made if need be) and resolves inside `root`."""
    known = _checked.get((root, folder))
    if known is not None:
        try:
            st = os.stat(folder)
        except OSError:
            st = None
        if st is not None and (st.st_dev, st.st_ino) == known:
            return True
        del _checked[(root, folder)]
    if not _prepare(root) or not _contained(root, folder):
        return False
    os.makedirs(folder, exist_ok=True)
    st = os.stat(folder)
    if not _contained(root, folder):
        return False
    _checked[(root, folder)] = (st.st_dev, st.st_ino)
    return True


_names = itertools.count()
_token = f"{os.getpid()}-{os.urandom(4).hex()}"


def _new_file(folder: str) -> tuple[int, str]:
    """A new file of this process in `folder` (created, never opened where it was: O_EXCL, and no
    link followed), as tempfile.mkstemp makes one, with a name made without a random draw each."""
    if _token.split("-", 1)[0] != str(os.getpid()):  # (a forked child: its own names)
        _renew_token()
    while True:
        tmp = os.path.join(folder, f".tmp-{_token}-{next(_names)}.json")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600), tmp
        except FileExistsError:
            continue


def _renew_token() -> None:
    global _token
    _token = f"{os.getpid()}-{os.urandom(4).hex()}"


def _contained(root: str, folder: str) -> bool:
    """Whether `folder`, or the nearest part of it that exists, resolves inside `root`."""
    real_root = os.path.realpath(root)
    here = folder
    while not os.path.lexists(here) and here != root and os.path.dirname(here) not in (here, ""):
        here = os.path.dirname(here)
    real = os.path.realpath(here)
    return real == real_root or os.path.commonpath([real, real_root]) == real_root


_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cudalint.\n"


_prepared: set = set()


def _prepare(root: str) -> bool:
    """Make the folder, with the files that keep it out of version control and backups (like ruff
    and pytest): each created only where no file of that name exists. False: not a usable folder."""
    if root in _prepared:
        return True
    if usable_root(root) is None:
        return False
    if not os.path.exists(root):
        os.makedirs(root, exist_ok=True)
        if usable_root(root) is None:
            return False
    for name, text in ((".gitignore", "# Automatically created by cudalint.\n*\n"), ("CACHEDIR.TAG", _TAG)):
        try:
            fd = os.open(os.path.join(root, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError:
            continue  # there already (ours or not: never overwritten), or not writable
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    _prepared.add(root)
    return True


_ENTRY_NAME = re.compile(r"[0-9a-f]{16,64}\.[a-z]+\Z")
_SHARD = re.compile(r"[0-9a-f]{2}\Z")
# `_new_file`'s names: a writer killed between creating one and renaming it into place left it
_TMP_NAME = re.compile(r"\.tmp-[0-9]+-[0-9a-f]{8}-[0-9]+\.json\Z")


def remove_form(root: Folder, folder: str) -> int:
    """Delete the entries of a form this cudalint no longer reads (`folder`: "v1" once summaries
    moved to "v2"), which would otherwise stay on disk for good, then the folders left empty.
    Returns how many entries went."""
    removed = remove_entries(root, folder, lambda name, st: True, sharded=True)
    try:
        os.rmdir(os.path.join(os.fspath(root), folder))  # (only when empty)
    except OSError:
        pass
    return removed


def remove_entries(root: Folder, folder: str, doomed: Callable[[str, os.stat_result], bool], sharded: bool, stale_before: float = 0.0) -> int:
    """Delete the entries in `root`/`folder` (in its `<2 hex>/` shards when `sharded`) for which
    `doomed(name, lstat)` holds: only regular files named as entries (`<hex digest>.<ext>`) whose first
    line is a cudalint signature; then the shards left empty, and the temporary files of writers that
    died (`_TMP_NAME`) last changed before `stale_before` (a time.time()). Nothing through a link,
    nothing else a user keeps there (the cache folder may be any folder: `CUDALINT_CACHE_DIR`).
    Returns how many entries went."""
    top = os.path.join(os.fspath(root), folder)
    try:
        if not stat.S_ISDIR(os.lstat(top).st_mode):
            return 0
        places = [top]
        if sharded:
            places = [os.path.join(top, sub) for sub in os.listdir(top) if _SHARD.match(sub)]
    except OSError:
        return 0
    removed = 0
    for where in places:
        try:
            if not stat.S_ISDIR(os.lstat(where).st_mode):
                continue
            names = os.listdir(where)
        except OSError:
            continue
        for name in names:
            path = os.path.join(where, name)
            try:
                if _ENTRY_NAME.match(name):
                    st = os.lstat(path)
                    if stat.S_ISREG(st.st_mode) and doomed(name, st) and _signed(path):
                        os.unlink(path)
                        removed += 1
                elif _TMP_NAME.match(name):
                    st = os.lstat(path)
                    if stat.S_ISREG(st.st_mode) and st.st_mtime < stale_before:
                        os.unlink(path)
            except OSError:
                continue
        if where != top:
            try:
                os.rmdir(where)  # (only when empty)
            except OSError:
                pass
    return removed


def _signed(path: str) -> bool:
    """Whether the regular file at `path` (never through a link) starts as cudalint's entries do."""
    return starts_with(path, _HEADER)


def starts_with(path: str, prefix: bytes) -> bool:
    """Whether `path` is a regular file (never reached through a link) whose first bytes are `prefix`."""
    fd = os.open(path, _READ_FLAGS)
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(prefix)) == prefix
    finally:
        os.close(fd)
