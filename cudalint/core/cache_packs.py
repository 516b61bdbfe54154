"""Many cache entries in one file: the summaries, as signed records appended to packs.

A cold run used to write one file per summary, and on this project's machines creating a file
costs about a millisecond (ext4 in a VM: `O_CREAT` 1.1 ms, a shard's `mkdir` 0.5 ms), more than
encoding the summary: writing lightning's 266 summaries took 0.43-0.57 s of a 3.2-3.5 s serial cold
run, 0.35-0.42 s in each flake8 worker of cudalint's. Git's packfiles and mypy's SQLite cache answer
the same cost the same way. Each process now appends its summaries to one pack of its own.

A pack is `<root>/<folder>/<32 hex digits>.pack`, created new (`O_EXCL`, no link followed) by one
process, which alone appends to it (a forked child makes its own). A record:

    b"CUDP" | name length (2 bytes) | payload length (4 bytes) | signature (64 hex digits) | name | payload

The signature is cudalint.core.cache_files's, of `<folder>/<name>` and the payload, under the
machine's key: a record planted, damaged or copied into another folder is a miss, as a file entry
was. A reader walks a pack's headers once (`_Locator`) and reads a payload when asked; a header
that does not parse (a writer killed mid-record, a damaged file) ends the walk of that pack. A name
found in several places is tried in each until one is signed, so a planted record cannot hide a
good one. Readers see a pack another process is still writing as far as its last whole record.
"""
from __future__ import annotations

import os
import re
import stat
import struct
import threading

from cudalint.core import cache_files

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: cudalint.entry)
if TYPE_CHECKING:
    from typing import Callable, Iterator, Optional

    from cudalint.fspath import PathLike as Folder

# the folder of the summary cache's packs (cudalint.engine.cache); `v2/` held one file per summary
SUMMARIES = "v3"
MAGIC = b"CUDP"
_HEAD = struct.Struct(">4sHI64s")
_PACK_NAME = re.compile(r"[0-9a-f]{32}\.pack\Z")
_RECORD_NAME = re.compile(rb"[0-9a-f]{16,64}\Z")
# a writer starts a new pack past this size: the sweep rewrites packs whole (`compact`)
PACK_LIMIT = 64 * 1024 * 1024
# idle packs smaller than this are merged by the sweep (`compact`), when there are two or more
MERGE_BELOW = 1024 * 1024


class _Writer:
    __slots__ = ("pid", "fd", "name", "size", "identity")

    def __init__(self, pid: int, fd: int, name: str) -> None:
        self.pid, self.fd, self.name, self.size = pid, fd, name, 0
        st = os.fstat(fd)
        self.identity = (st.st_dev, st.st_ino)

    def links(self) -> int:
        """How many names the pack has (0: a sweep removed it); -1 when the descriptor is no longer
        the pack's (closed under us, maybe reused for another file: not ours to write or close)."""
        try:
            st = os.fstat(self.fd)
        except OSError:
            return -1
        return st.st_nlink if (st.st_dev, st.st_ino) == self.identity else -1

    def stale(self) -> bool:
        """Whether the pack is no longer this process's to append to (a forked child has its parent's)."""
        return self.pid != os.getpid() or self.links() <= 0


_writers: dict = {}  # (root, folder) -> _Writer of this process
# (one record at a time per process: the offsets the locator keeps are the writer's count of bytes)
_lock = threading.Lock()


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # (a child forked while another thread held it would wait for good)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def append(root: Folder, folder: str, name: str, payload: bytes) -> None:
    """Sign `payload` as `name`'s and append it to this process's pack in `root`/`folder`; never a
    failure (a read-only or full disk costs time only)."""
    key = cache_files.secret()
    raw = name.encode("ascii", "replace")
    if key is None or not _RECORD_NAME.match(raw) or len(payload) > cache_files.MAX_ENTRY_BYTES:
        return
    root = os.fspath(root)
    top = os.path.join(root, folder)
    mac = _signature(key, folder, name, payload)
    record = encode(name, payload, mac)
    with _lock:
        writer = _writer(root, folder, top, len(record))
        if writer is None:
            return
        at = writer.size
        try:
            _write_all(writer.fd, record)
        except OSError:
            # (a record cut short would hide every record after it: this pack gets no more)
            _drop(root, folder)
            return
        writer.size += len(record)
        locator = _locators.get((root, folder))
        if locator is not None:
            locator.add(name, writer.name, at + _HEAD.size + len(raw), len(payload), mac)


