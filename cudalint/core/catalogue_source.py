"""The catalogue's files and their bytes: what a catalogue is made from, without making it.

A run that the cache answers whole needs to know only which catalogue the cached findings were made
with, not the catalogue itself: the files' bytes name it (`catalogue_digest`), since cudalint's own
code, which turns them into a catalogue, is named apart (cudalint.fingerprint). Loading the
catalogue (cudalint.core.catalogue) cost a warm run of lightning a tenth of its time.
"""
from __future__ import annotations

import os

from cudalint.digest import hasher
from cudalint.fspath import clean
from cudalint.resources import catalogue_dir

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterable
    from cudalint.fspath import PathLike


class CatalogueError(ValueError):
    """A catalogue file that cannot be used; the message names the file and the entry."""


def catalogue_files(extra: Iterable[PathLike] = ()) -> list[str]:
    """The bundled files (sorted), then the user's (`extend-catalogue`), in their order, spelled as
    `Path` spells them (the digest holds the names)."""
    folder = catalogue_dir()
    files = sorted(os.path.join(folder, name) for name in os.listdir(folder) if name.endswith(".toml"))
    files.extend(clean(p) for p in extra)
    return files


def read_sources(extra: Iterable[PathLike] = ()) -> list[tuple[str, bytes]]:
    """Each catalogue file and its bytes; CatalogueError names a file that cannot be read."""
    out = []
    for path in catalogue_files(extra):
        try:
            with open(path, "rb") as fh:
                out.append((path, fh.read()))
        except OSError as exc:
            raise CatalogueError(f"{path}: cannot read catalogue: {exc.strerror or exc}") from None
    return out


def digest_of(sources: Iterable[tuple[str, bytes]]) -> str:
    """Names the catalogue these files make. The path too: an entry's `source` is its file's name."""
    h = hasher()
    for path, data in sources:
        name = str(path).encode("utf-8", "surrogateescape")
        h.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:16]


def catalogue_digest(extra: Iterable[PathLike] = ()) -> str:
    """`digest_of` the files `load_catalogue(extra)` reads; CatalogueError if one cannot be read."""
    return digest_of(read_sources(extra))
