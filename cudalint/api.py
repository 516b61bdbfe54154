"""The pipeline, one way: discover files, parse, summarize, check, filter. No I/O but reading."""
from __future__ import annotations

import os

from cudalint.inputs.config import Config
from cudalint.core.findings import Finding
from cudalint.core.record import record, replace
from cudalint.core.modnames import module_name

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:
    from typing import Callable, Iterable, Mapping, Optional, Sequence, Union
    # imported where they are used: a run the cache answers whole (cudalint.engine.indexed.reused_run)
    # needs no catalogue, checks, analysis or IR, and importing them was a third of its time
    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR
    from cudalint.engine.cache import Cache
    from cudalint.inputs.notebook import Notebook


@record
class LintResult:
    findings: tuple[Finding, ...]
    files: int


def load_module(
    path: str,
    catalogue: Catalogue,
    text: Optional[str] = None,
    cache: Optional[Cache] = None,
) -> Union[ModuleIR, Finding]:
    """Read (unless `text` is given), parse and summarize one file; a CUD900 finding if that fails.

    With a cache, a file whose bytes were summarized before is not parsed again.
    """
    from cudalint.inputs import source
    from cudalint.summary.from_bytes import _summarize_bytes

    if text is None:
        data = source.read_bytes(path)
        if isinstance(data, Finding):
            return data
    else:
        data = text.encode("utf-8")
    modname, is_package = module_name(os.path.abspath(path))
    key = cache.key(path, modname, data) if cache is not None else ""
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    result = _summarize_bytes(path, data, modname, is_package, catalogue)
    if cache is not None:
        cache.put(key, result)
    return result


def load_notebook(
    path: str, catalogue: Catalogue, cache: Optional[Cache] = None
) -> Union[tuple[Notebook, Union[ModuleIR, Finding]], Finding]:
    """A notebook as one module in cell order (cudalint.inputs.notebook); its lines are the notebook's source lines."""
    from cudalint.inputs import notebook

    nb = notebook.read(path)
    if isinstance(nb, Finding):
        return nb
    result = load_module(path, catalogue, text=nb.source, cache=cache)
    if not isinstance(result, Finding):
        from cudalint.summary.summarize import noqa_lines

        # nobody imports a notebook; noqa comments are in the cells' own text
        result = replace(result, module="", noqa=noqa_lines(nb.original))
    return nb, result


def _map_notebooks(finding: Finding, notebooks: dict[str, Notebook]) -> Finding:
    nb = notebooks.get(finding.path)
    if nb is not None:
        return nb.map_finding(finding)
    if any(s.path in notebooks for s in finding.witness):
        return replace(finding, witness=tuple(notebooks[s.path].map_step(s) if s.path in notebooks else s for s in finding.witness))
    return finding


def suppressed(finding: Finding, mod: Optional[ModuleIR]) -> bool:
    if mod is None or not mod.noqa:
        return False
    for line, codes in mod.noqa:
        if line == finding.line and (not codes or any(finding.code.startswith(c) for c in codes)):
            return True
    return False


def lint_paths(
    paths: Sequence[str],
    config: Optional[Config] = None,
    cache: Optional[Cache] = None,
    jobs: Optional[int] = None,
) -> LintResult:
    from cudalint.inputs.discover import discover

    config = config or Config()
    found = discover(paths, exclude=config.exclude + config.extend_exclude, respect_gitignore=config.respect_gitignore)
    # (the catalogue is loaded if the cache does not answer the run whole, as for `cudalint TARGETS`)
    return lint_files(found.files, config, None, extra=found.problems, cache=cache, jobs=jobs)


