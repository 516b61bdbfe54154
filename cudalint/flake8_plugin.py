"""The flake8 plugin: `flake8 --select CUD` reports what `cudalint` reports, line for line.

flake8 hands over one file at a time. The plugin
1. does nothing when flake8 will drop every CUD code anyway (`--select B`): decided once per run;
2. does nothing for a file with no catalogue trigger word and no import of a project module: such a
   file has no event any check judges (decided from the lines flake8 already read, no parsing);
3. otherwise analyses the file's component of the project's import graph (cudalint.scan.importgraph):
   the file from flake8's lines, the other modules through the summary cache shared with the CLI
   (`<project>/.cudalint_cache` or `CUDALINT_CACHE_DIR`). One analysis serves every file of the
   component for the rest of the process.

`[tool.cudalint]` applies as in the CLI (extend-catalogue, target-version, select/ignore,
per-file-ignores, exclude for the project's other modules); `# noqa` is left to flake8.
Columns are 0-based as flake8's plugin contract wants (flake8 adds one), so both tools print the
same `line:col`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from cudalint import __version__
from cudalint.core.findings import Finding

_STDIN = {"stdin", "-", "<stdin>"}


def _codes_selected(options: Any) -> bool:
    """Whether flake8 would report any CUD code with these options (its own decision engine)."""
    from cudalint.core.registry import RULES

    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
        return any(engine.decision_for(code) is Decision.Selected for code in RULES)
    except Exception:  # another flake8 version: run, rather than silently report nothing
        return True


@dataclass
class _Project:
    """What one process knows about one project: its settings, catalogue, cache and import graph."""

    root: Path
    config: Any
    catalogue: Any
    cache: Any
    absolute: bool  # show paths as flake8 was given them: absolute, or relative to the current folder
    graph: Any = None
    results: dict[tuple, dict[str, list[Finding]]] = field(default_factory=dict)
    # path -> (its digest, its findings), from the analysis flake8's main process made before its
    # workers started (`analyze_early`): a forked worker only looks its file up
    early: dict[str, tuple[str, list[Finding]]] = field(default_factory=dict)
    exists: dict[tuple[str, str], bool] = field(default_factory=dict)

    @cached_property
    def trigger(self) -> "re.Pattern[str]":
        # (compiled where a file first needs it: a file the main process analyzed never does)
        words = sorted(self.catalogue.trigger_words(), key=len, reverse=True)
        return re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b")

    def shown(self, path: Path) -> str:
        return str(path) if self.absolute else os.path.relpath(path)

    def import_graph(self, files: Optional[list[str]] = None):
        """`files`: the project's own, when the caller discovered them from its root already."""
        if self.graph is None:
            from cudalint.inputs.discover import discover
            from cudalint.scan.importgraph import ImportGraph
            from cudalint.inputs.source import read_bytes

            cfg = self.config
            if files is None:
                files = discover(
                    [self.shown(self.root)], exclude=cfg.exclude + cfg.extend_exclude, respect_gitignore=cfg.respect_gitignore
                ).files

            def read(path: str) -> Optional[bytes]:
                data = read_bytes(path)
                return data if isinstance(data, bytes) else None

            self.graph = ImportGraph.build(files, read)
        return self.graph

    def imports_project_module(self, path: str, text: str) -> bool:
        """Whether the file imports a module of its own project (relative, or found on disk nearby)."""
        from cudalint.scan.importgraph import imported_names
        from cudalint.core.modnames import module_name

        modname, is_package = module_name(Path(os.path.abspath(path)))
        names, relative = imported_names(text, modname, is_package)
        if relative:
            return True
        here = Path(os.path.abspath(path)).parent
        top_parent = here
        for _ in range(modname.count(".") + (1 if is_package else 0)):
            top_parent = top_parent.parent
        dirs = {here, top_parent}
        dirs.update({self.root, self.root / "src"})
        for top in {n.split(".")[0] for n in names}:
            for d in dirs:
                key = (str(d), top)
                if key not in self.exists:
                    self.exists[key] = (d / f"{top}.py").is_file() or (d / top / "__init__.py").is_file()
                if self.exists[key]:
                    return True
        return False


_PROJECTS: dict[tuple, _Project] = {}


def _project_for(filename: str) -> _Project:
    from cudalint.core.cache_files import usable_root
    from cudalint.engine.cache import CACHE_DIR_NAME, Cache
    from cudalint.core.catalogue import load_catalogue
    from cudalint.inputs.settings import resolve

    absolute = os.path.isabs(filename)
    here = Path(os.path.abspath(filename)) if filename not in _STDIN else Path.cwd() / "stdin.py"
    # (asked once per folder: flake8 hands over every file of a project, each walking up to the root)
    config_file, root = _roots(here.parent, _GIVEN)
    key = (root, config_file, absolute)
    if key in _PROJECTS:
        return _PROJECTS[key]
    config, _ = resolve([str(here)], str(config_file) if config_file else None)
    cache_dir = os.environ.get("CUDALINT_CACHE_DIR")
    directory = Path(cache_dir) if cache_dir else root / CACHE_DIR_NAME
    # the catalogue's parsed TOML from the cache, as the CLI reads it (tomllib is pure Python: a
    # tenth of a second in every flake8 worker)
    # (into a cache folder not made yet too: a flake8-only user's runs never parsed the TOML once)
    catalogue = load_catalogue(config.extend_catalogue, cache_dir=usable_root(directory))
    cache = Cache.open(directory, catalogue)
    project = _Project(root=root, config=config, catalogue=catalogue, cache=cache, absolute=absolute)
    _PROJECTS[key] = project
    return project


