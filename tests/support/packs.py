"""The summary cache's packs (cudalint.core.cache_packs) as tests count, replace and damage them."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from cudalint.core import cache_packs
from cudalint.core.cache_packs import SUMMARIES


def pack_files(cache_dir: Path) -> list[Path]:
    folder = cache_dir / SUMMARIES
    return sorted(p for p in folder.glob("*.pack") if p.is_file()) if folder.is_dir() else []


def summary_records(cache_dir: Path) -> list[tuple[str, bytes]]:
    """(name, payload) of every signed summary record, in the packs' order."""
    return [(name, payload) for _pack, name, payload in cache_packs.records(cache_dir, SUMMARIES)]


def rewrite_summaries(cache_dir: Path, payload_for: Callable[[str, bytes], bytes], signed: bool = True) -> int:
    """Every summary record replaced by `payload_for(name, payload)`, in one new pack: signed with
    this machine's key, or (`signed=False`) planted with a signature that is not. Returns how many."""
    cache_packs.close_all()  # (this process may hold one of the packs open for appending)
    records = summary_records(cache_dir)
    for pack in pack_files(cache_dir):
        pack.unlink()
    if signed:
        for name, payload in records:
            cache_packs.append(cache_dir, SUMMARIES, name, payload_for(name, payload))
        cache_packs.close_all()
    else:
        blob = b"".join(cache_packs.encode(name, payload_for(name, payload), b"0" * 64) for name, payload in records)
        (cache_dir / SUMMARIES / ("f" * 32 + ".pack")).write_bytes(blob)
    return len(records)


def drop_summaries(cache_dir: Path, names: set) -> int:
    """The packs rewritten without the records of `names`. Returns how many went."""
    cache_packs.close_all()
    records = summary_records(cache_dir)
    for pack in pack_files(cache_dir):
        pack.unlink()
    for name, payload in records:
        if name not in names:
            cache_packs.append(cache_dir, SUMMARIES, name, payload)
    cache_packs.close_all()
    return sum(1 for name, _payload in records if name in names)


def damage_summaries(cache_dir: Path) -> int:
    """Flip the last byte of every record's payload, in place. Returns how many."""
    cache_packs.close_all()
    count = 0
    for pack in pack_files(cache_dir):
        data = bytearray(pack.read_bytes())
        for _name, at, size, _mac in list(cache_packs._walk(str(pack))):
            data[at + size - 1] ^= 0xFF
            count += 1
        pack.write_bytes(bytes(data))
    return count
