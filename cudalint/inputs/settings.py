"""Project configuration: `[tool.cudalint]` in `pyproject.toml`, or a file given with `--config`.

Like ruff: the nearest `pyproject.toml` above the linted path that has a `[tool.cudalint]` table is
the configuration (a `pyproject.toml` without the table is passed over). Every key is checked: an
unknown key or a value of the wrong type is a `SettingsError` naming the file and the key, never a
silently ignored setting. Paths in the file (`extend-catalogue`, `per-file-ignores` patterns with a
`/`) are relative to the file's directory, so the result does not depend on where cudalint runs.
"""
from __future__ import annotations

import os

from cudalint.fspath import clean, folders_up, join, parent
from cudalint.core.record import replace
from cudalint.inputs.config import Config

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Mapping, Optional
    from cudalint.fspath import PathLike

# what makes a folder a project's root (cudalint.named judges a named file inside its project)
MARKERS = ("pyproject.toml", "setup.cfg", ".git")
# the oldest Python the project runs on; `py314` changes multiprocessing's default start method
TARGET_VERSIONS = ("py310", "py311", "py312", "py313", "py314")


class SettingsError(ValueError):
    """A configuration file cudalint cannot use; the message names the file and the key."""


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SettingsError(f"{where} must be a list of strings, got {_show(value)}")
    return tuple(value)


def _codes(value: Any, where: str) -> tuple[str, ...]:
    return known_codes(tuple(v.strip().upper() for v in _strings(value, where) if v.strip()), where)


def known_codes(codes: tuple[str, ...], where: str) -> tuple[str, ...]:
    """Codes or prefixes that name at least one rule ("CUD0", "CUD101", "ALL"): a typo is an error, not silence."""
    if not codes:
        return codes
    from cudalint.core.registry import RULES

    for code in codes:
        if code != "ALL" and not any(rule.startswith(code) for rule in RULES):
            raise SettingsError(f"{where}: {code!r} is no rule code or prefix; known codes: {', '.join(RULES)}")
    return codes


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise SettingsError(f"{where} must be true or false, got {_show(value)}")
    return value


def _target(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in TARGET_VERSIONS:
        raise SettingsError(f"{where} must be one of {', '.join(TARGET_VERSIONS)}, got {_show(value)}")
    return value


def _per_file_ignores(value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise SettingsError(f"{where} must be a table of glob = [codes], got {_show(value)}")
    return tuple((pattern, _codes(codes, f"{where} {pattern!r}")) for pattern, codes in value.items())


def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list", dict: "a table"}
    return f"{kind.get(type(value), type(value).__name__)} ({value!r})" if not isinstance(value, dict) else "a table"


# TOML key -> (Config field, parser)
KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "select": ("select", _codes),
    "extend-select": ("extend_select", _codes),
    "ignore": ("ignore", _codes),
    "exclude": ("exclude", _strings),
    "extend-exclude": ("extend_exclude", _strings),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "extend-catalogue": ("extend_catalogue", _strings),
    "target-version": ("target_version", _target),
    "respect-gitignore": ("respect_gitignore", _bool),
}


def shown(path: str) -> str:
    """A path as messages show it: relative to the current folder when it is below it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _table_of(path: str) -> tuple[Optional[Mapping[str, Any]], str]:
    """The settings table of a file and how to name it in messages; None if a pyproject has none."""
    from cudalint.core.tomlreader import tomllib  # (most runs find no settings file)

    try:
        with open(path, encoding="utf-8") as fh:
            data = tomllib.loads(fh.read())
    except OSError as exc:
        raise SettingsError(f"{shown(path)}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{shown(path)}: invalid TOML: {exc}") from None
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool")
        table = tool.get("cudalint") if isinstance(tool, dict) else None
        if table is not None and not isinstance(table, dict):
            raise SettingsError(f"{shown(path)}: [tool.cudalint] must be a table")
        return table, "[tool.cudalint]"
    return data, ""  # cudalint.toml and the like: the settings are the whole file


def parse(table: Mapping[str, Any], path: str, label: str = "[tool.cudalint]") -> dict[str, Any]:
    """Validated Config fields from a settings table (paths made relative to the file's folder)."""
    base = parent(path)
    prefix = f"{shown(path)}: {label} " if label else f"{shown(path)}: "
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            import difflib  # (only for a key it does not know)

            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise SettingsError(f"{prefix}unknown key {key!r}{hint}; known keys: {', '.join(KEYS)}")
        field_name, convert = KEYS[key]
        out[field_name] = convert(value, f"{prefix}{key!r}")
    if "extend_catalogue" in out:
        out["extend_catalogue"] = tuple(join(base, p) for p in out["extend_catalogue"])
    if "per_file_ignores" in out:
        # a pattern with a folder in it is anchored at the file's folder; a bare name matches anywhere
        out["per_file_ignores"] = tuple(
            (join(base, p) if "/" in p else p, codes) for p, codes in out["per_file_ignores"]
        )
    return out


def find_pyproject(start: PathLike) -> Optional[str]:
    """The nearest `pyproject.toml` at or above `start` that has a `[tool.cudalint]` table."""
    for folder in folders_up(start):
        candidate = join(folder, "pyproject.toml")
        if os.path.isfile(candidate):
            try:
                table, _ = _table_of(candidate)
            except SettingsError:
                # broken TOML: ours only if it mentions our table, and then the error is worth showing
                with open(candidate, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                table = {} if "tool.cudalint" in text else None
            if table is not None:
                return candidate
    return None


def load(path: str) -> dict[str, Any]:
    table, label = _table_of(path)
    return parse(table or {}, path, label)


def resolve(
    paths: Iterable[str],
    config_file: Optional[str] = None,
    overrides: Optional[Mapping[str, Any]] = None,
) -> tuple[Config, Optional[str]]:
    """The run's Config: the file's settings, then the command line's (which win)."""
    path: Optional[str]
    if config_file is not None:
        path = clean(config_file)
        if not os.path.isfile(path):
            raise SettingsError(f"{config_file}: no such configuration file")
    else:
        first = next(iter(paths), ".")
        path = find_pyproject(first)
    values = load(path) if path is not None else {}
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return replace(Config(), **values), path


def project_root(start: PathLike) -> Optional[str]:
    """The folder of the project a file belongs to: the nearest one with pyproject.toml, setup.cfg or .git."""
    for folder in folders_up(start):
        if any(os.path.exists(os.path.join(folder, marker)) for marker in MARKERS):
            return folder
    return None
