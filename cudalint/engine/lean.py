"""Summaries without the thread model's events, for a project in which no llama.cpp context can exist.

The thread model (cudalint.analysis.threads) is the only reader of these events, and it runs only
when some module makes a llama.cpp context (`ModuleIR.makes_llama`: cudalint.checks.llama). On vllm
they were 36 % of the events and 28 % of the memory the run's 2,740 summaries held (323 -> 232 MB,
measured with a deep `sys.getsizeof`), and the flow engine stepped over every one of them.

`load_files` strips each summary as it arrives while no module seen so far makes a context, and
puts back the full summaries (from the cache, or summarized again) when one turns up later: the
analysis then reads exactly what it read before. The cache always holds full summaries, and the
summaries a touched file is compared by (cudalint.engine.run_keys.summary_names) are full ones.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from cudalint.core.deep import call_roomy
from cudalint.core.ir import ModuleIR

from cudalint.summary.thread_free import THREAD_ONLY, strip  # noqa: F401  (THREAD_ONLY: re-exported for the tests)

if TYPE_CHECKING:
    from cudalint.core.catalogue import Catalogue
    from cudalint.engine.fileinfo import FileInfo


# catalogue id -> (the catalogue, its makers' library names and their word-bounded pattern): once per
# catalogue in a long-lived process, as cudalint.summary.summarize._tables
_MAKERS: dict = {}


def _maker_words(catalogue: "Catalogue") -> tuple:
    raw = sorted({a.name.split(".", 1)[0].encode() for a in catalogue.apis if a.get("llama_context")})

    def found(data: bytes) -> bool:  # (compiled where a name first turns up: most runs never need it)
        import re

        return re.search(rb"\b(?:" + b"|".join(map(re.escape, raw)) + rb")\b", data) is not None

    return raw, found


def may_make_context(infos: "Sequence[FileInfo]", catalogue: "Catalogue") -> bool:
    """Whether one of these files names a library that makes llama.cpp contexts (the first name of a
    catalogued maker: `llama_cpp`, `gpt4all`, `langchain_community`): then summaries are made whole
    from the start. A module that makes one imports it, or imports a module of the project that
    does (then that one names it). A prediction only: a lean summary still says exactly whether its
    module makes a context (`ModuleIR.makes_llama`), and one that does has every lean one made again
    whole (`repair`); the prediction spares a project that makes contexts that second summary of
    each file (a look through bytes the page cache holds)."""
    if not infos:
        return False
    from cudalint.inputs.source import read_bytes

    hit = _MAKERS.get(id(catalogue))
    if hit is None or hit[0] is not catalogue:
        hit = _MAKERS[id(catalogue)] = (catalogue, _maker_words(catalogue))
    raw, found = hit[1]
    if not raw:
        return False  # (no catalogued library makes one)
    for info in infos:
        data = info.text if info.text is not None else read_bytes(info.path)
        # (`in` first: the alternation with word bounds took 1.6 s over vllm's 50 MB, `in` 0.1 s)
        if isinstance(data, bytes) and any(w in data for w in raw) and found(data):
            return True
    return False


class Lean:
    """Strips the summaries `load_files` receives while no module makes a llama.cpp context; says
    which it stripped, so that they can be read again whole if one does."""

    def __init__(self, enabled: bool = True):
        self.on = enabled
        self.stripped: set[str] = set()

    def __call__(self, path: str, value: Any, hold: bool = False, stripped: bool = False) -> Any:
        """`value` stripped, unless a module makes a context; `hold`: not yet (it is compared whole
        with the file's earlier summary first); `stripped`: a worker stripped it already."""
        if type(value) is not ModuleIR:
            return value
        if value.makes_llama:
            self.on = False  # (the ones stripped so far are read again: `repair`)
        if stripped:
            self.stripped.add(path)
            return value
        if not self.on or hold:
            return value
        lean = call_roomy(strip, value)  # (600 nested `elif` arms: a block 600 deep)
        if lean is not value:
            self.stripped.add(path)
        return lean

    def repair(self) -> set[str]:
        """The paths whose full summaries the analysis needs again (a context can exist)."""
        return set() if self.on else set(self.stripped)