def encode(name: str, payload: bytes, mac: bytes) -> bytes:
    """One record (`name` a hex digest, `mac` its 64 hex digits of signature)."""
    raw = name.encode("ascii")
    return _HEAD.pack(MAGIC, len(raw), len(payload), mac) + raw + payload


def _writer(root: str, folder: str, top: str, size: int) -> Optional[_Writer]:
    writer = _writers.get((root, folder))
    if writer is not None and (writer.size + size > PACK_LIMIT or writer.stale()):
        _drop(root, folder)
        writer = None
    if writer is None:
        try:
            if not cache_files._ready(root, top):
                return None  # a folder of the cache that leads out of it
            fd, name = _new_pack(top)
            writer = _Writer(os.getpid(), fd, name)
        except (OSError, ValueError):
            return None
        _writers[(root, folder)] = writer
    return writer


def _new_pack(top: str) -> tuple[int, str]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
    while True:
        name = os.urandom(16).hex() + ".pack"
        try:
            return os.open(os.path.join(top, name), flags, 0o600), name
        except FileExistsError:
            continue


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _drop(root: str, folder: str) -> None:
    writer = _writers.pop((root, folder), None)
    if writer is not None and (writer.pid != os.getpid() or writer.links() >= 0):
        try:
            os.close(writer.fd)
        except OSError:
            pass


def close_all() -> None:
    """Close this process's packs (the next record starts a new one); for tests and long-lived
    processes that hand their packs on."""
    with _lock:
        for root, folder in list(_writers):
            _drop(root, folder)


# ---------- reading -----------------------------------------------------------------------------


class _Locator:
    """Where each record of a folder's packs is: name -> [(pack, payload offset, payload length,
    signature)]."""

    def __init__(self, top: str) -> None:
        self.top = top
        self.places: dict = {}
        self.walked: set = set()
        self.folder_stamp: object = None

    def add(self, name: str, pack: str, at: int, size: int, mac: bytes) -> None:
        self.places.setdefault(name, []).append((pack, at, size, mac))

    def refresh(self) -> bool:
        """Walk the packs made since the last look (the folder's mtime moved); whether any was."""
        try:
            st = os.lstat(self.top)
            if not stat.S_ISDIR(st.st_mode):
                return False
            stamp = (st.st_mtime_ns, st.st_ino)
            if stamp == self.folder_stamp:
                return False
            self.folder_stamp = stamp
            names = os.listdir(self.top)
        except OSError:
            return False
        found = False
        for pack in names:
            if pack in self.walked or not _PACK_NAME.match(pack):
                continue
            self.walked.add(pack)
            for name, at, size, mac in _walk(os.path.join(self.top, pack)):
                self.add(name, pack, at, size, mac)
                found = True
        return found


_locators: dict = {}  # (root, folder) -> _Locator


def read(root: Folder, folder: str, name: str) -> Optional[bytes]:
    """The payload last signed as `name`'s in `root`/`folder`'s packs, or None: none, or none signed."""
    key = cache_files.secret()
    if key is None:
        return None
    root = os.fspath(root)
    locator = _locators.get((root, folder))
    if locator is None:
        locator = _locators[(root, folder)] = _Locator(os.path.join(root, folder))
        locator.refresh()
    for _ in range(2):  # (the second time: after a look at the packs made since)
        for pack, at, size, mac in reversed(locator.places.get(name, ())):
            payload = _read_at(os.path.join(locator.top, pack), at, size)
            if payload is not None and _signed(key, folder, name, payload, mac):
                return payload
        if not locator.refresh():
            return None
    return None


def _signature(key: bytes, folder: str, name: str, payload: bytes) -> bytes:
    return cache_files._mac(key, f"{folder}/{name}", payload)


