"""A cache of module summaries, keyed by file content, cudalint's version and the catalogue.

Like ruff's `.ruff_cache`: unchanged files are not parsed again, and their summaries serve the
cross-module analysis and the flake8 plugin alike. A summary is pickled under an allowlist of the
IR's classes (cudalint.engine.summary_codec: a change to one file reads every other summary back);
the index and the fixes are plain JSON, the whole-run findings as `--format json` writes them
(Finding.to_json, read back by Finding.from_json). The summaries are records appended to a pack of
the writing process's own (cudalint.core.cache_packs: creating a file per summary cost a cold run
more than encoding them); the other entries are files written atomically by
cudalint.core.cache_files. Every entry and record is signed: the cache is untrusted input, and one
that is missing, planted, damaged or of the wrong shape is a miss, never a changed result.
"""
from __future__ import annotations

import os
import sys

from cudalint import __version__
from cudalint.core import cache_files
from cudalint.digest import hasher, hex_digest
from cudalint.core.findings import Finding
from cudalint.fingerprint import code_fingerprint
from cudalint.fspath import clean

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing, 5 ms of a warm run: cudalint.entry)
if TYPE_CHECKING:  # (a run the cache answers whole imports neither: cudalint.core.catalogue_source)
    from typing import Optional, Union
    from cudalint.fspath import PathLike
    from cudalint.core.catalogue import Catalogue
    from cudalint.core.ir import ModuleIR

CACHE_DIR_NAME = ".cudalint_cache"
# 2: positional objects (cudalint.engine.serialize); 3: BLAKE2b names and signatures (cudalint.digest);
# 4: summaries pickled (cudalint.engine.summary_codec)
_FORMAT = "4"


def catalogue_fingerprint(catalogue: "Catalogue") -> str:
    """The catalogue decides what a summary contains, so it is part of every key: the digest of the
    files it was made from (the same as `catalogue_source.catalogue_digest` of them), else its entries."""
    if catalogue.digest:
        return catalogue.digest
    h = hasher()
    for api in catalogue.apis:
        h.update(repr(api).encode())
    for env in catalogue.env:
        h.update(repr(env).encode())
    return h.hexdigest()[:16]


def _index_key(path: str, absolute: Optional[str] = None) -> str:
    # summaries hold the path as it was given, so the same file named two ways has two entries
    return (absolute or os.path.abspath(path)) + "\0" + path


def _entry_shape(hit: object) -> bool:
    """An index entry as `Cache.remember` writes it: [mtime_ns, size, key, summary name, module name,
    lean summary name]."""
    return (
        isinstance(hit, list)
        and len(hit) == 6
        and type(hit[0]) is int
        and type(hit[1]) is int
        and cache_files.is_key(hit[2])
        and cache_files.is_key(hit[3])
        and isinstance(hit[4], str)
        and cache_files.is_key(hit[5])
    )


# the folders of summaries in forms this cudalint no longer reads (`Cache._file`): an upgrade left
# them behind (vllm's JSON summaries: 188 MB); a run that writes the index removes what of them
# cudalint wrote (cudalint.core.cache_files.remove_form; once they are gone, one `lstat`)
# (`v2`: one file per summary in `<2 hex>/` shards, until the packs of cudalint.core.cache_packs)
_OLD_FORMS = ("v1", "v2")


def lean_key(key: str) -> str:
    """Where the lean summary (cudalint.summary.thread_free) of the bytes `key` names is kept: apart
    from the whole one, which a run that needs the thread model's events must not take it for."""
    return hex_digest(b"lean\0" + key.encode("ascii"))


def named_summaries(root: PathLike) -> set[str]:
    """The keys of the summaries the indexes in `root` name, each index first rid of the entries of
    files that no longer exist (a file deleted or renamed: its entry would name its last summary for
    good); what cudalint.engine.cache_sweep keeps."""
    named: set[str] = set()
    try:
        names = os.listdir(os.path.join(os.fspath(root), "index"))
    except OSError:
        return named
    for name in names:
        if not name.endswith(".idx"):
            continue
        index = cache_files.read(root, f"index/{name}")
        if not isinstance(index, dict):
            continue
        kept = {where: hit for where, hit in index.items() if os.path.lexists(where.partition("\0")[0])}  # (`_index_key`)
        if len(kept) < len(index):
            cache_files.write_json(root, f"index/{name}", kept)
        for hit in kept.values():
            if _entry_shape(hit):
                named.update((hit[2], lean_key(hit[2])))
    return named


def default_cache_dir() -> str:
    env = os.environ.get("CUDALINT_CACHE_DIR")
    return clean(env) if env else os.path.join(os.getcwd(), CACHE_DIR_NAME)