# The folders flake8 was given, absolute (Plugin.parse_options, in every process: flake8's workers
# parse the options again). Where no folder above a file has a project marker, the outermost of them
# that holds it is its project, as `cudalint FOLDER` lints FOLDER's files together: by package roots
# alone, a folder without `__init__.py` (core/ of a namespace package) was a project of its own and
# its module was judged without the routers that call it (CUD101 lost under flake8).
_GIVEN: tuple[Path, ...] = ()


def _given_names(options: Any) -> list[str]:
    """The file names flake8 was given (its default: the current folder)."""
    return list(getattr(options, "filenames", None) or ["."])


def _given_folders(options: Any) -> tuple[Path, ...]:
    return tuple(Path(os.path.abspath(n)) for n in _given_names(options) if n not in _STDIN and os.path.isdir(n))


@lru_cache(maxsize=256)
def _roots(folder: Path, given: tuple[Path, ...] = ()) -> tuple[Optional[Path], Path]:
    from cudalint.named import package_root
    from cudalint.inputs.settings import find_pyproject, project_root

    probe = folder / "__cudalint_probe__.py"  # (both look at the folders above a file)
    found = find_pyproject(probe)
    marked = project_root(probe)
    if marked is not None:
        root = Path(marked)
    else:
        holding = [g for g in given if g == folder or g in folder.parents]
        root = min(holding, key=lambda g: len(g.parts)) if holding else Path(package_root(probe))
    return (Path(found) if found is not None else None), root


def findings_for(filename: str, text: str) -> list[Finding]:
    """The findings located in `filename` (whose content is `text`), as `cudalint` reports them."""
    from cudalint.api import lint_files
    from cudalint.digest import hex_digest

    project = _project_for(filename)
    here = os.path.normpath(filename if project.absolute else os.path.relpath(filename)) if filename not in _STDIN else "stdin"
    own = hex_digest(text.encode("utf-8"))
    early = project.early.get(here)
    if early is not None and early[0] == own:
        return list(early[1])
    if not project.trigger.search(text) and not project.imports_project_module(filename, text):
        return []
    config = project.config
    on_disk = False  # flake8's text is the file's bytes: read it through the index, and the whole-run cache answers
    if filename in _STDIN:
        members = [here]
    else:
        graph = project.import_graph()
        known = graph.digests.get(here)
        if known is None:
            # a file the project's walk leaves out (gitignored, excluded) that flake8 was handed:
            # judged alone, its bytes on disk still let the cache answer
            from cudalint.inputs.source import read_bytes

            data = read_bytes(here)
            on_disk = isinstance(data, bytes) and hex_digest(data) == own
            members = [here]
        else:
            on_disk = known == own
            members = graph.component(here) if on_disk else [here]
    if len(members) == 1:
        digests = ((here, own),)
    else:
        digests = tuple((p, own if p == here else project.import_graph().digests.get(p, "")) for p in members)
    by_path = project.results.get(digests)
    if by_path is None:
        # the CLI's own pipeline over the component; every file of it gets its findings at once
        # (texts given would name an overlay: no index, no whole-run result; the other flake8 worker
        # and the next run take this one's from the cache when the bytes are the file's own)
        result = lint_files(members, config, project.catalogue, cache=project.cache, texts=None if on_disk else {here: text}, noqa=False)
        by_path = {}
        for finding in result.findings:
            by_path.setdefault(os.path.normpath(finding.path), []).append(finding)
        project.results[digests] = by_path
    return list(by_path.get(here, ()))


def analyze_early(paths: Sequence[str]) -> None:
    """In flake8's main process, before it starts its workers: analyze once, with cudalint's own
    worker processes, the components (cudalint.scan.importgraph) of the files under `paths`, and
    keep each file's findings (`_Project.early`). flake8's pool workers are daemonic and may not
    start processes: each of them analyzed the whole project alone, serially, both at once (an empty
    cache cost flake8 +85 % on lightning). Forked workers inherit the findings; spawned ones (the
    forkserver default of Python 3.14) find the summaries in the cache. A file whose text is not
    what was analyzed, or anything that goes wrong here, takes the per-file way (`findings_for`)."""
    from cudalint.engine import runner

    try:
        _analyze_early(paths)
    finally:
        runner.drop_standby()  # (one no run took: flake8 forks its own pool next)