def _signed(key: bytes, folder: str, name: str, payload: bytes, mac: bytes) -> bool:
    return cache_files.same(mac, _signature(key, folder, name, payload))


def _read_at(path: str, at: int, size: int) -> Optional[bytes]:
    try:
        fd = os.open(path, cache_files._READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return _read_from(fd, at, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_from(fd: int, at: int, size: int) -> bytes:
    """Up to `size` bytes at offset `at` (`os.pread` where there is one: Windows has none)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, at)
    os.lseek(fd, at, os.SEEK_SET)
    return os.read(fd, size)


def _walk(path: str) -> Iterator[tuple[str, int, int, bytes]]:
    """(name, payload offset, payload length, signature) of each whole record of the pack at `path`, up to the
    first header that does not parse."""
    try:
        fd = os.open(path, cache_files._READ_FLAGS)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return
        end, at = st.st_size, 0
        while at + _HEAD.size <= end:
            head = _read_from(fd, at, _HEAD.size + 64)
            if len(head) < _HEAD.size:
                return
            magic, name_size, size, mac = _HEAD.unpack_from(head)
            raw = head[_HEAD.size:_HEAD.size + name_size]
            start = at + _HEAD.size + name_size
            if magic != MAGIC or len(raw) != name_size or not _RECORD_NAME.match(raw) or start + size > end:
                return
            yield raw.decode(), start, size, mac
            at = start + size
    except OSError:
        return
    finally:
        os.close(fd)


def _checked(path: str, key: bytes, folder: str) -> Iterator[tuple[str, Optional[bytes]]]:
    """(name, payload) of each whole record of the pack at `path`; the payload None when the record
    is not signed as it should be."""
    for name, at, size, mac in list(_walk(path)):
        payload = _read_at(path, at, size)
        yield name, payload if payload is not None and _signed(key, folder, name, payload, mac) else None


def records(root: Folder, folder: str) -> Iterator[tuple[str, str, bytes]]:
    """(pack, name, payload) of every record signed as it should be in `root`/`folder`."""
    key = cache_files.secret()
    top = os.path.join(os.fspath(root), folder)
    try:
        packs = sorted(p for p in os.listdir(top) if _PACK_NAME.match(p))
    except OSError:
        return
    if key is None:
        return
    for pack in packs:
        for name, payload in _checked(os.path.join(top, pack), key, folder):
            if payload is not None:
                yield pack, name, payload


# ---------- keeping the folder the size of what it serves ---------------------------------------


def compact(root: Folder, folder: str, kept: Callable[[str], bool], idle_before: float) -> int:
    """Rewrite the packs in `root`/`folder` that no one has written to since `idle_before` (a
    time.time()) and that hold records `kept` refuses (or unsigned ones): the records it keeps go to
    a new pack of this process, the old pack goes. Small idle packs (each run that summarized a
    file or two left one) are merged the same way, so that readers open a few files, not one per
    run. Only files that start as packs do, never through a link. Returns how many records went."""
    root = os.fspath(root)
    top = os.path.join(root, folder)
    key = cache_files.secret()
    try:
        if key is None or not stat.S_ISDIR(os.lstat(top).st_mode):
            return 0
        names = [p for p in os.listdir(top) if _PACK_NAME.match(p)]
    except OSError:
        return 0
    mine = _writers.get((root, folder))
    idle: list = []
    for pack in names:
        path = os.path.join(top, pack)
        if mine is not None and mine.name == pack and mine.pid == os.getpid():
            continue
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_mtime < idle_before and (not st.st_size or cache_files.starts_with(path, MAGIC)):
                idle.append((path, st.st_size))
        except OSError:
            continue
    merge = sum(1 for _path, size in idle if size < MERGE_BELOW) >= 2
    removed = 0
    for path, size in idle:
        keep, gone = [], 0
        for name, payload in _checked(path, key, folder):
            if payload is not None and kept(name):
                keep.append((name, payload))
            else:
                gone += 1
        if not gone and size and not (merge and size < MERGE_BELOW):
            continue
        for name, payload in keep:
            append(root, folder, name, payload)
        try:
            os.unlink(path)
        except OSError:
            continue
        removed += gone
    _locators.pop((root, folder), None)
    return removed

