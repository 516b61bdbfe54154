"""Which files a run looks at: the paths given, recursing into directories.

Like ruff: files named on the command line are always linted; inside directories, what `.gitignore`
ignores, the usual virtualenv/build folders and `--exclude` patterns are skipped.
"""
from __future__ import annotations

import errno
import os
import stat

from cudalint.core.findings import Finding
from cudalint.core.record import record
from cudalint.fspath import folders_up

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Iterable, Iterator, Optional
    import pathspec

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "__pycache__", ".tox", ".nox",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cudalint_cache", "build", "dist",
        "node_modules", "site-packages", ".eggs", ".ipynb_checkpoints", "__pypackages__",
    }
)
SUFFIXES = (".py", ".pyi", ".ipynb")


@record
class Discovered:
    files: tuple[str, ...]
    problems: tuple[Finding, ...]
    reals: tuple[str, ...] = ()  # each file's real path (links resolved), as the walk found it


# (strings and os.path, not pathlib, here and in every module a warm run imports: cudalint.fspath)
# what pathlib's tests take for "not there" rather than an error to report (its _IGNORED_ERRNOS)
_ABSENT = frozenset((errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP))


def _stat(path: str, follow: bool = True) -> Optional[os.stat_result]:
    """The path's status, None if it is not there; another error (a folder we may not search) is raised."""
    try:
        return os.stat(path) if follow else os.lstat(path)
    except OSError as exc:
        if exc.errno in _ABSENT:
            return None
        raise
    except ValueError:  # a NUL in the name
        return None


def _problem(path: str, reason: str) -> Finding:
    from cudalint.inputs.source import problem  # (the file reader: a run whose paths are all there never needs it)

    return problem(path, reason)


def _is_venv(path: str) -> bool:
    # an unreadable directory: False (os.path.isfile raises nothing); it is reported when walked
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def _gitignore(directory: str) -> Optional["pathspec.GitIgnoreSpec"]:
    try:
        with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    import pathspec  # only where there are patterns to match (a tenth of a warm run's time otherwise)

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ancestors_gitignores(start: str) -> list[tuple[str, "pathspec.GitIgnoreSpec"]]:
    """The .gitignore files of the directories above `start`, up to the repository root."""
    out = []
    for folder in folders_up(os.path.realpath(start)):
        spec = _gitignore(folder)
        if spec is not None:
            out.append((folder, spec))
        try:
            if _stat(os.path.join(folder, ".git")) is not None:
                break
        except OSError:  # (a folder we may not search: no higher)
            break
    return out


def _ignored(path: str, is_dir: bool, specs: list[tuple[str, "pathspec.GitIgnoreSpec"]]) -> bool:
    if not specs:
        return False
    try:
        resolved = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
    except (OSError, ValueError):
        resolved = os.path.abspath(path)
    for base, spec in specs:
        try:
            rel = os.path.relpath(resolved, base)
        except ValueError:
            continue
        if rel.startswith(".."):
            continue
        rel = rel.replace(os.sep, "/")
        if spec.match_file(rel + ("/" if is_dir else "")):
            return True
    return False


def _excluded(path: str, patterns: Iterable[str]) -> bool:
    patterns = list(patterns)
    if not patterns:
        return False
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    norm = path.replace(os.sep, "/").lstrip("./") if not path.startswith("..") else path.replace(os.sep, "/")
    parts = norm.split("/")
    return any(spec.match_file("/".join(parts[i:])) for i in range(len(parts)))


def discover(paths: Iterable[str], exclude: Iterable[str] = (), respect_gitignore: bool = True) -> Discovered:
    files: list[str] = []
    problems: list[Finding] = []
    exclude = tuple(exclude)
    seen: dict[str, None] = {}  # real paths of the files listed, in their order
    walked: set[str] = set()  # real paths of the folders walked: each once, however many links lead to it
    for given in paths:
        try:
            _given(given, exclude, respect_gitignore, files, problems, seen, walked)
        except (OSError, RuntimeError) as exc:  # e.g. a path inside a directory we may not search
            problems.append(_problem(given, f"cannot read: {getattr(exc, 'strerror', None) or exc}"))
    return Discovered(files=tuple(files), problems=tuple(problems), reals=tuple(seen))


def _given(given: str, exclude, respect_gitignore, files, problems, seen, walked) -> None:
    st = _stat(given)
    if st is None:
        link = _stat(given, follow=False)
        if link is None or not stat.S_ISLNK(link.st_mode):
            problems.append(_problem(given, "no such file or directory"))
            return
    if st is None or not stat.S_ISDIR(st.st_mode):  # a file, a link to nothing, a device...: read as a file
        key = os.path.realpath(given)
        if key not in seen:
            seen[key] = None
            files.append(given)
        return
    specs = _ancestors_gitignores(given) if respect_gitignore else []
    _walk(given, given, specs, exclude, respect_gitignore, files, problems, seen, walked)


def _walk(top: str, shown_top: str, top_specs, exclude, respect_gitignore, files, problems, seen, walked) -> None:
    """Depth first, in name order, with a stack of its own: a tree may be nested deeper than
    Python's recursion limit (1,100 folders is only a few kilobytes of path)."""
    # each level: (its remaining entries, its shown path, the gitignore specs in force, the real
    # paths of the folders above it and of itself, its own real path)
    stack: list[tuple[Iterator[os.DirEntry], str, list, frozenset, str]] = []
    level = _enter(top, shown_top, top_specs, frozenset(), respect_gitignore, problems, walked)
    if level is not None:
        stack.append(level)
    while stack:
        entries, shown, specs, visiting, real = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        shown_child = os.path.normpath(os.path.join(shown, entry.name))
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        if is_dir:
            path = entry.path
            if entry.name in SKIP_DIRS or entry.name.endswith(".egg-info") or _is_venv(path):
                continue
            if respect_gitignore and _ignored(entry.path, True, specs):
                continue
            if _excluded(shown_child, exclude):
                continue
            level = _enter(path, shown_child, specs, visiting, respect_gitignore, problems, walked)
            if level is not None:
                stack.append(level)
            continue
        if not entry.name.endswith(SUFFIXES):
            continue
        if respect_gitignore and _ignored(entry.path, False, specs):
            continue
        if _excluded(shown_child, exclude):
            continue
        try:
            # (a file that is not a link is where its folder really is: one realpath per folder, not per file)
            key = os.path.realpath(entry.path) if entry.is_symlink() else os.path.join(real, entry.name)
        except OSError:
            key = os.path.realpath(entry.path)
        if key in seen:
            continue
        seen[key] = None
        files.append(shown_child)


def _enter(directory: str, shown: str, specs, visiting: frozenset, respect_gitignore, problems, walked):
    """A folder's level of the walk, or None: a link back to a folder above, or a folder walked
    already through another link (either way its files are listed through the walk of the real
    folder: nothing goes unchecked, so neither is a finding; lmql-lang/lmql's `docs/latest -> .`),
    or an unreadable one (reported)."""
    real = os.path.realpath(directory)
    if real in visiting or real in walked:
        return None
    walked.add(real)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except PermissionError:
        problems.append(_problem(shown, "cannot read directory: permission denied"))
        return None
    except OSError as exc:
        problems.append(_problem(shown, f"cannot read directory: {exc.strerror or exc}"))
        return None
    if respect_gitignore:
        local = _gitignore(directory)
        if local is not None and not any(base == real for base, _ in specs):
            specs = specs + [(real, local)]
    return iter(entries), shown, specs, visiting | {real}, real
