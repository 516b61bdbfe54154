"""Where the bundled `rules/` directory lives: inside the wheel, or beside the package in a checkout."""
from __future__ import annotations

import os
from functools import lru_cache


@lru_cache(maxsize=1)
def rules_dir() -> str:
    """The folder, as `Path(__file__).resolve()` spells it (the catalogue's digest holds its files' paths)."""
    package = os.path.dirname(os.path.realpath(__file__))
    for candidate in (os.path.join(package, "_rules"), os.path.join(os.path.dirname(package), "rules")):
        if os.path.isdir(os.path.join(candidate, "catalogue")):
            return candidate
    raise FileNotFoundError("cudalint's rules/ directory is missing from this installation")


def catalogue_dir() -> str:
    return os.path.join(rules_dir(), "catalogue")
