"""The summaries' packs (cudalint.core.cache_packs): one file per writing process, records signed,
and whatever a pack holds (cut short, planted, hostile) a miss at worst, never a crash."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cudalint.core import cache_files, cache_packs

F = "v3"
A, B, C = "a" * 64, "b" * 64, "c" * 64


@pytest.fixture(autouse=True)
def _fresh():
    """Each test starts with no pack open and nothing remembered of earlier folders."""
    cache_packs.close_all()
    cache_packs._locators.clear()
    yield
    cache_packs.close_all()
    cache_packs._locators.clear()


def _packs(root: Path) -> list[Path]:
    return sorted((root / F).iterdir())


def _append_in_child(root: Path, name: str, payload: bytes) -> None:
    """`append` in a forked child, which exits at once."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            cache_packs.append(root, F, name, payload)
        finally:
            os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0


def _reader(root: Path, name: str):
    """A read by another process: it knows nothing of this one's packs yet."""
    cache_packs._locators.clear()
    return cache_packs.read(root, F, name)


def test_one_process_appends_to_one_pack_and_the_last_record_of_a_name_wins(tmp_path: Path) -> None:
    cache_packs.append(tmp_path, F, A, b"first")
    cache_packs.append(tmp_path, F, B, b"other")
    cache_packs.append(tmp_path, F, A, b"second")
    (pack,) = _packs(tmp_path)
    assert cache_packs._PACK_NAME.match(pack.name) and pack.read_bytes().startswith(cache_packs.MAGIC)
    assert oct(pack.stat().st_mode & 0o777) == "0o600"
    assert cache_packs.read(tmp_path, F, A) == b"second" and _reader(tmp_path, A) == b"second"
    assert _reader(tmp_path, B) == b"other" and _reader(tmp_path, C) is None
    assert [(n, p) for _pack, n, p in cache_packs.records(tmp_path, F)] == [(A, b"first"), (B, b"other"), (A, b"second")]
    fd = cache_packs._writers[(str(tmp_path), F)].fd
    cache_packs.close_all()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_a_name_that_is_no_digest_is_not_written(tmp_path: Path) -> None:
    for name in ("../x", "A" * 64, "ab", "a" * 65, "é" * 20):
        cache_packs.append(tmp_path, F, name, b"x")
    assert not (tmp_path / F).exists()


def test_a_forked_child_writes_a_pack_of_its_own_that_the_parent_then_reads(tmp_path: Path) -> None:
    cache_packs.append(tmp_path, F, A, b"parent")
    assert cache_packs.read(tmp_path, F, B) is None  # (the parent looked before the child wrote)
    _append_in_child(tmp_path, B, b"child")
    assert len(_packs(tmp_path)) == 2
    assert cache_packs.read(tmp_path, F, B) == b"child"  # (a miss looks at the packs made since)
    assert cache_packs.read(tmp_path, F, A) == b"parent"


def test_a_full_pack_makes_the_writer_start_another(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_packs, "PACK_LIMIT", 476)
    for name in (A, B, C):
        cache_packs.append(tmp_path, F, name, b"x" * 100)
    assert len(_packs(tmp_path)) == 2  # (two records of 238 bytes fit exactly, the third does not)
    assert [_reader(tmp_path, n) for n in (A, B, C)] == [b"x" * 100] * 3