def lint_files(
    files: Iterable[str],
    config: Config,
    catalogue: Optional[Catalogue],
    extra: Iterable[Finding] = (),
    cache: Optional[Cache] = None,
    overlay: Optional[dict[str, str]] = None,
    texts: Optional[Mapping[str, str]] = None,
    noqa: bool = True,
    jobs: Optional[int] = None,
    cancelled: Optional[Callable[[], bool]] = None,
) -> LintResult:
    """Lint `files` together. `catalogue`: None loads `config`'s when the run needs it (not when the
    cache answers it whole).

    `overlay`: path -> text to lint instead of the file's content (how --fix checks a fix; never
    cached). `texts`: contents already read (the flake8 plugin's file) instead of reading them.
    `noqa=False` leaves `# noqa` to the caller (flake8 applies its own).
    `jobs`: worker processes for the .py files read from disk (default: the usable cores; 1 = in
    this process). `cancelled`: asked between the analysis's walks; True ends the run with
    cudalint.analysis.flow.Cancelled (the language server, when a newer edit waits).
    """
    from cudalint.engine.gc_pause import paused_gc

    with paused_gc():  # (until the run's summaries are freed: _lint_files has returned)
        return _lint_files(files, config, catalogue, extra, cache, overlay, texts, noqa, jobs, cancelled)


def _lint_files(
    files: Iterable[str],
    config: Config,
    catalogue: Optional[Catalogue],
    extra: Iterable[Finding],
    cache: Optional[Cache],
    overlay: Optional[dict[str, str]],
    texts: Optional[Mapping[str, str]],
    noqa: bool,
    jobs: Optional[int],
    cancelled: Optional[Callable[[], bool]],
) -> LintResult:
    from cudalint.engine.indexed import index_files, reused_run

    texts = {**(texts or {}), **(overlay or {})}
    modules: list[ModuleIR] = []
    findings: list[Finding] = list(extra)
    notebooks: dict[str, Notebook] = {}
    files = list(files)
    count = len(files)
    # .py files go through the runner (cache, workers); notebooks are loaded here
    py_files = [p for p in files if not p.endswith(".ipynb")]
    notebook_files = [p for p in files if p.endswith(".ipynb")]
    run_salt = None if overlay else repr((config, noqa, [f.to_json() for f in findings], _fingerprints(notebook_files)))
    indexed = index_files(py_files, cache, texts, uncached=tuple(overlay or ()))
    if cache is not None and run_salt is not None:
        reused = reused_run(indexed, cache, run_salt)
        if reused is not None:
            return LintResult(findings=tuple(reused), files=count)
    from cudalint.engine import runner
    from cudalint.core.catalogue import load_catalogue

    if catalogue is None:
        catalogue = load_catalogue(config.extend_catalogue, cache_dir=cache.directory if cache is not None else None)
    loaded = runner.load_files(
        py_files,
        catalogue,
        cache=cache,
        jobs=jobs,
        extend_catalogue=config.extend_catalogue,
        run_salt=run_salt,
        cutoff=not notebook_files,  # (the reused findings would need the notebooks' cells mapped)
        indexed=indexed,
        meanwhile=_import_analysis,
    )
    try:
        if loaded.reused is not None:
            if not loaded.cut:
                return LintResult(findings=tuple(loaded.reused), files=count)
            from cudalint.engine.suppress import apply_file_directives

            kept = sorted(apply_file_directives(loaded.reused, texts), key=Finding.sort_key)
            if cache is not None and loaded.run_key:
                cache.put_run(loaded.run_key, kept)
            return LintResult(findings=tuple(kept), files=count)
        # (imported only now: an edit that left every summary as it was ends the run above)
        from cudalint.analysis.flow import Analyzer
        from cudalint.checks import build_checks, build_derive, build_sparse, init_keys, project_checks, watched
        from cudalint.core.deep import call_roomy
        from cudalint.core.project import Project
        from cudalint.engine.heap import give_back_free_memory

        checks = build_checks(catalogue, config.enabled, config.target_version)
        findings.extend(loaded.problems)
        modules.extend(loaded.modules)
        for path in notebook_files:
            result = load_notebook(path, catalogue, cache)
            if isinstance(result, tuple):
                notebooks[path] = result[0]
                findings.extend(result[0].problems)
                result = result[1]
            if isinstance(result, Finding):
                findings.append(result)
            else:
                modules.append(result)
        project = Project(modules)
        give_back_free_memory(len(modules))  # (the analysis makes the run's peak)
        derive, imports, sparse = build_derive(config.target_version, catalogue), watched.import_keys(catalogue), build_sparse(catalogue)
        analyzer = Analyzer(project, checks, init_keys, derive=derive, imports=imports, sparse=sparse, cancelled=cancelled)
        try:
            findings.extend(analyzer.run())
        except RecursionError:  # deeply nested control flow: once more with a deep stack
            from cudalint.core.deep import call_deep

            analyzer = Analyzer(project, checks, init_keys, derive=derive, imports=imports, sparse=sparse, cancelled=cancelled)
            findings.extend(call_deep(analyzer.run))
        # (CUD003 walks each imported module's top level through the calls it makes: a chain of calls
        # across 4,000 generated modules exceeded the default stack there too)
        findings.extend(call_roomy(project_checks, analyzer, config.enabled, catalogue))
        by_path = {m.path: m for m in modules}
        kept = [
            f
            for f in findings
            if config.enabled(f.code)
            and not (noqa and suppressed(f, by_path.get(f.path)))
            and not _per_file_ignored(f, config)
        ]
        if cache is not None:  # before the files' directives, which no summary holds
            for key in (loaded.summary_key, loaded.lean_key):
                if key:
                    cache.put_run(key, sorted(kept, key=Finding.sort_key))
        if kept:  # `# cudalint: noqa` silences a whole file; flake8 does not know it, so it applies there too
            from cudalint.engine.suppress import apply_file_directives

            kept = apply_file_directives(kept, texts, {p: nb.original for p, nb in notebooks.items()})
        if notebooks:
            kept = [_map_notebooks(f, notebooks) for f in kept]
        kept.sort(key=Finding.sort_key)
        if cache is not None and loaded.run_key:
            cache.put_run(loaded.run_key, kept)
        return LintResult(findings=tuple(kept), files=count)
    finally:
        loaded.settle()  # (the workers write their cache entries while this analyzes)