class Cache:
    def __init__(self, directory: PathLike, salt: str) -> None:
        self.directory = directory
        self.salt = salt  # version + catalogue fingerprint
        self.hits = 0
        self.misses = 0
        self.runs_reused = 0
        self._index: Optional[dict] = None
        self._index_dirty = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}(directory={self.directory!r}, salt={self.salt!r})"

    @classmethod
    def open(cls, directory: Optional[PathLike], catalogue: "Catalogue") -> "Cache":
        return cls.for_digest(directory, catalogue_fingerprint(catalogue))

    @classmethod
    def for_digest(cls, directory: Optional[PathLike], catalogue_digest: str) -> "Cache":
        """The cache for the catalogue `catalogue_digest` names, which need not be loaded."""
        directory = directory or default_cache_dir()
        # (the Python too: each reads only its own grammar, and an older one reads a newer file
        # through cudalint.inputs.newsyntax, which may see less of it: a summary is its Python's)
        python = "py%d.%d" % sys.version_info[:2]
        return cls(directory=directory, salt=f"{_FORMAT}:{__version__}:{python}:{code_fingerprint()}:{catalogue_digest}")

    def key(self, path: str, modname: str, data: bytes) -> str:
        return self.make_key(self.salt, path, modname, data)

    @staticmethod
    def make_key(salt: str, path: str, modname: str, data: bytes) -> str:
        h = hasher()
        h.update(salt.encode())
        h.update(b"\0")
        h.update(path.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(modname.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(data)
        return h.hexdigest()

    def get(self, key: str) -> Optional[Union[ModuleIR, Finding]]:
        value = self._read(key)
        if value is None:
            self.misses += 1
            return None
        self.hits += 1
        return value

    def find(self, key: str) -> Optional[Union[ModuleIR, Finding]]:
        """`get`, where not finding it is no miss (a lean form may answer instead: `get_lean`)."""
        value = self._read(key)
        if value is not None:
            self.hits += 1
        return value

    def _read(self, key: str) -> Optional[Union[ModuleIR, Finding]]:
        from cudalint.core import cache_packs
        from cudalint.core.ir import ModuleIR
        from cudalint.engine import summary_codec

        payload = cache_packs.read(self.directory, cache_packs.SUMMARIES, key) if cache_files.is_key(key) else None
        try:
            value = summary_codec.loads(payload) if payload is not None else None
        except (ValueError, TypeError, KeyError, RecursionError, AttributeError):
            value = None
        return value if isinstance(value, (ModuleIR, Finding)) else None

    def get_lean(self, key: str) -> Optional[ModuleIR]:
        """The lean summary of the bytes `key` names, if one was kept (`put(..., lean=True)`); asked
        before the whole one, so not finding it is no miss."""
        from cudalint.core.ir import ModuleIR

        value = self._read(lean_key(key)) if cache_files.is_key(key) else None
        if type(value) is not ModuleIR:
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: Union[ModuleIR, Finding], lean: bool = False) -> None:
        """`lean`: `value` is a lean summary (cudalint.summary.thread_free), kept apart (`get_lean`)."""
        if not cache_files.is_key(key):
            return
        from cudalint.core import cache_packs
        from cudalint.engine import summary_codec

        try:
            payload = summary_codec.dumps(value)
        except (RecursionError, TypeError, ValueError):
            return  # an IR nested too deeply to pickle: the cache is an optimization, never a failure
        cache_packs.append(self.directory, cache_packs.SUMMARIES, lean_key(key) if lean else key, payload)

    def kept(self, key: str) -> Optional[tuple[Union[ModuleIR, Finding], bool]]:
        """The summary `key` as an earlier run of this process analyzed it, and whether it went
        through cudalint.engine.lean (then it has no thread events, and may lack some the whole one
        has): a long-lived process keeps them (the language server's MemoryCache); the files hold
        whole summaries only."""
        return None

    def keep(self, key: str, value: ModuleIR, stripped: bool) -> None:
        """`value`, the summary `key` as this run analyzed it, for a later run of this process (see
        `kept`); nothing to do for the files."""

    # ---------- the index: path -> (mtime_ns, size, key), like ruff's mtime check ---------------
    # An unchanged stat stands for unchanged bytes, so a warm run hashes nothing; a mismatch falls
    # back to reading and hashing the file. The index only names keys: entries stay content-keyed.
    def _index_file(self) -> str:
        return "index/" + hex_digest(self.salt.encode())[:16] + ".idx"

    def _read_json(self, name: str) -> dict:
        data = cache_files.read(self.directory, name)
        return data if isinstance(data, dict) else {}

    def _load_index(self) -> dict:
        if self._index is None:
            self._index = self._read_json(self._index_file())
        return self._index

    def _entry(self, path: str, absolute: Optional[str] = None) -> Optional[list]:
        """The index's [mtime_ns, size, key, summary name, module name] for `path` (`absolute`: its
        absolute path, when known), if it has that shape."""
        hit = self._load_index().get(_index_key(path, absolute))
        if _entry_shape(hit):
            return hit
        return None

    # A summary's name (cudalint.engine.run_keys): the key of the earliest bytes of this file whose
    # summary is known equal to the summary of the key recorded now. An edit that leaves the summary
    # as it was (a comment, a blank line at the end) keeps the name, and a run over the same names
    # reuses an earlier run's findings without reading a summary.
    # A lean summary's name (cudalint.summary.thread_free) is the same for the lean summaries: the
    # key of the earliest bytes known to summarize the same once stripped. Summaries with one name
    # have one lean name (the old one's is taken with its name); two with one lean name may differ in
    # the thread model's events, so a run that reads them is named by lean names only when no
    # module makes a llama.cpp context (cudalint.engine.run_keys.LEAN).
    def names(self, path: str) -> tuple[Optional[str], Optional[str]]:
        """(summary name, lean summary name), with one look at the index."""
        hit = self._entry(path)
        return (hit[3], hit[5]) if hit is not None else (None, None)

    def previous(self, path: str) -> Optional[tuple[str, str, str]]:
        """(key, summary name, lean summary name) the index records for `path`, whatever its stamp says."""
        hit = self._entry(path)
        return (hit[2], hit[3], hit[5]) if hit is not None else None

    def name_summary(self, path: str, key: str, name: Optional[str], lean_name: str) -> None:
        """Record that the summary of `key` (the key the index has for `path`) is the one `name` names
        (None: not known), and its lean form the one `lean_name` names."""
        hit = self._entry(path)
        if hit is None or hit[2] != key:
            return
        for at, value in ((3, name), (5, lean_name)):
            if value is not None and cache_files.is_key(value) and hit[at] != value:
                hit[at] = value
                self._index_dirty = True

    def lookup(self, path: str, modname: str, absolute: Optional[str] = None) -> Optional[str]:
        """The key recorded for `path` if its mtime and size are unchanged and it was recorded under
        the module name `modname`. A key names the bytes AND the module name (`make_key`), and a file's
        stamp vouches for its bytes only: the name comes from the `__init__.py` files above it, which
        may have come or gone while the file stayed as it was (a stale key would give the summary of
        a module that no longer exists, cudalint.core.modnames.module_name)."""
        hit = self._entry(path, absolute)
        if hit is None or hit[4] != modname:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        if [st.st_mtime_ns, st.st_size] != hit[0:2]:
            return None
        return hit[2]

    def remember(self, path: str, modname: str, stamp: tuple[int, int], key: str) -> None:
        """Record the file's key (of its bytes under the module name `modname`)."""
        index = self._load_index()
        old = index.get(_index_key(path))
        same = _entry_shape(old) and old[2] == key
        index[_index_key(path)] = [stamp[0], stamp[1], key, old[3] if same else key, modname, old[5] if same else key]
        self._index_dirty = True

    def save_index(self) -> None:
        if self._index_dirty:
            for folder in _OLD_FORMS:
                cache_files.remove_form(self.directory, folder)
            # another run sharing the cache may have written entries for other paths meanwhile
            mine = self._index or {}
            merged = self._read_json(self._index_file())
            merged.update(mine)
            self._index = merged
            self._write(self._index_file(), merged)
            self._index_dirty = False
            from cudalint.engine.cache_sweep import sweep_if_due

            sweep_if_due(self.directory, named_summaries)

    # ---------- whole-run results: findings for a set of keys and a configuration -----------------
    @staticmethod
    def _run_file(key: str) -> str:
        return f"runs/{key}.run"

    # (the findings as `--format json` writes them, Finding.to_json: every run the cache answers
    # whole reads one, and the generic decoder, cudalint.engine.serialize, with typing, was 6 ms of it)
    def get_run(self, key: str) -> Optional[list[Finding]]:
        """The findings an earlier run with this exact input reported (decoded and checked)."""
        rows = cache_files.read(self.directory, self._run_file(key)) if cache_files.is_key(key) else None
        if type(rows) is not list:
            return None
        try:
            findings = [Finding.from_json(row) for row in rows]
        except ValueError:
            return None
        self.runs_reused += 1
        return findings

    def put_run(self, key: str, findings: list[Finding]) -> None:
        if cache_files.is_key(key):
            self._write(self._run_file(key), [f.to_json() for f in findings])

    # ---------- proven fixes (cudalint.fixes.fix_cache): plain JSON, shape-checked by the reader ----------
    def get_fixes(self, key: str) -> object:
        return cache_files.read(self.directory, f"fixes/{key}.json") if cache_files.is_key(key) else None

    def put_fixes(self, key: str, value: list) -> None:
        if cache_files.is_key(key):
            self._write(f"fixes/{key}.json", value)

    def _write(self, name: str, value: object) -> None:
        cache_files.write_json(self.directory, name, value)