def test_a_write_that_fails_leaves_the_records_before_it_and_starts_a_new_pack(tmp_path: Path, monkeypatch) -> None:
    cache_packs.append(tmp_path, F, A, b"kept")
    real = os.write
    failed = []

    def half_then_full(fd, data):
        if not failed:
            failed.append(1)
            real(fd, bytes(data[:10]))
            raise OSError(28, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", half_then_full)
    cache_packs.append(tmp_path, F, B, b"lost")
    cache_packs.append(tmp_path, F, C, b"after")
    monkeypatch.undo()
    assert len(_packs(tmp_path)) == 2
    assert [_reader(tmp_path, n) for n in (A, B, C)] == [b"kept", None, b"after"]


def test_a_pack_cut_short_keeps_its_whole_records(tmp_path: Path) -> None:
    """A writer killed in the middle of a record."""
    cache_packs.append(tmp_path, F, A, b"whole")
    cache_packs.append(tmp_path, F, B, b"cut short")
    cache_packs.close_all()
    (pack,) = _packs(tmp_path)
    pack.write_bytes(pack.read_bytes()[:-3])
    assert _reader(tmp_path, A) == b"whole" and _reader(tmp_path, B) is None


def test_records_not_signed_here_are_misses_and_cannot_hide_a_signed_one(tmp_path: Path) -> None:
    cache_packs.append(tmp_path, F, A, b"good")
    cache_packs.close_all()
    # a pack planted later (read last, tried first): the same name, a signature of another key
    planted = cache_packs.encode(A, b"evil", b"0" * 64) + cache_packs.encode(B, b"evil", b"0" * 64)
    (tmp_path / F / ("f" * 32 + ".pack")).write_bytes(planted)
    assert _reader(tmp_path, A) == b"good" and _reader(tmp_path, B) is None
    # a signed record copied into another folder of the cache: the signature covers the folder
    shutil.copytree(tmp_path / F, tmp_path / "v9")
    assert cache_packs.read(tmp_path, "v9", A) is None
    # a payload changed in place
    (pack,) = [p for p in _packs(tmp_path) if p.name != "f" * 32 + ".pack"]
    data = bytearray(pack.read_bytes())
    data[-1] ^= 1
    pack.write_bytes(bytes(data))
    assert _reader(tmp_path, A) is None


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"CUDP",
        b"XXXX" + cache_packs.encode(A, b"x", b"0" * 64)[4:],  # another magic
        cache_packs.encode(A, b"x", b"0" * 64)[:6] + (2**32 - 1).to_bytes(4, "big") + cache_packs.encode(A, b"x", b"0" * 64)[10:],  # past the end
        cache_packs.encode(A, b"x", b"0" * 64)[:4] + (65535).to_bytes(2, "big") + cache_packs.encode(A, b"x", b"0" * 64)[6:],  # a name past the end
        cache_packs.encode("../../" + "a" * 58, b"x", b"0" * 64),  # a name that is no digest
        cache_packs.encode(A, b"x", b"0" * 64)[:74] + b"\xff" * 64 + b"x",  # nor text
        os.urandom(5000),
    ],
)
def test_a_hostile_pack_is_read_without_error_and_answers_nothing(tmp_path: Path, blob: bytes) -> None:
    (tmp_path / F).mkdir()
    (tmp_path / F / ("e" * 32 + ".pack")).write_bytes(blob)
    cache_packs.append(tmp_path, F, B, b"mine")
    assert _reader(tmp_path, A) is None and _reader(tmp_path, B) == b"mine"
    assert [n for _p, n, _d in cache_packs.records(tmp_path, F)] == [B]


def test_what_is_named_like_a_pack_but_is_no_file_is_never_read_or_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    cache_packs.append(victim, F, A, b"elsewhere")
    cache_packs.close_all()
    (outside,) = _packs(victim)
    (tmp_path / "cache" / F).mkdir(parents=True)
    (tmp_path / "cache" / F / outside.name).symlink_to(outside)  # a pack that is a link
    os.mkfifo(tmp_path / "cache" / F / ("1" * 32 + ".pack"))  # (opened without blocking, then refused)
    (tmp_path / "cache" / F / ("2" * 32 + ".pack")).mkdir()
    assert _reader(tmp_path / "cache", A) is None
    assert list(cache_packs.records(tmp_path / "cache", F)) == []


def test_a_folder_of_packs_that_is_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    cache_packs.append(victim, F, A, b"elsewhere")
    cache_packs.close_all()
    before = sorted(p.name for p in (victim / F).iterdir())
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / F).symlink_to(victim / F)
    assert _reader(tmp_path / "cache", A) is None
    cache_packs.append(tmp_path / "cache", F, B, b"mine")
    assert sorted(p.name for p in (victim / F).iterdir()) == before


def test_without_a_key_nothing_is_written_or_read(tmp_path: Path, monkeypatch) -> None:
    cache_packs.append(tmp_path, F, A, b"x")
    monkeypatch.setattr(cache_files, "secret", lambda: None)
    cache_packs.append(tmp_path, F, B, b"y")
    assert _reader(tmp_path, A) is None and len(_packs(tmp_path)) == 1
    monkeypatch.undo()
    assert _reader(tmp_path, A) == b"x" and _reader(tmp_path, B) is None


def test_a_pack_that_cannot_be_created_costs_the_record_only(tmp_path: Path, monkeypatch) -> None:
    real = os.open

    def refuse(path, flags, *args):
        if str(path).endswith(".pack") and flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied")
        return real(path, flags, *args)

    monkeypatch.setattr(os, "open", refuse)
    cache_packs.append(tmp_path, F, A, b"x")
    monkeypatch.undo()
    cache_packs.append(tmp_path, F, B, b"y")
    assert _reader(tmp_path, A) is None and _reader(tmp_path, B) == b"y"


