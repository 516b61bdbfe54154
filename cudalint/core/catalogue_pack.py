"""The bundled catalogue's TOML, parsed ahead of time: `rules/catalogue-parsed.json`.

tomllib is pure Python: the 31 bundled files took 75-80 ms to parse, as JSON 14 (lightning's cold
run 2.2 s, on this project's slow 2-core machine). A cold run (an empty cache: a first run on a
project, CI, flake8's first run) and every `--no-cache` run paid it in the serial part of its start,
before any worker had a file. The pack holds each file's tables under the digest of the file's bytes,
so an edited file is simply not found in it and is parsed as before: a stale pack costs time, never a
result. tests/test_catalogue.py fails while the pack is not what `python -m
cudalint.core.catalogue_pack` writes from the files as they are (`make catalogue`).
"""
from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any, Iterable, Optional

from cudalint.digest import hex_digest
from cudalint.resources import rules_dir

PACK_NAME = "catalogue-parsed.json"
_FORMAT = 1


def pack_path() -> str:
    return os.path.join(rules_dir(), PACK_NAME)


def file_key(data: bytes) -> str:
    """Names a catalogue file's parsed tables by its bytes (the cache's per-file entries use it too)."""
    return hex_digest(data)[:32]


def packed(sources: Iterable[tuple[str, bytes]]) -> str:
    """The pack's text for these files (their paths are not in it: only bytes decide a parse).
    A file whose tables have no JSON form (a TOML date) is left out: it is parsed each time."""
    from cudalint.core.tomlreader import tomllib

    tables: dict[str, Any] = {}
    for _path, data in sources:
        parsed = tomllib.loads(data.decode("utf-8"))
        try:
            json.dumps(parsed)
        except (TypeError, ValueError):
            continue
        tables[file_key(data)] = parsed
    body = {"format": _FORMAT, "made_by": "python -m cudalint.core.catalogue_pack", "tables": dict(sorted(tables.items()))}
    return json.dumps(body, indent=0, sort_keys=False, ensure_ascii=False) + "\n"


@lru_cache(maxsize=1)
def _tables() -> dict:
    try:
        with open(pack_path(), "rb") as fh:
            body = json.loads(fh.read())
    except (OSError, ValueError):
        return {}  # (no pack, or a broken one: the files are parsed)
    if not isinstance(body, dict) or body.get("format") != _FORMAT or not isinstance(body.get("tables"), dict):
        return {}
    return body["tables"]


def shipped(data: bytes) -> Optional[dict]:
    """The parsed tables of a catalogue file with these bytes, if the pack has them."""
    value = _tables().get(file_key(data))
    return value if isinstance(value, dict) else None


def main() -> None:
    from cudalint.core.catalogue_source import read_sources

    text = packed(read_sources())
    with open(pack_path(), "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {pack_path()} ({len(text):,} bytes)")


if __name__ == "__main__":
    main()
