"""The plain command lines of the lint command, read without importing click.

Importing click (with the modules it pulls in: inspect, uuid, datetime, ...) costs 12 ms of the
60 ms a warm run on lightning takes, and a run the cache answers has nothing else left to cut. The
command lines a warm run, an editor or a pre-commit hook makes are plain: paths, and options from the
table below, each spelled in full (`--select CUD001`, `--select=CUD001`, `-j 2`, `-j2`). `parse`
reads exactly those and returns None for anything else (`--help`, `--version`, `--`, `-`, a cluster
of short flags, an option not in the table, a value click would convert or check differently, a
value that starts with `-`): click then parses the line and says what is wrong with it.
tests/test_quick_args.py checks every accepted shape against click's own parse.
"""
from __future__ import annotations

import os
import stat

from cudalint.command import COLOURS, FORMATS, TARGET_VERSIONS, Options

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Optional

_FLAGS = {
    "--no-gitignore": "no_gitignore",
    "--no-cache": "no_cache",
    "--force-exclude": "force_exclude",
    "--statistics": "statistics",
    "--exit-zero": "exit_zero",
    "--quiet": "quiet",
    "-q": "quiet",
    "--silent": "silent",
    "-s": "silent",
    "--show-source": "show_source",
}
_REPEATED = {
    "--select": "select",
    "--extend-select": "extend_select",
    "--ignore": "ignore",
    "--per-file-ignores": "per_file_ignores",
    "--exclude": "exclude",
}
_CHOICES = {
    "--format": ("fmt", FORMATS),
    "--output-format": ("fmt", FORMATS),
    "--color": ("color", COLOURS),
    "--target-version": ("target_version", TARGET_VERSIONS),
}
_JOBS = ("--jobs", "-j")
# click.Path(file_okay=False): click refuses an existing file there (the run would use no cache)
_FOLDER = "--cache-dir"
# the other click.Path options (--config, --baseline, --extend-catalogue, --output-file), whose
# checks click makes against the file system, and every other option: left to click
_SUBCOMMANDS = ("rule", "server")


def _valued(name: str) -> bool:
    return name in _REPEATED or name in _CHOICES or name in _JOBS or name == _FOLDER


def parse(argv: list[str]) -> Optional[Options]:
    """The options of a plain command line, or None: click must read it."""
    if argv and argv[0] in _SUBCOMMANDS:
        return None
    values: dict = {}
    repeated: dict[str, list[str]] = {}
    paths: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-"):
            paths.append(token)
            continue
        if token in _FLAGS:
            values[_FLAGS[token]] = True
            continue
        name, eq, value = token.partition("=") if token.startswith("--") else (token[:2], "", token[2:])
        if not _valued(name) or (eq and name not in _REPEATED and not value):
            return None
        if not eq and not value:
            if i == len(argv):
                return None  # (click: "Option requires an argument")
            value = argv[i]
            i += 1
        elif not name.startswith("--") and name not in _JOBS:
            return None
        if value.startswith("-"):
            return None
        if name in _REPEATED:
            repeated.setdefault(_REPEATED[name], []).append(value)
        elif name in _CHOICES:
            field, allowed = _CHOICES[name]
            if value not in allowed:
                return None
            values[field] = value
        elif name in _JOBS:
            if not (value.isascii() and value.isdigit()) or int(value) < 1:
                return None
            values["jobs"] = int(value)
        else:
            values["cache_dir"] = value
    if "cache_dir" not in values:
        env = os.environ.get("CUDALINT_CACHE_DIR")
        if env:  # (click's envvar: an empty value counts as unset)
            values["cache_dir"] = env
    if "cache_dir" in values and _is_file(values["cache_dir"]):
        return None
    return Options(paths=tuple(paths), **values, **{k: tuple(v) for k, v in repeated.items()})


def _is_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