def test_a_descriptor_closed_and_reused_under_the_writer_is_left_alone(tmp_path: Path) -> None:
    """Something else in the process closed the pack's descriptor and the number went to another
    file: the next record goes to a new pack, never into that file, which stays open."""
    cache_packs.append(tmp_path, F, A, b"one")
    writer = cache_packs._writers[(str(tmp_path), F)]
    os.close(writer.fd)
    other = os.open(tmp_path / "other.txt", os.O_WRONLY | os.O_CREAT, 0o600)
    assert other == writer.fd
    cache_packs.append(tmp_path, F, B, b"two")
    cache_packs.close_all()
    os.write(other, b"still open")
    os.close(other)
    assert (tmp_path / "other.txt").read_bytes() == b"still open"
    assert len(_packs(tmp_path)) == 2 and [_reader(tmp_path, n) for n in (A, B)] == [b"one", b"two"]


def test_a_signed_record_whose_header_was_changed_is_not_read(tmp_path: Path) -> None:
    cache_packs.append(tmp_path, F, A, b"x")
    cache_packs.close_all()
    (pack,) = _packs(tmp_path)
    pack.write_bytes(b"CUDQ" + pack.read_bytes()[4:])
    assert _reader(tmp_path, A) is None


def test_compacting_leaves_packs_written_since_the_limit_and_does_nothing_without_a_key(tmp_path: Path, monkeypatch) -> None:
    cache_packs.append(tmp_path, F, A, b"x")
    cache_packs.close_all()
    (pack,) = _packs(tmp_path)
    written = pack.stat().st_mtime
    assert cache_packs.compact(tmp_path, F, lambda name: False, written) == 0 and pack.exists()
    monkeypatch.setattr(cache_files, "secret", lambda: None)
    assert cache_packs.compact(tmp_path, F, lambda name: False, written + 1) == 0 and pack.exists()
    monkeypatch.undo()
    assert cache_packs.compact(tmp_path, F, lambda name: False, written + 1) == 1 and not pack.exists()


def test_small_idle_packs_are_merged_and_a_lone_one_is_left_as_it_is(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(cache_packs, "MERGE_BELOW", 1000)
    made = []
    for name, payload in ((A, b"a" * 10), (B, b"b" * 10), (C, b"c" * 2000)):
        cache_packs.append(tmp_path, F, name, payload)
        made.append(tmp_path / F / cache_packs._writers[(str(tmp_path), F)].name)
        cache_packs.close_all()
    later = max(p.stat().st_mtime for p in made) + 1
    assert cache_packs.compact(tmp_path, F, lambda name: True, later) == 0
    assert [p.exists() for p in made] == [False, False, True] and len(_packs(tmp_path)) == 2
    assert [_reader(tmp_path, n) for n in (A, B, C)] == [b"a" * 10, b"b" * 10, b"c" * 2000]
    cache_packs.close_all()
    merged = [p for p in _packs(tmp_path) if p != made[2]]
    assert cache_packs.compact(tmp_path, F, lambda name: True, later + 10) == 0 and _packs(tmp_path) == sorted(merged + [made[2]])


def test_threads_appending_at_once_leave_every_record_readable(tmp_path: Path) -> None:
    """A library user's threads (the language server analyzes on one): each record whole, and where
    this process's locator says it is."""
    import threading

    names = [f"{i:064x}" for i in range(400)]
    cache_packs.read(tmp_path, F, names[0])  # (a locator that each append updates)

    def write(part: list) -> None:
        for name in part:
            cache_packs.append(tmp_path, F, name, name.encode() * 3)

    threads = [threading.Thread(target=write, args=(names[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(_packs(tmp_path)) == 1
    assert all(cache_packs.read(tmp_path, F, n) == n.encode() * 3 for n in names)
    assert all(_reader(tmp_path, n) == n.encode() * 3 for n in names[::37])


def test_a_child_forked_while_another_thread_appends_can_append(tmp_path: Path) -> None:
    cache_packs._lock.acquire()  # (as if another thread were in the middle of a record)
    try:
        _append_in_child(tmp_path, A, b"child")
    finally:
        cache_packs._lock.release()
    assert _reader(tmp_path, A) == b"child"
