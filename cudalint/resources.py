"""Where the bundled `rules/` directory lives: inside the wheel, or beside the package in a checkout."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def rules_dir() -> Path:
    package = Path(__file__).resolve().parent
    for candidate in (package / "_rules", package.parent / "rules"):
        if (candidate / "catalogue").is_dir():
            return candidate
    raise FileNotFoundError("cudalint's rules/ directory is missing from this installation")


def catalogue_dir() -> Path:
    return rules_dir() / "catalogue"