def _analyze_early(paths: Sequence[str]) -> None:
    from cudalint.api import lint_files
    from cudalint.engine import runner
    from cudalint.inputs.discover import discover

    wanted: dict[int, tuple[_Project, list[str]]] = {}
    found_at_root: dict[int, list[str]] = {}  # a project given by its root: its files, discovered once
    for given in paths:
        if given in _STDIN or not os.path.exists(given):
            continue
        first = _project_for(given if not os.path.isdir(given) else os.path.join(given, "__init__.py"))
        cfg = first.config
        found = discover([given], exclude=cfg.exclude + cfg.extend_exclude, respect_gitignore=cfg.respect_gitignore)
        # the workers of the analysis below start while this process finds the files' projects and
        # builds their import graphs
        runner.standby([p for p in found.files if p.endswith(".py")], first.cache)
        if os.path.isdir(given) and Path(os.path.abspath(given)) == first.root:
            found_at_root[id(first)] = found.files
        # (a folder's files share their project: asked per file, the paths and the walk up cost 0.08 s
        # of lightning's 266 files, while the other core idled)
        of_folder: dict[str, _Project] = {}
        for path in found.files:
            if not path.endswith(".py"):
                continue
            folder = os.path.dirname(path)
            project = of_folder.get(folder)
            if project is None:
                project = of_folder[folder] = _project_for(path)
            wanted.setdefault(id(project), (project, []))[1].append(os.path.normpath(path if project.absolute else os.path.relpath(path)))
    for key, (project, files) in wanted.items():
        graph = project.import_graph(found_at_root.get(key))
        if graph.digests.keys() <= set(files):  # the whole project: no component to look for
            members = dict.fromkeys(graph.paths)
        else:
            members = {}
            for path in files:
                if path in graph.digests and path not in members:
                    members.update(dict.fromkeys(graph.component(path)))
        if not members:
            continue
        result = lint_files(list(members), project.config, project.catalogue, cache=project.cache, noqa=False)
        by_path: dict[str, list[Finding]] = {path: [] for path in members}
        for finding in result.findings:
            by_path.setdefault(os.path.normpath(finding.path), []).append(finding)
        for path, found_here in by_path.items():
            if path in graph.digests:
                project.early[path] = (graph.digests[path], found_here)


def _pool_possible(options: Any) -> bool:
    """Whether flake8 may check in a pool (cudalint.flake8_plugin's options are flake8's): more than
    one job, and more than one file (flake8.checker.Manager.run)."""
    jobs = getattr(options, "jobs", None)
    count = (os.cpu_count() or 1) if getattr(jobs, "is_auto", True) else getattr(jobs, "n_jobs", 2)
    names = _given_names(options)
    return count > 1 and not (len(names) == 1 and (names[0] in _STDIN or os.path.isfile(names[0])))


def _start_helpers_safely(options: Any) -> None:
    """flake8 starts its pool after this plugin's options. Where that pool forks from a fork server
    (the default start method of Python 3.14 on Linux), the server and the resource tracker are
    interpreters started as `python -c ...` in the current folder, the linted tree, with that
    folder first on `sys.path`: the tree's linecache.py and traceback.py ran there and flake8 died
    with no output, CUD selected or not. Started here first, from the standard library's folder
    (cudalint.safepath.trusted_cwd, as cudalint's own pool), they are the ones flake8's pool uses;
    each worker still enters the user's folder (multiprocessing sends it the parent's). ("spawn",
    the default on macOS and Windows, starts each worker that way, as flake8 has always done there.)"""
    import multiprocessing

    if not _pool_possible(options):
        return  # (32 ms on 3.14, and two interpreters, for a pool that will not be)
    if (multiprocessing.get_start_method(allow_none=True) or multiprocessing.get_all_start_methods()[0]) != "forkserver":
        return
    from multiprocessing import forkserver, resource_tracker

    from cudalint.safepath import trusted_cwd

    with trusted_cwd():
        resource_tracker.ensure_running()
        forkserver.ensure_running()


class Plugin:
    """flake8's entry point `CUD = cudalint.flake8_plugin:Plugin`."""

    name = "cudalint"
    version = __version__
    selected = True

    def __init__(self, tree: Any, filename: str, lines: list[str]) -> None:
        # `tree` is only how flake8 recognizes an AST plugin; flake8 builds it anyway
        self.filename = filename
        self.lines = lines

    @classmethod
    def parse_options(cls, options: Any) -> None:
        global _GIVEN
        cls.selected = _codes_selected(options)
        _GIVEN = _given_folders(options)
        from cudalint.engine.runner import _daemonic

        # (flake8's workers parse the options again: what follows is its main process's; each worker
        # of 3.14's fork server started a server of its own)
        if cls.selected and not _daemonic():
            try:
                _start_helpers_safely(options)
                analyze_early(_given_names(options))
            except Exception:  # (each file is analyzed on its own way then, and reports what fails)
                pass

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        if not self.selected:
            return
        from cudalint.output.report import folded_message

        try:
            found = findings_for(self.filename, "".join(self.lines))
        except Exception as exc:  # a settings or catalogue error: say so in the file, never crash flake8
            yield 1, 0, f"CUD900 cudalint cannot run: {exc}", type(self)
            return
        for f in found:
            yield f.line, max(f.column - 1, 0), f"{f.code} {folded_message(f)}", type(self)
