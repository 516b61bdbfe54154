"""The catalogue's files and their bytes: what a catalogue is made from, without making it.

A run that the cache answers whole needs to know only which catalogue the cached findings were made
with, not the catalogue itself: the files' bytes name it (`catalogue_digest`), since cudalint's own
code, which turns them into a catalogue, is named apart (cudalint.fingerprint). Loading the
catalogue (cudalint.core.catalogue) cost a warm run of lightning a tenth of its time.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from cudalint.resources import catalogue_dir
from cudalint.digest import hasher


class CatalogueError(ValueError):
    """A catalogue file that cannot be used; the message names the file and the entry."""


def catalogue_files(extra: Iterable[str | Path] = ()) -> list[Path]:
    """The bundled files (sorted), then the user's (`extend-catalogue`), in their order."""
    files = sorted(catalogue_dir().glob("*.toml"))
    files.extend(Path(p) for p in extra)
    return files


def read_sources(extra: Iterable[str | Path] = ()) -> list[tuple[Path, bytes]]:
    """Each catalogue file and its bytes; CatalogueError names a file that cannot be read."""
    out = []
    for path in catalogue_files(extra):
        try:
            out.append((path, path.read_bytes()))
        except OSError as exc:
            raise CatalogueError(f"{path}: cannot read catalogue: {exc.strerror or exc}") from None
    return out


def digest_of(sources: Iterable[tuple[Path, bytes]]) -> str:
    """Names the catalogue these files make. The path too: an entry's `source` is its file's name."""
    h = hasher()
    for path, data in sources:
        name = str(path).encode("utf-8", "surrogateescape")
        h.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def catalogue_digest(extra: Iterable[str | Path] = ()) -> str:
    """`digest_of` the files `load_catalogue(extra)` reads; CatalogueError if one cannot be read."""
    return digest_of(read_sources(extra))
