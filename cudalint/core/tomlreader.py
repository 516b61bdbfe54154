"""The TOML reader of this Python: tomllib (3.11+) or its backport tomli.

Imported only where TOML is read (a settings file, a catalogue file on a cache miss): it is pure
Python and about a tenth of a warm run's start-up."""
from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["tomllib"]
