"""One project as the language server keeps it: settings, file list, summaries in memory.

An analysis lints the whole project with the editor's open buffers in place of the files on disk
(`texts`), so a change in one module re-judges every open document that depends on it. Summaries
are keyed by content: a buffer whose text was summarized before (or a file on disk that did not
change) is not summarized again; the summaries live in memory in front of the on-disk cache the
CLI shares. Nothing here talks LSP (cudalint.server.protocol does).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Optional, Union

from cudalint.engine.cache import Cache
from cudalint.core.findings import Finding
from cudalint.core.ir import ModuleIR

MEMORY_ENTRIES = 20000  # summaries kept in memory (a few KB each): bounded for a very large project


class MemoryCache(Cache):
    """The summary cache with decoded summaries kept in memory (LRU by insertion), each as the last
    analysis used it: stripped of the thread model's events while no module makes a llama.cpp
    context (cudalint.engine.lean), so an edit neither strips them again nor holds them twice, and
    the first analysis (worker processes) leaves them here too. benchmarks/lsp_bench.py on vllm: the
    first edit after a cold open 9.3 -> 3.0 s (it read 3,231 summaries back from the files), a new
    definition 3.5 -> 3.0 s, peak memory 559 -> 369 MB. `get` answers whole summaries only, as the
    files do; `kept` answers either, saying which."""

    def __init__(self, directory: "str | os.PathLike[str]", salt: str) -> None:
        super().__init__(directory, salt)
        self._memory: dict = {}  # key -> (summary or CUD900 finding, stripped)

    def get(self, key: str) -> Optional[Union[ModuleIR, Finding]]:
        hit = self._memory.get(key)
        if hit is not None and not hit[1]:
            self.hits += 1
            return hit[0]
        value = super().get(key)
        if value is not None:
            self._remember(key, value, False)
        return value

    def put(self, key: str, value: Union[ModuleIR, Finding], lean: bool = False) -> None:
        self._remember(key, value, lean)
        super().put(key, value, lean)

    def kept(self, key: str) -> Optional[tuple[Union[ModuleIR, Finding], bool]]:
        hit = self._memory.get(key)
        if hit is not None:
            self.hits += 1
        return hit

    def keep(self, key: str, value: ModuleIR, stripped: bool) -> None:
        self._remember(key, value, stripped)

    def _remember(self, key: str, value, stripped: bool) -> None:
        if key not in self._memory and len(self._memory) >= MEMORY_ENTRIES:
            self._memory.pop(next(iter(self._memory)))
        self._memory[key] = (value, stripped)


@dataclass(frozen=True)
class Settings:
    config: object  # cudalint.inputs.config.Config
    path: Optional[str]  # the settings file, if any
    stamp: Optional[tuple[int, int]]  # its (mtime_ns, size) when read
    error: Optional[str] = None  # a settings file cudalint cannot use: shown, defaults used


def _stamp(path: "Optional[str | os.PathLike[str]]") -> Optional[tuple[int, int]]:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class Project:
    """Thread-safe: the protocol's worker thread analyzes while the message loop records edits."""

    def __init__(self, root: Path, cache_dir: Optional[Path] = None):
        self.root = root
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._settings: Optional[Settings] = None
        self._files: Optional[tuple[str, ...]] = None
        self._catalogue = None
        self._cache: Optional[MemoryCache] = None
        self._warm = False

    # ---- settings, reloaded when the file changes ----
    def settings(self) -> Settings:
        from cudalint.inputs.settings import SettingsError, find_pyproject, resolve

        current = self._settings
        candidate = find_pyproject(self.root / "__cudalint_probe__.py")
        if current is not None and current.path == candidate and current.stamp == _stamp(candidate):
            return current
        from cudalint.inputs.config import Config

        try:
            config, path = resolve([str(self.root / "x.py")], str(candidate) if candidate else None)
            settings = Settings(config, path, _stamp(path))
        except SettingsError as exc:
            settings = Settings(Config(), candidate, _stamp(candidate), error=str(exc))
        if current is None or settings.config != current.config:
            self._catalogue = None
            self._cache = None
            self._files = None
        self._settings = settings
        return settings

    def catalogue(self):
        if self._catalogue is None:
            from cudalint.core.catalogue import load_catalogue

            self._catalogue = load_catalogue(self.settings().config.extend_catalogue)
        return self._catalogue

    def cache(self) -> MemoryCache:
        if self._cache is None:
            from cudalint.engine.cache import CACHE_DIR_NAME

            directory = self.cache_dir or Path(os.environ.get("CUDALINT_CACHE_DIR") or self.root / CACHE_DIR_NAME)
            base = Cache.open(directory, self.catalogue())
            self._cache = MemoryCache(directory=base.directory, salt=base.salt)
        return self._cache

    def files(self) -> tuple[str, ...]:
        if self._files is None:
            from cudalint.inputs.discover import discover

            config = self.settings().config
            self._files = discover(
                [str(self.root)], exclude=config.exclude + config.extend_exclude, respect_gitignore=config.respect_gitignore
            ).files
        return self._files

    def forget_files(self) -> None:
        """A file was created, deleted or renamed: list the project again at the next analysis."""
        self._files = None

    # ---- analysis ----
    def analyze(self, texts: Mapping[str, str], cancelled: Optional[Callable[[], bool]] = None) -> dict[str, list[Finding]]:
        """Findings by (absolute) path for the open documents `texts` (path -> buffer text).
        `cancelled`: asked between the analysis's walks; True ends it (cudalint.analysis.flow.Cancelled)."""
        from cudalint.api import lint_files

        with self._lock:
            settings = self.settings()
            files = list(self.files())
            known = {os.path.normpath(p) for p in files}
            files.extend(p for p in texts if os.path.normpath(p) not in known and p.endswith((".py", ".pyi")))
            # the first analysis summarizes the whole project: worker processes; later ones re-summarize
            # a buffer or two, which a process pool would only slow down
            jobs = None if not self._warm else 1
            result = lint_files(files, settings.config, self.catalogue(), cache=self.cache(), texts=dict(texts), jobs=jobs, cancelled=cancelled)
            self._warm = True
            by_path: dict[str, list[Finding]] = {os.path.normpath(p): [] for p in texts}
            for f in result.findings:
                key = os.path.normpath(f.path)
                if key in by_path:
                    by_path[key].append(f)
            return by_path

    def fixes(self, findings: list[Finding], texts: Mapping[str, str]) -> dict:
        """The proven fixes of these findings (cudalint.fixes.fixinfo), with the open buffers in place."""
        from cudalint.fixes.fixinfo import fixes_for

        with self._lock:
            files = list(self.files())
            return fixes_for(findings, files, self.settings().config, dict(texts), cache=self.cache())


class Projects:
    """The projects of the open documents, each found as the CLI finds a named file's project."""

    def __init__(self, cache_dir: Optional[Path] = None):
        self.cache_dir = cache_dir
        self._by_root: dict[Path, Project] = {}

    def of(self, path: str) -> Project:
        from cudalint.named import project_of

        root = Path(project_of(path))
        if root not in self._by_root:
            self._by_root[root] = Project(root, self.cache_dir)
        return self._by_root[root]

    def all(self) -> list[Project]:
        return list(self._by_root.values())
