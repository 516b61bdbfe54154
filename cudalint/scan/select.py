"""Which files need a syntax tree at all: a byte-level scan, then a closure over the import graph.

Most files of a large repository mention nothing the catalogue cares about. Such a file's summary
holds only structure (imports, calls of project functions, raise/return/loops), which matters to
other modules in just two ways, and the selection keeps exactly those files:

- upward: a module whose imports reach (transitively) a module with effects runs those effects in
  its own state, so it can produce findings (at the effect's line, with its own witness). It is
  parsed.
- downward: a function that may never return (it raises, loops forever, exits) cuts the caller's
  path short. A module that is imported (transitively) by a parsed one and mentions `raise`,
  `while` or an exiting call, or imports such a module, is parsed too.

Every other file is represented by an empty module (`stub`): it resolves like the real one, runs no
effects and returns normally, which is what its real summary would say. So prefiltered findings
equal the findings of a full analysis (tests/test_prefilter.py checks this on the fixtures and on
generated programs).

What makes a file a source of findings is narrower than "mentions the catalogue":
- a catalogue entry counts only when its call could match: a string glob in `match` ("cuda*",
  "*nvidia-smi*") needs its literal text in the file (or escapes/adjacent literals that could
  spell it); `os.environ` counts only with a write form (item assignment, update, setdefault, pop,
  clear, `|=`, del, an alias); an API counts as monkeypatched only next to an assignment or setattr;
- CUD004's sinks (`.to`, `torch.device`, `set_device`) count only when a source of the other
  numbering is in the file or below it in the import graph: labels flow from callees to callers;
- CUDA initialization counts for CUD003 only when the module's top level (class bodies, decorators,
  default values, and the local functions they call) reaches it, or calls into a module below
  which something initializes. This is found with CPython's `ast` (about a tenth of libcst's parse),
  which is also the syntax check of every file the selection skips.

The scan is deliberately coarse (a word in a comment counts), so it can only parse too much. What
it assumes about the summarizer: an effect comes from a catalogue entry whose last name (for
`X.__call__`/`X.__enter__`, the class name) appears as a word in the file, together with the
entry's top-level package, the file's own package (relative imports) or the package of a type some
present entry `returns`; a method entry (`x.cuda()`) needs `.name` in the text. A new kind of
event that does not come from the catalogue must be added to `_Triggers` (CUD010's reads and child
environments: the text `CUDA_VISIBLE_DEVICES`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable, Mapping


from cudalint.scan.callreach import _Calls, _down_closure, _Index, _up_closure

if TYPE_CHECKING:
    from cudalint.scan.scanner import Scan


PRECISE_MAX_FILES = 20_000  # past this many files, module by module (bounds the walk's memo tables; torch's 2,285 files: 2 s, 90 MB)


def _call_word(name: bytes, data: bytes, seen: dict) -> bool:
    key = b"(" + name
    hit = seen.get(key)
    if hit is None:
        hit = seen[key] = re.search(rb"(?<![\w])" + re.escape(name) + rb"\s*\(", data) is not None
    return hit  # type: ignore[return-value]


def select(scans: Mapping[str, Scan], modules: Mapping[str, str], judged: Iterable[str] = ("env_write",), precise: bool = True) -> set[str]:
    """The files (of `scans`, by path) that need a summary; `modules` maps each path to its module name.

    `judged`: the event kinds the enabled checks judge (plus "init" when CUD003 looks at modules
    that initialize CUDA when imported). A file whose effects may produce one is a source of findings.
    `precise`: follow the functions a top level calls into other modules (the scans' call graphs);
    False: every module below with an event of the kind counts.
    """
    if len(scans) > PRECISE_MAX_FILES:
        precise = False
    index = _Index(modules)
    edges = {path: index.targets(path, scan.imports) for path, scan in scans.items()}
    importers: dict[str, list[str]] = {}
    for path, targets in edges.items():
        for t in targets:
            importers.setdefault(t, []).append(path)
    judged = set(judged)
    kinds = _effective_kinds(scans, importers)
    want = _wanted(judged)
    calls = _Calls(index, scans, modules, kinds, importers, precise)
    # a judged event is reached from the code of its own module, of the modules whose code calls
    # (through any chain of functions) into it, and, when a module's top level reaches it, from
    # every module that imports that one (importing runs the top level)
    code: set[str] = set()  # whose functions may reach a judged event
    top: set[str] = set()  # whose top level may: it runs after the modules it imports
    own_top: set[str] = set()  # CUD003's: a module's own top level, without the modules it imports
    named: set[str] = set()  # importers CUD003 names: their summaries' import lines, nothing below
    for goal in [want] + ([{"init"}] if "init" in judged else []):
        has = {p for p, ks in kinds.items() if goal & ks}
        callers = _up_closure(has, importers)  # only an importer (at any distance) can call in
        reach = {p for p in callers if p in has or calls.reaches(p, scans[p].code_targets, goal)}
        on_import = {p for p in reach if goal & calls.gated(p, scans[p].top_kinds) or calls.reaches(p, scans[p].top_targets, goal)}
        if goal == {"init"}:
            # CUD003 judges a module someone imports by its own top level (cudalint.checks.import_time)
            for path in on_import:
                if path in importers:
                    own_top.add(path)
                    named.update(importers[path])
        else:
            code |= reach
            top |= _up_closure(on_import, importers)
    # the thread rules follow objects through modules with no catalogue word of their own (a setter
    # `def init_llm(m): global coach; coach = m`, a wrapper class) that thread or llama modules import
    relay = {t for p, ks in kinds.items() if ks & {"llama", "thread"} for t in edges.get(p, ())}
    if not calls.precise:
        return _select_coarse(scans, kinds, edges, importers, code | top | own_top) | named | relay
    return code | top | own_top | named | relay | calls.dependencies(code, top, own_top, edges)


def _wanted(judged: set[str]) -> set[str]:
    """The kinds that make a file a source of findings."""
    want = (judged - {"init"}) | {"*", "llama", "thread"}  # (the last two: CUD101/CUD102)
    if "gpu_index" in judged:
        want |= {"cuda_sink", "nvml_sink"}
    return want


# the kinds `_effective_kinds` keeps or drops after looking at the whole project
_PROJECT_WIDE = frozenset({"cuda_sink", "nvml_sink", "cuda_source", "thread"})


def surely_selected(kinds: Iterable[str], judged: Iterable[str]) -> bool:
    """Whether `select` chooses a file with these (its scan's) kinds whatever the other files hold:
    its own effects are judged. Known during the file's scan, so its summary can be made from the
    same syntax tree."""
    return not (set(kinds) - _PROJECT_WIDE).isdisjoint(_wanted(set(judged)))


def likely_selected(kinds: Iterable[str], imports: Iterable[str], modname: str) -> bool:
    """Whether `select` will probably choose a file whose scan found these kinds and imports: it
    has effects of some kind, or imports a module of its own package (which may have some, or
    import one that does). Summarizing such a file from the scan's syntax tree saves parsing it
    again, and one that is not chosen after all costs a summary nobody reads. Measured on the
    fetched trees (selection at 2955f37, CPU of one process): timm 151 files chosen of 249 guessed,
    1.14 s of parsing saved against 0.62 s of summaries made in vain; transformers 2,802 of 2,809;
    vllm 130 of 170 (1.10 s against 0.30 s); diffusers, deepspeed, lightning, ultralytics,
    accelerate, peft at most 3 in vain each; of the files chosen, at most 5 not guessed per tree."""
    if kinds:
        return True
    root = modname.partition(".")[0]
    return bool(root) and any(name == root or name.startswith(root + ".") for name in imports)


def _select_coarse(scans: Mapping[str, Scan], kinds: Mapping[str, set[str]], edges, importers, relevant: set[str]) -> set[str]:
    """Every module below a relevant one that may establish a fact or end a path, and the modules
    on the way to it (without the files' text to follow calls)."""
    matter = _up_closure((p for p, s in scans.items() if kinds[p] or s.may_stop), importers)
    out = set(relevant)
    todo = list(relevant)
    while todo:
        path = todo.pop()
        for t in edges.get(path, ()):
            if t in matter and t not in out:
                out.add(t)
                todo.append(t)
    return out


def _effective_kinds(scans: Mapping[str, Scan], importers: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """Each file's kinds, with CUD004's roles kept only where they can meet: a sink needs a source of
    the other numbering in its file or below it (a callee's return value); CUDA-ordinal sources
    (`.index`, `local_rank`) matter only when the project has an NVML sink at all; thread starts,
    locks and endpoints only when it has a llama.cpp context."""
    has = {role: {p for p, s in scans.items() if role in s.kinds} for role in ("nvml_source", "cuda_source", "nvml_sink")}
    # a value reaches a sink from a callee (its return value: the sink's module imports the source's)
    # or from a caller (an argument: the source's module imports the sink's)
    nvml_below = _up_closure(has["nvml_source"], importers) | _down_closure(has["nvml_source"], importers)
    cuda_sources = has["cuda_source"] if has["nvml_sink"] else set()
    cuda_below = _up_closure(cuda_sources, importers) | _down_closure(cuda_sources, importers)
    llama = any("llama" in s.kinds for s in scans.values())
    out: dict[str, set[str]] = {}
    for path, scan in scans.items():
        ks = set(scan.kinds)
        if "cuda_sink" in ks and path not in nvml_below:
            ks.discard("cuda_sink")
        if "nvml_sink" in ks and path not in cuda_below:
            ks.discard("nvml_sink")
        if not cuda_sources:
            ks.discard("cuda_source")
        if not llama:
            ks.discard("thread")
        out[path] = ks
    return out