def _import_analysis() -> None:
    """The analysis's modules, imported while the workers summarize (cudalint.engine.runner.load_files):
    after them, this process imported them alone while the other cores idled (lightning: 35 ms of
    the serial part of a cold run, which flake8's main process waits for too)."""
    import cudalint.analysis.callgraph  # noqa: F401
    import cudalint.analysis.flow  # noqa: F401
    import cudalint.checks.import_time  # noqa: F401
    import cudalint.checks.llama  # noqa: F401
    import cudalint.core.project  # noqa: F401
    import cudalint.engine.heap  # noqa: F401


def _fingerprints(paths: Sequence[str]) -> str:
    """The bytes of the files that go around the runner (notebooks), for the whole-run cache key."""
    if not paths:
        return ""
    from cudalint.digest import hasher
    from cudalint.inputs import source  # (the file reader: a run the cache answers whole without notebooks reads no file)

    h = hasher()
    for path in paths:
        data = source.read_bytes(path)
        h.update(path.encode("utf-8", "surrogateescape") + b"\0" + (data if isinstance(data, bytes) else b"?"))
    return h.hexdigest()


def _per_file_ignored(finding: Finding, config: Config) -> bool:
    if not config.per_file_ignores:
        return False
    import fnmatch

    path = finding.path.replace(os.sep, "/")
    absolute = os.path.abspath(finding.path).replace(os.sep, "/")  # patterns from a config file are anchored
    for pattern, codes in config.per_file_ignores:
        pattern = pattern.replace(os.sep, "/")
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(os.path.basename(path), pattern) or fnmatch.fnmatch(absolute, pattern):
            if any(finding.code.startswith(c) for c in codes):
                return True
    return False
