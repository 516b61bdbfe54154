"""Files named on the command line are judged inside their project.

`cudalint serve.py` (and the pre-commit hook, which passes only the staged files) must find what
`cudalint .` finds in serve.py, including findings whose cause is in a module nobody named. So a
named file is linted together with the rest of its project (read through the summary cache, so a
warm run costs little) and only the named files' findings are reported, as the flake8 plugin does.

The project is the nearest folder above the file with `pyproject.toml`, `setup.cfg` or `.git`;
without any marker, the folder that holds the file's top-level package (the file's own folder for
a plain script), which is where Python would find its imports.
"""
from __future__ import annotations

import os

from cudalint.fspath import folders_up
from cudalint.inputs.config import Config
from cudalint.core.findings import Finding
from cudalint.core.record import record

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Mapping, Optional, Sequence
    from cudalint.fspath import PathLike


def package_root(path: PathLike) -> str:
    """The folder that holds the top-level package of `path` (its own folder for a plain script)."""
    for folder in folders_up(path):
        if not os.path.isfile(os.path.join(folder, "__init__.py")):
            break
    return folder  # (the first folder that is no package; the root if every one up to it is)


def project_of(path: PathLike) -> str:
    """The project a file belongs to: the nearest folder with a marker, else its package root."""
    from cudalint.inputs.settings import project_root

    return project_root(path) or package_root(path)


@record
class Run:
    result: object  # cudalint.api.LintResult, on the reported files only
    files: tuple[str, ...]  # every file analyzed (the named files' projects included)


@record
class Context:
    """What one run lints (`files`, named spelling kept) and which of them it reports on (`reported`)."""

    files: tuple[str, ...]
    reported: frozenset[str]  # normalized paths
    problems: tuple[Finding, ...]


def _shown(root: str, like: str) -> str:
    """The root spelled like the named file: absolute for an absolute name, else relative to here."""
    if os.path.isabs(like):
        return root
    try:
        return os.path.relpath(root)
    except ValueError:  # another drive
        return root


def context(
    named: Sequence[str],
    directories: Sequence[str],
    config: Config,
    force_exclude: bool = False,
) -> Context:
    """The files to analyze for these targets: the directories' files, and each named file's project."""
    from cudalint.inputs.discover import _excluded, discover

    exclude = config.exclude + config.extend_exclude
    gitignore = config.respect_gitignore
    problems: list[Finding] = []
    found = discover(directories, exclude=exclude, respect_gitignore=gitignore) if directories else None
    reported_files: list[str] = list(found.files) if found else []
    # each file's real path, as the walk found it (a realpath per file cost a warm run of lightning 17 ms)
    reals: dict[str, str] = dict(zip(found.files, found.reals)) if found else {}
    if found:
        problems.extend(found.problems)
    keep: list[str] = []
    for path in named:
        if force_exclude and _excluded(os.path.normpath(path), exclude):
            continue
        keep.append(path)
    # one discovery per project; a file's named spelling replaces its discovered one
    roots: dict[str, str] = {}
    for path in keep:
        roots.setdefault(project_of(path), path)
    spelled = {os.path.realpath(p): p for p in keep}
    files: list[str] = []
    seen: set[str] = set()

    def add(path: str) -> None:
        real = reals.get(path) or os.path.realpath(path)
        if real not in seen:
            seen.add(real)
            files.append(spelled.get(real, path))

    for path in reported_files:
        add(path)
    for path in keep:
        add(path)
    for root, like in roots.items():
        # the project's problems (a broken module nobody named) are not this run's to report
        more = discover([_shown(root, like)], exclude=exclude, respect_gitignore=gitignore)
        reals.update(zip(more.files, more.reals))
        for path in more.files:
            add(path)
    reported = frozenset(os.path.normpath(p) for p in reported_files + keep)
    return Context(files=tuple(files), reported=reported, problems=tuple(problems))


def lint_targets(
    targets: Sequence[str],
    config: Config,
    cache=None,
    jobs: Optional[int] = None,
    force_exclude: bool = False,
    texts: Optional[Mapping[str, str]] = None,
) -> Run:
    """`cudalint TARGETS`: directories linted as they are, named files inside their project."""
    from cudalint.api import LintResult, lint_files

    directories = [t for t in targets if os.path.isdir(t)]
    named = [t for t in targets if not os.path.isdir(t)]
    ctx = context(named, directories, config, force_exclude=force_exclude)
    # (the catalogue is loaded if the cache does not answer the run whole)
    result = lint_files(ctx.files, config, None, extra=ctx.problems, cache=cache, jobs=jobs, texts=texts)
    if not named:
        return Run(result, ctx.files)
    problems = set(ctx.problems)  # (about the directories' walk: reported as before)
    kept = tuple(f for f in result.findings if f in problems or os.path.normpath(f.path) in ctx.reported)
    return Run(LintResult(findings=kept, files=len(ctx.reported)), ctx.files)
