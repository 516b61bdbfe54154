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

import ast
import bisect
import re
import warnings
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping, Optional

from cudalint.catalogue import Catalogue

_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# `from .x import (a, b)` / `import a.b as c, d`: over-approximate (strings and comments count too)
_FROM = re.compile(rb"\bfrom[ \t]+(\.*)[ \t]*([A-Za-z_][\w.]*|)[ \t]+import[ \t]*(\([^)]*\)|[^\n;#]*)")
_IMPORT = re.compile(rb"import[ \t]+([^\n;#]*)")
_CHAIN_TAIL = re.compile(rb"((?:[ \t]*\.[ \t]*[A-Za-z_]\w*)+)")
_NAME_OR_DOT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_ALIAS = re.compile(rb"([A-Za-z_][\w.]*)(?:[ \t]+as[ \t]+([A-Za-z_]\w*))?")
# an exiting call, `raise`, or `while True:` may end a path inside a function
_STOP_WORDS = frozenset({b"raise", b"while"})
_DUNDER = re.compile(r"^__\w+__$")
# what a catalogue effect contributes to a file's scan: CUD004's four label roles are kept apart,
# effects that only describe a call's result contribute nothing, the rest is "*" (judged somewhere)
_LABEL_KINDS = {
    "cuda_ordinal_sink": "cuda_sink",
    "nvml_index_sink": "nvml_sink",
    "nvml_index_source": "nvml_source",
    "index_attribute": "nvml_source",
    "cuda_ordinal_source": "cuda_source",
}
# (`unless_env`/`when_env` qualify an entry's `init`, which brings its own kind; `gpu_presence` marks
# the APIs CUD008 names, found through the monkeypatch kind: as "*" they made 25 of timm's files judged)
# (`child_args`/`env_arg` say what a child's work / environment is given, `child_uses_cuda` and the
# `spawn_seen_init`/`spawn_when_env` lists qualify a library's own fork; they ride on entries whose `child_work`/`starts_process` bring their kind)
_NO_KIND = frozenset({"returns", "exits", "ordinal_map", "index_container", "output_file", "unless_env", "when_env", "gpu_presence", "child_args", "env_arg", "child_uses_cuda", "spawn_seen_init", "spawn_when_env"})
# CUD101/CUD102 look at threads only around a llama.cpp context: without one in the project, thread
# starts, locks and web endpoints produce nothing
_LLAMA = frozenset({"llama_context", "touches_context", "streams", "gpu_offload", "concurrent_use", "concurrent_limit", "concurrent_inputs"})
_THREAD = frozenset({"workers", "executor", "starts_thread", "thread_target", "thread_many", "thread_waits", "lock", "lock_count", "endpoint", "concurrency", "singleton"})
# the write forms of the environment mapping the summarizer knows (cudalint.summarize: assign_target,
# env_call, `|=`, del, aliases); `from os import environ as e` makes every `e[...] = ` one
_ENV_WRITE = re.compile(
    rb"environ\s*\[[^\]\n]*\]\s*(?:=(?!=)|\|=)"
    rb"|environ\s*\.\s*(?:update|setdefault|pop|popitem|clear|__setitem__|__delitem__)\b"
    rb"|environ\s*\|="
    rb"|\bdel\b[^\n]*environ"
    rb"|(?:=|:=|\bas)\s*(?:[\w.]*\.)?environ\b(?!\s*[.\[(])"
    rb"|environ\s+as\b"
)
_ENV_ALIAS = re.compile(rb"(?:=|:=|\bas)\s*(?:[\w.]*\.)?environ\b(?!\s*[.\[(])|environ\s+as\b")
# spellings that put text into a string value without writing it out: escapes, and adjacent
# literals / f-string placeholders that the summarizer's `literal` joins
_ESCAPE = re.compile(rb"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]*\})")
_JOINER = re.compile(
    rb"[\"'](?:[ \t\r\n\\]|#[^\n]*\n)*[rRbBuUfF]{0,2}[\"']"  # (one way to match: no backtracking blow-up)
    rb"|\{[ \t]*[rRbBuU]{0,2}[\"']"
    rb"|[\"'][ \t]*\}"
)
SCAN_FIELDS = 13
_EMPTY: Mapping = MappingProxyType({})  # immutable: a dataclass default
PRECISE_MAX_FILES = 20_000  # past this many files, module by module (bounds the walk's memo tables; torch's 2,285 files: 2 s, 90 MB)


@dataclass(frozen=True)
class Scan:
    """What the scan learned about one file (plain data: cached with the summary)."""

    kinds: tuple[str, ...]  # event kinds its catalogue effects may produce ("*": judged; CUD004 roles); () = none
    may_stop: bool  # may contain a path that never returns (raise, while, an exiting call)
    imports: tuple[str, ...]  # absolute module names it may import or reach by attribute
    top_kinds: tuple[str, ...] = ("*",)  # the kinds its top level (and the local functions it calls) may produce
    top_targets: tuple[str, ...] = ()  # names of other modules its top level may call
    code_targets: tuple[str, ...] = ()  # names of other modules any of its code may call
    func_imports: tuple[str, ...] = ()  # modules its functions import
    # the call graph of its functions and classes, for cudalint.prefilter._Calls (no tree needed there):
    table: tuple[str, ...] = ()  # dotted names of other modules its code may call; the ints below index it
    names: Mapping[str, list] = field(default_factory=dict)  # imported local name -> the dotted names it may stand for
    stars: tuple[str, ...] = ()  # modules it star-imports
    defs: Mapping[str, list] = field(default_factory=dict)  # function or class name -> [its own kinds, imports, local names it mentions, dotted names]
    stops: Mapping[str, object] = field(default_factory=dict)  # "" (top level), "f", "C", "C.m" -> 1 never returns; [dotted names, keys] if one of them never returns; absent: returns
    syntax_ok: bool = True  # CPython's parser accepts it (a skipped file then needs nothing more)


@dataclass(frozen=True)
class _Clause:
    kind: str  # the event kind a match may produce
    root: str  # "" when any file qualifies (builtins)
    words: tuple[bytes, ...]  # all must appear
    needs: tuple[bytes, ...] = ()  # literal text its `match` globs need in a string value
    keywords: tuple[bytes, ...] = ()  # keyword arguments its `match` needs (`device=`)
    called: bytes = b""  # b"module.name": `name` must appear called (`module.name(`, `name(`, an alias)
    qualified: str = ""  # ... and when the file's imports are known, called by this qualified name
    int_first: bool = False  # ... with a first argument that is not a string literal
    makers: tuple[bytes, ...] = ()  # a method of a returned type: one of the calls returning it
    module: str = ""  # an `import` entry: the module, which the file must import
    call_word: bytes = b""  # a judged method of some receiver (`ctx.Pool(...)`): `name(` must appear


class _Triggers:
    def __init__(self, catalogue: Catalogue):
        clauses: list[_Clause] = []
        stops: set[bytes] = set()
        methods: dict[str, set[str]] = {}  # method name -> kinds
        method_needs: dict[str, tuple[bytes, ...]] = {}
        # word of an entry with `returns` -> (its root, the words its name needs, the type's root)
        returns: dict[bytes, set[tuple[str, tuple[bytes, ...], str]]] = {}
        patched: set[bytes] = set()
        patched_members: set[bytes] = set()  # `Class.method` entries: the receiver is an instance
        returned = {api.get("returns") for api in catalogue.apis if api.get("returns")}
        makers: dict[str, tuple[bytes, ...]] = {}  # returned type -> last words of the calls returning it
        for api in catalogue.apis:
            if api.get("returns"):
                # (the class itself makes instances too: `llama_cpp.Llama(...)` next to `Llama.from_pretrained`)
                ret = api.get("returns")
                makers[ret] = tuple(sorted(set(makers.get(ret, ())) | {_word_of(api.name).encode(), ret.rsplit(".", 1)[-1].encode()}))
        for api in catalogue.apis:
            if api.kind == "probe":
                continue
            effects = {k for k, _ in api.effects}
            if api.get("returns"):
                last = _word_of(api.name)
                if last:
                    need = tuple(w.encode() for w in _name_words(api, returned) if w)
                    returns.setdefault(last.encode(), set()).add((api.name.split(".")[0], need, api.get("returns").split(".")[0]))
            if api.get("exits"):
                stops.add(api.name.rsplit(".", 1)[-1].encode())
            kinds = set()
            if api.initializes:
                kinds.add("init")
            if api.init is not None and api.kind == "call" and not api.is_glob:
                kinds.add("monkeypatch")  # `torch.cuda.is_available = ...`
                patched.add(_word_of(api.name).encode())
                if any(p[:1].isupper() for p in api.name.split(".")[:-1]):
                    patched_members.add(_word_of(api.name).encode())
            for effect in effects - _NO_KIND:
                if effect == "env_mapping":
                    kinds.add("env")
                elif effect in _LLAMA:
                    kinds.add("llama")
                elif effect in _THREAD:
                    kinds.add("thread")
                else:
                    kinds.add(_LABEL_KINDS.get(effect, "*"))
            if not kinds:
                continue  # produces no event of its own
            needs = tuple(sorted({c for _slots, pattern in api.match for c in _chunks(pattern)}))
            keywords = tuple(sorted({slots[0].encode() for slots, pattern in api.match if len(slots) == 1 and not slots[0].isdigit() and pattern != "<none>"}))
            if api.kind == "method":
                for kind in kinds:
                    methods.setdefault(api.name, set()).add(kind)
                # entries of one method name: the weakest needs (an entry without any) win
                method_needs[api.name] = needs if method_needs.get(api.name, needs) == needs else ()
                continue
            parts = api.name.split(".")
            root = parts[0]
            words = _name_words(api, returned)
            # an initializing call is a call: `torch.device` in a type hint is not one; so is a judged
            # effect of a module's function (the summarizer makes its events at calls only:
            # cudalint.summarize.call_effects): `platform.system()` is not `os.system`, nor a name
            # in transformers' lazy-import table a call of `enable_full_determinism`
            called, qualified, int_first = b"", "", False
            typ = max((t for t in returned if api.name.startswith(t + ".")), key=len, default="")
            # a method of an instance (`Class.method`, or of a type some call returns) is called on
            # any receiver; everything else is called by a name the imports qualify
            member = any(p[:1].isupper() for p in parts[:-1]) or any(api.name.startswith(t + ".") for t in returned)
            if api.kind == "call" and not api.is_glob and parts[-1] == "__enter__" and len(parts) > 2:
                called = b"%s.%s" % (parts[-3].encode(), parts[-2].encode())  # `with X(...):`
                qualified = "" if any(p[:1].isupper() for p in parts[:-2]) else ".".join(parts[:-1])
            elif api.kind == "call" and not api.is_glob and not _DUNDER.match(parts[-1]) and len(parts) > 1:
                # torch.device(<int>): a first argument that is a string literal is not an int
                int_first = any("0" in slots and pattern == "<int>" for slots, pattern in api.match)
                called = b"%s.%s%s" % (parts[-2].encode(), parts[-1].encode(), b"(int" if int_first else b"")
                qualified = "" if member else api.name
            elif api.kind == "call" and api.is_glob and not member and len(parts) > 1 and not any(ch in parts[0] for ch in "*?["):
                qualified = api.name  # `torch.*`: some call qualified into the package
            for kind in sorted(kinds):
                clauses.append(
                    _Clause(
                        kind,
                        "" if root in ("builtins", "*") else root,
                        tuple(w.encode() for w in words if w),
                        needs if kind != "monkeypatch" else (),
                        keywords if kind != "monkeypatch" else (),
                        called if kind == "init" or (kind == "*" and not member) else b"",
                        qualified if kind == "init" or (kind == "*" and not member) else "",
                        int_first,
                        makers.get(typ, ()) if typ else (),
                        api.name if api.kind == "import" else "",
                        parts[-1].encode() if kind == "*" and member and api.kind == "call" and not api.is_glob and not _DUNDER.match(parts[-1]) else b"",
                    )
                )
        for env in catalogue.env:
            if env.frozen_by.startswith("import:"):
                module = env.frozen_by.split(":", 1)[1]
                parts = module.split(".")
                clauses.append(_Clause("import_lib", parts[0], tuple(p.encode() for p in parts[1:])))
        self.clauses = tuple(clauses)
        # clause positions by one word each needs (all must appear): a text looks at its own words' only
        self.by_word: dict[bytes, list[int]] = {}
        self.always: list[int] = []
        for i, c in enumerate(self.clauses):
            if c.words:
                self.by_word.setdefault(c.words[-1], []).append(i)
            else:
                self.always.append(i)
        self.word_keys = frozenset(self.by_word)
        self.methods = {name.encode(): (tuple(sorted(k)), method_needs.get(name, ())) for name, k in methods.items()}
        self.stops = frozenset(stops | _STOP_WORDS)
        self.exits = frozenset(stops)  # the last names of calls that end the process
        self.returns = {k: frozenset(v) for k, v in returns.items()}
        self.method_re = re.compile(rb"\.\s*(" + b"|".join(re.escape(m.encode()) for m in sorted(methods)) + rb")\s*\(") if methods else None
        # `torch.cuda.is_available = f` (an attribute: a plain name is a new binding); setattr(...) as a word
        self.patch_re = (
            re.compile(rb"(?:^|;)[ \t]*([A-Za-z_]\w*)(?:\s*\.\s*[A-Za-z_]\w*)*\s*\.\s*(" + b"|".join(re.escape(w) for w in sorted(patched)) + rb")\s*(?::[^=\n]*)?=(?!=)", re.M)
            if patched
            else None
        )
        self.patched = frozenset(patched)
        self.patched_members = frozenset(patched_members)

    def _assigns_api(self, data: bytes, heads: Optional[frozenset]) -> bool:
        """`torch.cuda.is_available = f`: an attribute of an imported name (`self.device = d` is not)."""
        for m in self.patch_re.finditer(data):  # type: ignore[union-attr]
            if heads is None or m.group(1) in heads or m.group(2) in self.patched_members:
                return True
        if b"setattr" in data:  # setattr(torch.cuda, "is_available", f)
            for m in _SETATTR.finditer(data):
                # the summarizer needs the attribute's name as a literal
                if m.group(2) in self.patched and (heads is None or m.group(1) in heads or m.group(2) in self.patched_members):
                    return True
        return False

    @staticmethod
    def _is_called(clause: "_Clause", data: bytes, seen: dict, bases: Optional[Mapping[bytes, tuple[str, ...]]]) -> bool:
        if clause.qualified and bases is not None:
            calls = seen.get(b"")
            if calls is None:
                calls = seen[b""] = _qualified_calls(data, bases)
            elif callable(calls):
                calls = seen[b""] = calls()  # given lazily: most texts never need it
            if any(ch in clause.qualified for ch in "*?["):
                import fnmatch

                return any(fnmatch.fnmatchcase(name, clause.qualified) for name in calls)
            hit = calls.get(clause.qualified)
            return hit is not None and (hit or not clause.int_first)
        return not clause.called or _called(clause.called, data, seen)

    def kinds(
        self,
        words: frozenset,
        data: bytes,
        own_root: str,
        root_words: Optional[frozenset] = None,
        only: Optional[str] = None,
        heads: Optional[frozenset] = None,
        bases: Optional[Mapping[bytes, tuple[str, ...]]] = None,
        imported: Optional[frozenset] = None,
        qcalls: Optional[object] = None,  # the text's qualified calls, or a function returning them
        strings: Optional["_Strings"] = None,
    ) -> tuple[str, ...]:
        """The event kinds the file's catalogue effects may produce.

        `words`/`data`: the text the entries' names must appear in; `root_words`: the words of the
        whole file (where imports of the entries' packages are), by default `words`; `heads`: the
        names the file imports (None: unknown, e.g. a star import); `bases`: what each imported
        name stands for (cudalint.prefilter._imports), None when unknown; `imported`: the modules
        the file imports (None: unknown)."""
        root_words = words if root_words is None else root_words
        roots = {own_root.encode()} if own_root else set()
        # the package of a type a present entry returns, when that entry's own package is reachable
        grew = True
        while grew:
            grew = False
            for word, pairs in self.returns.items():
                if word in root_words:
                    for entry_root, need, type_root in pairs:
                        t = type_root.encode()
                        if t in roots or not all(w in root_words for w in need):
                            continue
                        if entry_root.encode() in root_words or entry_root.encode() in roots:
                            roots.add(t)
                            grew = True
        strings_of = _Strings(data) if strings is None else strings
        patched = self.patch_re is not None and self._assigns_api(data, heads)
        kinds: set[str] = set()
        seen_calls: dict[bytes, object] = {} if qcalls is None else {b"": qcalls}
        candidates = set(self.always)
        for w in words & self.word_keys:
            candidates.update(self.by_word[w])
        for i in sorted(candidates):
            clause = self.clauses[i]
            if (only is not None and clause.kind != only) or clause.kind in kinds:
                continue
            if clause.root and clause.root.encode() not in root_words and clause.root.encode() not in roots:
                continue
            if clause.kind == "monkeypatch" and not patched:
                continue
            if clause.module and imported is not None and clause.module not in imported:
                continue
            if (
                all(w in words for w in clause.words)
                and (not clause.makers or any(w in root_words for w in clause.makers))
                and strings_of.may_hold(clause.needs)
                and all(_keyword(k, data, seen_calls) for k in clause.keywords)
                and (not (clause.called or clause.qualified) or self._is_called(clause, data, seen_calls, bases))
                and (not clause.call_word or _call_word(clause.call_word, data, seen_calls))
            ):
                kinds.add(clause.kind)
        if self.method_re is not None:
            for name in {m.group(1) for m in self.method_re.finditer(data)}:  # x.cuda(), x.to("cuda")
                mkinds, needs = self.methods[name]
                if strings_of.may_hold(needs):
                    kinds.update(k for k in mkinds if only is None or k == only)
        if "env" in kinds:
            kinds.discard("env")
            if _ENV_WRITE.search(data):
                kinds.add("*")
        if only in (None, "*") and b"CUDA_VISIBLE_DEVICES" in data:
            # CUD010: a child's environment gets it (`dict(os.environ, CUDA_VISIBLE_DEVICES=...)`), or
            # code reads this process's own (a fact its callers' paths need: cudalint.child_env)
            kinds.add("*")
        return tuple(sorted(kinds))


def _called(spec: bytes, data: bytes, seen: dict[bytes, bool]) -> bool:
    """Whether `module.name` may be called here: `name(...)` (imported by name or through a star),
    `module.name(...)`, `alias.name(...)` when `module` is imported under an alias, or `name`
    imported under an alias. With "(int", a first argument that is a string literal does not count."""
    hit = seen.get(spec)
    if hit is None:
        pattern = _CALLED.get(spec)
        if pattern is None:
            owner, _, name = spec.partition(b".")
            args = rb"\s*\((?!\s*[rRbBuUfF]{0,2}[\"'])" if name.endswith(b"(int") else rb"\s*\("
            name = re.escape(name.removesuffix(b"(int"))
            owner = re.escape(owner)
            pattern = _CALLED[spec] = (
                re.compile(rb"(?<![\w.])" + name + args + rb"|\b" + owner + rb"\s*\.\s*" + name + args),
                re.compile(rb"\b" + owner + rb"\b[^\n]*\bas\b"),  # the module imported under an alias...
                re.compile(rb"\.\s*" + name + args),  # ...and a call of `name` on something
            )
        plain, alias, member = pattern
        hit = plain.search(data) is not None or (alias.search(data) is not None and member.search(data) is not None)
        if not hit:
            # `from m import name as other` (transformers' `import x as x` re-exports): the alias called
            for m in re.finditer(rb"\b" + re.escape(spec.partition(b".")[2].removesuffix(b"(int")) + rb"\s+as\s+([A-Za-z_]\w*)", data):
                if re.search(rb"(?<![\w.])" + re.escape(m.group(1)) + rb"\s*\(", data):
                    hit = True
                    break
        seen[spec] = hit
    return hit


def _call_word(name: bytes, data: bytes, seen: dict) -> bool:
    key = b"(" + name
    hit = seen.get(key)
    if hit is None:
        hit = seen[key] = re.search(rb"(?<![\w])" + re.escape(name) + rb"\s*\(", data) is not None
    return hit  # type: ignore[return-value]


_CALLED: dict[bytes, tuple[re.Pattern, re.Pattern, re.Pattern]] = {}
_CALL_CHAIN = re.compile(rb"(?<![\w.])([A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)[ \t]*\(\s*(-?\d|[A-Za-z_]\w*)?")


_INT_ASSIGNED = re.compile(rb"\b([A-Za-z_]\w*)\s*(?::[^=\n]*)?=\s*-?\d")


def _assigned_int(name: bytes, data: bytes, seen: dict[bytes, bool]) -> bool:
    names = seen.get(b"")
    if names is None:
        names = seen[b""] = {m.group(1) for m in _INT_ASSIGNED.finditer(data)}  # type: ignore[assignment]
    return name in names  # type: ignore[operator]


def _qualified_calls(data: bytes, bases: Mapping[bytes, tuple[str, ...]], ints: Optional[dict] = None) -> dict[str, bool]:
    """Qualified name -> whether some call of it has a first argument that may be an int;
    a dotted call `a.b.c(...)` is qualified through what its head was imported as (a local name,
    builtins and the like are kept as written)."""
    out: dict[str, bool] = {}
    ints = {} if ints is None else ints  # (given: the names of the whole file, where constants are)
    for m in _CALL_CHAIN.finditer(data):
        chain = m.group(1)
        if b" " in chain or b"\t" in chain:
            chain = re.sub(rb"\s", b"", chain)
        head, _, rest = chain.partition(b".")
        base = bases.get(head)
        names = [chain.decode()]
        if base:
            names.append(base[0] + ("." + rest.decode() if rest else ""))
        # an int literal, or a name some assignment gives one (what cudalint.summarize.literal sees)
        first = m.group(2)
        nonstring = first is not None and (first[:1] in b"-0123456789" or _assigned_int(first, data, ints))
        for name in names:
            out[name] = out.get(name, False) or nonstring
    return out


def _keyword(name: bytes, data: bytes, seen: dict[bytes, bool]) -> bool:
    key = b"=" + name
    hit = seen.get(key)
    if hit is None:
        # the value cudalint.summarize.value_of can read as a string: a literal, a constant's name,
        # a call (`torch.device("cuda")`); not `device=None`, `device=0`, `device=x.device.type`
        hit = seen[key] = (
            re.search(
                rb"\b" + re.escape(name) + rb"\s*=(?!=)\s*(?:[rRbBuUfF]{0,2}[\"']|(?!(?:None|True|False)\b)[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*\s*\(|(?!(?:None|True|False)\b)[A-Za-z_]\w*\b(?!\s*\.))",
                data,
            )
            is not None
        )
    return hit


class _Strings:
    """Whether a file's string values may contain given text (lazy: most files need no answer).

    `base`: text whose values may flow in too (a function's: the module's constants), asked once
    per need however many functions ask."""

    def __init__(self, data: bytes, base: Optional["_Strings"] = None):
        self.data = data
        self.base = base
        self.joined: Optional[bytes] = None
        self.escapes: Optional[set[str]] = None
        self.memo: dict[bytes, Optional[bool]] = {}

    def may_hold(self, needs: tuple[bytes, ...]) -> bool:
        for need in needs:
            found = self._holds(need)
            if found is None:
                return True  # an escape may spell anything
            if not found:
                return False
        return True

    def _holds(self, need: bytes) -> Optional[bool]:
        """Yes, no, or None: an escape in the text may spell one of its characters."""
        if self.base is not None:
            found = self.base._holds_once(need)
            if found is None or found:
                return found
        if self._has(need, self.data):
            return True
        if self._escaped(need):
            return None
        if self.joined is None:
            self.joined = _JOINER.sub(b"", self.data)
        return self._has(need, self.joined)

    def _holds_once(self, need: bytes) -> Optional[bool]:
        if need not in self.memo:
            self.memo[need] = self._holds(need)
        return self.memo[need]

    def _escaped(self, need: bytes) -> bool:
        """An escape in the file spells one of the text's characters (`"\\x63uda"`)."""
        if self.escapes is None:
            import codecs

            self.escapes = set()
            for m in _ESCAPE.finditer(self.data):
                try:
                    self.escapes.add(codecs.decode(m.group(0), "unicode_escape"))
                except (UnicodeDecodeError, ValueError):
                    self.escapes.add("")  # cannot tell: any character
        chars = set(need.lstrip(b"^").decode("utf-8", "replace"))
        return "" in self.escapes or not self.escapes.isdisjoint(chars)

    @staticmethod
    def _has(need: bytes, data: bytes) -> bool:
        if not need.startswith(b"^"):
            return need in data
        # a value that starts with the text: a string literal opening with it, where a value can be
        # written: an argument, a keyword or constant (`=`, not `==`), a list of command words
        pattern = _LEADING.get(need)
        if pattern is None:
            pattern = _LEADING[need] = re.compile(rb"(?:(?<![=!<>])=|[(,\[])\s*[rRbBuUfF]{0,2}[\"']" + re.escape(need[1:]))
        return need[1:] in data and pattern.search(data) is not None


_LEADING: dict[bytes, re.Pattern] = {}
_SETATTR = re.compile(rb"\bsetattr\s*\(\s*([A-Za-z_]\w*)(?:[^,()]*,\s*[rRbBuU]?[\"']([A-Za-z_]\w*))?")


def _chunks(pattern: str) -> tuple[bytes, ...]:
    """The literal pieces a value matching the glob must contain ("cuda*" -> ^cuda: at its start)."""
    if pattern.startswith("<") and pattern.endswith(">"):
        return ()  # <int>, <none>
    if pattern in ("True", "False", "None"):
        return ()  # a bool or None value, not a string
    pieces = re.split(r"\*|\?|\[[^\]]*\]", pattern)
    out = [("^" if i == 0 else "") + p for i, p in enumerate(pieces) if len(p) >= 2]
    return tuple(p.encode() for p in out)


def _name_words(api, returned: set) -> list[str]:
    """The words a file must hold for the summarizer to resolve a call to `api`: every part of the
    name (an import or an attribute chain spells it) except the root, a dunder, and the parts of a
    type the summarizer knows from a `returns`; for a glob, its plain parts and keyword slots."""
    parts = api.name.split(".")
    if api.is_glob:
        words = [p for p in parts[1:] if not any(ch in p for ch in "*?[")]
        return words + [s for slots, _pattern in api.match for s in slots if not s.isdigit()]
    words = parts[1:-1] if _DUNDER.match(parts[-1]) else parts[1:]
    typ = max((t for t in returned if api.name.startswith(t + ".")), key=len, default="")
    return words[len(typ.split(".")) - 1 :] if typ else words


def _word_of(name: str) -> str:
    parts = name.split(".")
    last = parts[-1]
    if _DUNDER.match(last) and len(parts) > 1:
        return parts[-2]  # X.__call__ / X.__enter__: the instance comes from a call of X(...)
    return last


_TRIGGERS: dict[int, tuple[Catalogue, _Triggers]] = {}


def _triggers(catalogue: Catalogue) -> _Triggers:
    # keyed by identity: hashing a whole catalogue per file would cost more than the scan
    hit = _TRIGGERS.get(id(catalogue))
    if hit is None or hit[0] is not catalogue:
        hit = _TRIGGERS[id(catalogue)] = (catalogue, _Triggers(catalogue))
    return hit[1]


def _lines(data: bytes) -> bytes:
    """Every line ending as `\n`, so that ast's line numbers index the lines (`\r` ends one too)."""
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in data else data


def scan(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> Scan:
    return scan_tree(data, catalogue, modname, is_package)[0]


def _first_look(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> tuple:
    """What the bytes alone say: the words, the imports, the kinds of the file's own effects."""
    original = data = _lines(data)
    if b"\\\n" in data:
        data = data.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
    words = frozenset(_WORD.findall(data))
    trig = _triggers(catalogue)
    own_root = modname.split(".", 1)[0]
    imports, chains, stars = _imports(data, modname, is_package)
    heads = None if stars else frozenset(chains)
    kinds = trig.kinds(words, data, own_root, heads=heads, bases=None if stars else chains, imported=frozenset(imports))
    return original, data, words, trig, own_root, imports, chains, stars, kinds


def file_kinds(data: bytes, catalogue: Catalogue, modname: str, is_package: bool) -> tuple[str, ...]:
    """A scan's `kinds`, without parsing the file."""
    return _first_look(data, catalogue, modname, is_package)[-1]


def scan_tree(
    data: bytes, catalogue: Catalogue, modname: str, is_package: bool, calls: bool = True, stops: bool = True
) -> tuple[Scan, Optional[ast.Module]]:
    """The scan, and CPython's syntax tree of the file (None: it does not parse).

    `calls=False` leaves out what the code may call and reach (`top_kinds`, `top_targets`,
    `code_targets` and the call graph), `stops=False` which functions may never return: two
    processes can make the two halves of one big file's scan (cudalint.runner._Pool.map_scans)."""
    original, data, words, trig, own_root, imports, chains, stars, kinds = _first_look(data, catalogue, modname, is_package)
    may_stop = not trig.stops.isdisjoint(words)
    tree = _ast(original)
    if tree is None:
        return Scan(kinds=kinds, may_stop=may_stop, imports=imports, syntax_ok=False), None
    if not (imports or kinds or may_stop):
        return Scan(kinds=kinds, may_stop=may_stop, imports=imports, top_kinds=(), code_targets=stars), tree
    layout = _Layout(tree, original, words, chains, stars, modname if is_package else modname.rpartition(".")[0], frozenset(imports))
    top_kinds: tuple[str, ...] = ("*",)
    targets: tuple[str, ...] = ()
    code: set[str] = set(stars)
    table: tuple[str, ...] = ()
    names: dict[str, list] = {}
    defs: dict[str, list] = {}
    if calls:
        top_kinds, targets = layout.reach(trig, own_root, bool(kinds))
        # any code: every word outside the import statements that names an import
        for word in _WORD.findall(layout.text(layout.outside(layout.imports))):
            code.update(chains.get(word, ()))
        table, names, defs = layout.graph(trig, own_root, bool(kinds))
    return Scan(
        kinds=kinds,
        may_stop=may_stop,
        imports=imports,
        top_kinds=top_kinds,
        top_targets=targets,
        code_targets=tuple(sorted(code)),
        func_imports=tuple(sorted(layout.func_imports)),
        table=table,
        names=names,
        stars=stars,
        defs=defs,
        stops=layout.stops(trig.exits) if stops and (may_stop or stars or chains) else _EMPTY,
    ), tree


def _ast(data: bytes) -> Optional[ast.Module]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(data, "<cudalint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


_DEPRECATED = frozenset({"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite", "AugLoad", "AugStore", "Param"})
# node type -> the fields that may hold nodes (a constant's value never does; ctx is Load/Store)
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: () if cls is ast.Constant else tuple(f for f in cls._fields if f != "ctx")
    for cls in (getattr(ast, n) for n in dir(ast) if n not in _DEPRECATED)
    if isinstance(cls, type) and issubclass(cls, ast.AST)
}


def _nodes(root: object) -> list:
    """Every node under `root` (itself included), in no particular order: ast.walk's work without
    its generators (the scan's walks were a third of its time)."""
    out: list = []
    stack = list(root) if type(root) is list else [root]  # (a list: of statements)
    pop, push, extend, append = stack.pop, stack.append, stack.extend, out.append
    fields_of = _FIELDS
    while stack:
        n = pop()
        fields = fields_of.get(type(n))
        if fields is None:
            continue  # a name in a list of names, a None in a list of defaults
        append(n)
        for f in fields:
            v = getattr(n, f, None)
            if type(v) is list:
                extend(v)
            elif v is not None:
                push(v)
    return out


def _names(node: object, uses: bool = False) -> Iterable[bytes]:
    """The names and attribute names in the code; `uses`: only the names used otherwise than as the
    object of an attribute (`Pipeline(...)`, `x = Pipeline`, not `Pipeline.push_to_hub`)."""
    nodes = _nodes(node)
    if uses:
        owners = {id(sub.value) for sub in nodes if type(sub) is ast.Attribute}
        for sub in nodes:
            if type(sub) is ast.Name and id(sub) not in owners:
                yield sub.id.encode()
        return
    for sub in nodes:
        t = type(sub)
        if t is ast.Name:
            yield sub.id.encode()
        elif t is ast.Attribute:
            yield sub.attr.encode()



def _names_in(defs: list) -> tuple[frozenset, frozenset]:
    """The names and attribute names the bodies of these definitions mention, and the names they
    use otherwise than as the object of an attribute (cudalint.prefilter._names)."""
    found: set[str] = set()
    owners: set[int] = set()
    names: list[ast.Name] = []
    for fn in defs:
        for sub in _nodes(getattr(fn, "body", [])):
            t = type(sub)
            if t is ast.Name:
                found.add(sub.id)
                names.append(sub)
            elif t is ast.Attribute:
                found.add(sub.attr)
                owners.add(id(sub.value))
    return frozenset(w.encode() for w in found), frozenset(n.id.encode() for n in names if id(n) not in owners)


def _annotation_names(node: Optional[ast.AST], uses: bool) -> Iterable[bytes]:
    """An annotation is evaluated but not called (`config: PreTrainedConfig` constructs nothing:
    in transformers every module naming one in a signature reached all its methods); a call in it
    still runs."""
    if node is None:
        return
    for sub in _nodes(node):
        if type(sub) is ast.Call:
            yield from _names(sub, uses)


def _top_names(stmts: list, uses: bool = False) -> Iterable[bytes]:
    """The names the code that runs on import uses: not function bodies, not imports."""
    for st in stmts:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = st.args
            for n in (*st.decorator_list, *a.defaults, *a.kw_defaults):
                if n is not None:
                    yield from _names(n, uses)
            for n in (st.returns, *(x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None)):
                yield from _annotation_names(n, uses)
        elif isinstance(st, ast.AnnAssign):
            yield from _annotation_names(st.annotation, uses)
            for n in (st.target, st.value):
                if n is not None:
                    yield from _names(n, uses)
        elif isinstance(st, ast.ClassDef):
            # (its bases are reached when the class is: cudalint.prefilter._Layout.reach)
            for n in (*st.decorator_list, *(k.value for k in st.keywords)):
                yield from _names(n, uses)
            yield from _top_names(st.body, uses)
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            continue
        else:
            for _name, value in ast.iter_fields(st):
                items = value if isinstance(value, list) else [value]
                for item in items:
                    if isinstance(item, ast.stmt):
                        yield from _top_names([item], uses)
                    elif isinstance(item, (ast.excepthandler, ast.match_case)):
                        for part in (getattr(item, "type", None), getattr(item, "pattern", None), getattr(item, "guard", None)):
                            if part is not None:
                                yield from _names(part, uses)
                        yield from _top_names(item.body, uses)
                    elif isinstance(item, ast.AST):
                        yield from _names(item, uses)


_COMPOUND_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


# ---------- may a function never return normally (cudalint.flow: Summary.out is None) -------------
# A formula over the calls that could end a path: True, False, ("call", dotted name), ("or", ...),
# ("and", ...). Only the calls of functions that never return cut a caller's path short; a raise
# inside an `if` does not (the flow engine joins the branches), nor one a handler catches.
def _or(terms: list) -> object:
    out = []
    for t in terms:
        if t is True:
            return True
        if t is not False:
            out.append(t)
    return ("or", tuple(out)) if len(out) > 1 else (out[0] if out else False)


def _and(terms: list) -> object:
    out = []
    for t in terms:
        if t is False:
            return False
        if t is not True:
            out.append(t)
    return ("and", tuple(out)) if len(out) > 1 else (out[0] if out else True)


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _calls_in(node: Optional[ast.AST]) -> object:
    if node is None:
        return False
    terms = []
    for sub in _nodes(node):
        if type(sub) is ast.Call:
            name = _dotted(sub.func)
            terms.append(("call", name) if name else False)
    return _or(terms)


def _has_break(stmts: list) -> bool:
    for st in stmts:
        for sub in _nodes(st):
            if type(sub) is ast.Break:
                return True  # (also a nested loop's: errs towards "may end")
    return False


def _block_stops(stmts: list) -> object:
    terms = []
    for st in stmts:
        if isinstance(st, ast.Return):
            terms.append(_calls_in(st.value))
            return _or(terms)  # a normal return: what follows does not run
        t = _stmt_stops(st)
        terms.append(t)
        if t is True:
            break
    return _or(terms)


def _stmt_stops(st: ast.stmt) -> object:
    if isinstance(st, ast.Raise):
        return True
    if isinstance(st, ast.If):
        return _or([_calls_in(st.test), _and([_block_stops(st.body), _block_stops(st.orelse)])])
    if isinstance(st, (ast.While,)):
        test = st.test
        forever = isinstance(test, ast.Constant) and bool(test.value)
        if forever and not _has_break(st.body):
            return True
        return _calls_in(test)
    if isinstance(st, (ast.For, ast.AsyncFor)):
        return _calls_in(st.iter)
    if isinstance(st, (ast.With, ast.AsyncWith)):
        return _or([_calls_in(item.context_expr) for item in st.items] + [_block_stops(st.body)])
    if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
        body = _or([_block_stops(st.body), _block_stops(st.orelse)])
        handled = _and([_block_stops(h.body) for h in st.handlers] + [body]) if st.handlers else body
        return _or([handled, _block_stops(st.finalbody)])
    if type(st).__name__ == "Match":
        cases = st.cases  # type: ignore[attr-defined]
        total = any(isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None and c.guard is None for c in cases)
        return _or([_calls_in(st.subject), _and([_block_stops(c.body) for c in cases]) if total else False])  # type: ignore[attr-defined]
    if isinstance(st, ast.Assert):
        test = st.test
        if isinstance(test, ast.Constant) and not test.value:
            return True
        return _calls_in(test)
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = st.args
        return _or([_calls_in(n) for n in (*st.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None))])
    if isinstance(st, ast.ClassDef):
        return _or([_calls_in(n) for n in (*st.decorator_list, *st.bases, *(k.value for k in st.keywords))] + [_block_stops(st.body)])
    if isinstance(st, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
        return _calls_in(st)
    return False


# Why the names asked suffice: evaluated with every other module's function returning, a formula
# (and/or over calls, no negation) that comes out "returns" still does so as long as every name
# asked returns. An `or` asks all its terms; an `and` that failed is decided by its first failing
# term, whose own names are then enough. So if the real answer is "never returns", one of the names
# asked never returns, and answering yes when any does errs only towards parsing more.
def _any(results: list) -> tuple[bool, frozenset, frozenset]:
    """Or of (value, dotted names asked, keys asked): stops at the first yes (then certain)."""
    asked: set = set()
    keys: set = set()
    for v, a, k in results:
        if v:
            return True, a, k
        asked |= a
        keys |= k
    return False, frozenset(asked), frozenset(keys)


def _all(results: list) -> tuple[bool, frozenset, frozenset]:
    for v, a, k in results:
        if not v:
            return False, a, k  # this one alone decides: it must turn before the whole can
    return True, frozenset(), frozenset()


_INITS = (b"__init__", b"__new__", b"__post_init__")
_NONE: frozenset = frozenset()


class _Stops:
    """One evaluation of every stop formula of a module (cudalint.prefilter._Layout.stops): with
    every function of another module returning (`outside` False) or none of them. (A class, not
    closures: mutually recursive closures form a cycle that would keep the syntax tree alive until
    the cycle collector runs.)"""

    def __init__(self, layout: "_Layout", exits: frozenset, formulas: dict[int, object], outside: bool):
        self.layout = layout
        self.exits = exits
        self.formulas = formulas  # id of a definition -> its formula (shared by both evaluations)
        self.outside = outside
        self.memo: dict[str, tuple[bool, frozenset, frozenset]] = {}  # key -> (value, dotted names asked, keys asked)

    def run(self) -> dict[str, tuple[bool, frozenset, frozenset]]:
        lay = self.layout
        self.memo[""] = self.value(self.formula(lay.tree), None)
        for cls, funcs in lay.owned.items():
            for name in funcs:
                self.defined(cls, name)
            if cls is not None:
                self.memo[cls.decode()] = self.construct(cls)
        return self.memo

    def formula(self, d: ast.AST) -> object:
        f = self.formulas.get(id(d))
        if f is None:
            f = self.formulas[id(d)] = _block_stops(d.body)  # type: ignore[attr-defined]
        return f

    def method(self, cls: bytes, name: bytes, seen: frozenset = frozenset()) -> Optional[tuple[bool, frozenset, frozenset]]:
        """`name` of class `cls` or of its bases (None: not found here)."""
        lay = self.layout
        if name in lay.owned.get(cls, {}):
            return self.defined(cls, name)
        asked: set[str] = set()
        for base in lay.base_chains.get(cls, ()):
            b = base.encode()
            if b in lay.owned and b not in seen:
                hit = self.method(b, name, seen | {cls})
                if hit is not None:
                    return hit
            elif base.split(".", 1)[0].encode() in lay.chains:
                head, _, rest = base.partition(".")
                chain = lay.chains[head.encode()][0] + ("." + rest if rest else "") + "." + name.decode()
                if self.outside:
                    return True, frozenset({chain}), _NONE
                asked.add(chain)
        return (False, frozenset(asked), _NONE) if asked else None

    def defined(self, cls: Optional[bytes], name: bytes) -> tuple[bool, frozenset, frozenset]:
        key = name.decode() if cls is None else f"{cls.decode()}.{name.decode()}"
        hit = self.memo.get(key)
        if hit is None:
            self.memo[key] = (True, _NONE, _NONE)  # in progress: a recursion may never return
            out = _any([self.value(self.formula(d), cls) for d in self.layout.owned.get(cls, {}).get(name, ())])
            hit = self.memo[key] = out
        return hit[0], _NONE, frozenset({key})

    def construct(self, cls: bytes) -> tuple[bool, frozenset, frozenset]:
        return _any([hit for hit in (self.method(cls, m) for m in _INITS) if hit is not None])

    def value(self, f: object, cls: Optional[bytes]) -> tuple[bool, frozenset, frozenset]:
        if f is True or f is False:
            return f, _NONE, _NONE  # type: ignore[return-value]
        op, arg = f  # type: ignore[misc]
        if op == "or":
            return _any([self.value(x, cls) for x in arg])
        if op == "and":
            return _all([self.value(x, cls) for x in arg])
        lay = self.layout
        head, _, rest = arg.partition(".")
        last = arg.rsplit(".", 1)[-1].encode()
        if last in self.exits:
            return True, _NONE, _NONE
        if head in ("self", "cls"):
            hit = self.method(cls, last) if cls is not None and "." not in rest else None
            return hit if hit is not None else (False, _NONE, _NONE)
        h = head.encode()
        if h in lay.owned:  # a class: `C(...)` or `C.method(...)`
            if not rest:
                return self.construct(h)
            hit = self.method(h, last) if "." not in rest else None
            return hit if hit is not None else (False, _NONE, _NONE)
        if h in lay.owned.get(None, {}):
            return self.defined(None, h) if not rest else (False, _NONE, _NONE)
        if h in lay.chains:
            return self.outside, frozenset({lay.chains[h][0] + ("." + rest if rest else "")}), _NONE
        if lay.stars:
            return self.outside, frozenset(f"{m}.{arg}" for m in lay.stars), _NONE
        return False, _NONE, _NONE


class _Layout:
    """Where a module's code runs: its top level, and the bodies of its module- and class-level functions.

    The top level is every line outside those bodies: decorators, default values and class bodies
    run on import. Words are bytes-level (strings and comments count), so reaching errs towards more."""

    def __init__(
        self,
        tree: ast.Module,
        data: bytes,
        words: frozenset,
        chains: Mapping[bytes, tuple[str, ...]],
        stars: tuple[str, ...],
        package: str = "",
        imported: Optional[frozenset] = None,
    ):
        self.data = data
        self.imported = imported  # the modules the file imports (cudalint.prefilter._imports)
        self.package = package
        self.func_imports: set[str] = set()  # modules imported inside functions (calling them imports)
        self.imports_of: dict[bytes, set[str]] = {}  # function name -> the modules it imports
        self.words = words
        self.chains = chains
        self.stars = stars
        self.bodies: dict[bytes, list[tuple[int, int]]] = {}  # function name -> line ranges of its bodies
        self.nodes: dict[bytes, list[ast.AST]] = {}  # function name -> its definitions
        self.methods: dict[bytes, list[bytes]] = {}  # class name -> its functions (nested classes' too)
        self.bases: dict[bytes, list[bytes]] = {}  # class name -> the names in its bases
        self.base_chains: dict[bytes, list[str]] = {}  # class name -> its bases as dotted names
        self.owned: dict[Optional[bytes], dict[bytes, list[ast.AST]]] = {None: {}}  # class (None: module) -> function -> definitions
        self.excluded: list[tuple[int, int]] = []
        self.headers: list[tuple[int, int]] = []  # def lines: decorators, parameters and their defaults
        self.imports: list[tuple[int, int]] = []
        self.tree = tree
        self.docs: list[tuple[int, int]] = []  # docstrings: prose, whatever calls it mentions
        self._top: Optional[bytes] = None
        self._consts: Optional[bytes] = None
        self._consts_of: Optional[_Strings] = None
        self._doc_starts: Optional[list[int]] = None
        self._bodies: dict[bytes, bytes] = {}
        self._qc: dict[int, dict[str, bool]] = {}
        self._names: dict[bytes, frozenset] = {}
        self._top_int_names: Optional[set] = None
        self._kinds: dict[Optional[bytes], tuple[str, ...]] = {}
        self._import_words: Optional[frozenset] = None
        self.env_writes: Optional[bool] = None
        starts = [0]
        pos = data.find(b"\n")
        while pos >= 0:
            starts.append(pos + 1)
            pos = data.find(b"\n", pos + 1)
        starts.append(len(data) + 1)
        self.starts = starts
        self._doc(tree.body)
        self._walk(tree.body, ())

    def _doc(self, body: list) -> None:
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            self.docs.append((first.lineno, first.end_lineno or first.lineno))

    def _walk(self, stmts: list, classes: tuple[bytes, ...]) -> None:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self._doc(st.body)
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = st.args
                head = [*st.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None), st.returns]
                head += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None]
                last = max((n.end_lineno or n.lineno for n in head if n is not None), default=st.lineno)
                start, end = max(st.body[0].lineno, last + 1), st.end_lineno or st.lineno
                name = st.name.encode()
                first = min([st.lineno] + [d.lineno for d in st.decorator_list])
                self.headers.append((first, start - 1))
                self.nodes.setdefault(name, []).append(st)
                mine = self.imports_of.setdefault(name, set())
                s0, s1 = self.starts[st.lineno - 1], self.starts[end] - 1
                for sub in _nodes(st) if b"import" in self.data[s0:s1] else ():
                    if isinstance(sub, ast.Import):
                        mine.update(a.name for a in sub.names)
                    elif isinstance(sub, ast.ImportFrom):
                        base = _relative(self.package, sub.level, sub.module or "") if sub.level else sub.module
                        if base:
                            mine.add(base)
                            mine.update(f"{base}.{a.name}" for a in sub.names)
                self.func_imports |= mine
                self.owned.setdefault(classes[-1] if classes else None, {}).setdefault(name, []).append(st)
                if start <= end:
                    self.bodies.setdefault(name, []).append((start, end))
                    self.excluded.append((start, end))
                for cls in classes:
                    self.methods.setdefault(cls, []).append(name)
            elif isinstance(st, ast.ClassDef):
                self.bases.setdefault(st.name.encode(), []).extend(w for b in st.bases for w in _names(b))
                self.owned.setdefault(st.name.encode(), {})
                self.base_chains.setdefault(st.name.encode(), []).extend(d for d in map(_dotted, st.bases) if d)
                self._walk(st.body, classes + (st.name.encode(),))
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                self.imports.append((st.lineno, st.end_lineno or st.lineno))
            else:
                for part in _COMPOUND_FIELDS:  # if/try/with/for/match at the top level
                    for sub in getattr(st, part, None) or ():
                        self._walk([sub] if isinstance(sub, ast.stmt) else sub.body, classes)

    def stops(self, exits: frozenset) -> dict[str, object]:
        """Which of the top level (key ""), the module's functions ("f"), classes ("C": calling it
        runs `__init__`/`__new__`/`__post_init__`) and methods ("C.m") may end every path
        abnormally: 1 yes; [dotted names, keys] yes if a function of another module named there, or
        one of the keys, never returns; absent: no. The `__main__` block does not run on import.

        Two evaluations of each formula: with every function of another module returning (a "yes"
        then is certain), and with none returning (a "no" then is certain). Only what is neither
        depends on other modules. Recursion counts as never returning."""
        formulas: dict[int, object] = {}  # id of a definition -> its formula (both evaluations read it)
        sure = _Stops(self, exits, formulas, outside=False).run()  # other modules' functions all return
        maybe = _Stops(self, exits, formulas, outside=True).run()  # none of them does
        out: dict[str, object] = {}
        for key, (yes, asked, keys) in sure.items():
            if yes:
                out[key] = 1
            elif maybe.get(key, (True,))[0]:
                out[key] = [sorted(asked), sorted(keys)]
        for key, entry in out.items():  # a key that surely returns needs no asking
            if isinstance(entry, list):
                entry[1] = [k for k in entry[1] if k in out]
        return out

    def _names_of(self, name: bytes) -> tuple[frozenset, frozenset]:
        hit = self._names.get(name)
        if hit is None:
            hit = self._names[name] = _names_in(self.nodes[name])
        return hit

    def _direct_kinds(self, key: Optional[bytes], trig: "_Triggers", own_root: str) -> tuple[str, ...]:
        """The kinds the top level's own text (None) or a function's body may produce. The words of
        the import lines count (an alias spells the rest of a name); string and int values may come
        from the top level (a constant); an environment write through an alias may be anywhere.""" 
        hit = self._kinds.get(key)
        if hit is None:
            text = self.top_text() if key is None else self.body_text(key)
            text = text.replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
            bases = None if self.stars else self.chains
            found = set(
                trig.kinds(
                    frozenset(_WORD.findall(text)) | self.import_words(),
                    text,
                    own_root,
                    root_words=self.words,
                    heads=None if self.stars else frozenset(self.chains),
                    bases=bases,
                    imported=self.imported,
                    qcalls=(lambda: self._calls_of(text, bases)) if bases is not None else None,
                    strings=_Strings(text, None if key is None else self._const_strings()),
                )
            )
            if self.env_writes is None:
                # `env = os.environ` at the top, `env[k] = v` in a function: the function's own text
                # does not say environ
                self.env_writes = b"environ" in self.words and _ENV_ALIAS.search(self.data) is not None
            if self.env_writes:
                found.add("*")
            hit = self._kinds[key] = tuple(sorted(found))
        return hit

    @property
    def _top_ints(self) -> set:
        if self._top_int_names is None:
            self._top_int_names = {m.group(1) for m in _INT_ASSIGNED.finditer(self.const_text())}
        return self._top_int_names

    def import_words(self) -> frozenset:
        if self._import_words is None:
            self._import_words = frozenset(_WORD.findall(self.text(self.imports)))
        return self._import_words

    def _const_strings(self) -> _Strings:
        if self._consts_of is None:
            self._consts_of = _Strings(self.const_text())
        return self._consts_of

    def const_text(self) -> bytes:
        """The top level without the def lines: where the module's constants are (a parameter's
        default is not one)."""
        if self._consts is None:
            self._consts = self.text(self.outside(self.excluded + self.headers))
        return self._consts

    def top_text(self) -> bytes:
        if self._top is None:
            self._top = self.text(self.outside(self.excluded))
        return self._top

    def body_text(self, name: bytes) -> bytes:
        hit = self._bodies.get(name)
        if hit is None:
            hit = self._bodies[name] = self.text(self.bodies[name])
        return hit

    def _calls_of(self, text: bytes, bases: Mapping[bytes, tuple[str, ...]]) -> dict[str, bool]:
        ints = {b"": set(self._top_ints) | {m.group(1) for m in _INT_ASSIGNED.finditer(text)}}
        return _qualified_calls(text, bases, ints)  # (a constant: of the module, or of the function)

    def text(self, ranges: list[tuple[int, int]]) -> bytes:
        s = self.starts
        if self.docs:
            ranges = [r for a, b in ranges for r in self._minus_docs(a, b)]
        return b"\n".join(self.data[s[a - 1] : s[b] - 1] for a, b in ranges)

    def _minus_docs(self, a: int, b: int) -> list[tuple[int, int]]:
        out = []
        if self._doc_starts is None:
            self.docs.sort()
            self._doc_starts = [d[0] for d in self.docs]
        # docstrings do not overlap: those starting before `a` can only reach into it if the last does
        first = max(bisect.bisect_left(self._doc_starts, a) - 1, 0)
        last = bisect.bisect_right(self._doc_starts, b)
        for da, db in self.docs[first:last]:
            if db < a or da > b or not self._alone(da, db):
                continue
            if da > a:
                out.append((a, da - 1))
            a = max(a, db + 1)
        if a <= b:
            out.append((a, b))
        return out

    def _alone(self, da: int, db: int) -> bool:
        """A docstring that has its lines to itself (no code before or after it on them)."""
        s = self.starts
        first = self.data[s[da - 1] : s[da] - 1].strip()
        last = self.data[s[db - 1] : s[db] - 1].strip()
        return first[:1] in b"\"'rRbBuUfF" and last[-1:] in b"\"'"

    def outside(self, cut: list[tuple[int, int]]) -> list[tuple[int, int]]:
        out, line = [], 1
        for a, b in sorted(cut):
            if a > line:
                out.append((line, a - 1))
            line = max(line, b + 1)
        if line <= len(self.starts) - 2:
            out.append((line, len(self.starts) - 2))
        return out

    def reach(self, trig: "_Triggers", own_root: str, any_kinds: bool) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the kinds the top level and the local functions it reaches may produce by themselves,
        the names of other modules they may call). Each function whose name reached code mentions
        is reached too; a class's name reaches its special methods and bases. Calls into other modules are
        followed by cudalint.prefilter._Calls over `graph`."""
        # names, not words: the keys of a registry dict are strings, not calls of functions
        mention = set(_top_names(self.tree.body))
        used = set(_top_names(self.tree.body, uses=True))  # (the classes whose special methods may run)
        todo = list(mention)
        done: set[bytes] = set()
        special: set[tuple[bytes, bytes]] = set()  # (class, special method) reached through the class

        def reach_names(names: frozenset, uses: frozenset) -> None:
            for w in names:
                if w not in mention or (w in uses and w not in used):
                    mention.add(w)
                    if w in uses:
                        used.add(w)
                    todo.append(w)

        while todo:
            word = todo.pop()
            if word in used:
                bases = frozenset(self.bases.get(word, ()))  # constructing a class may run its bases' methods
                reach_names(bases, bases)
            else:
                reach_names(frozenset(self.bases.get(word, ())), frozenset())
            if word in self.nodes and word not in done:
                done.add(word)
                reach_names(*self._names_of(word))
            # a class used (called, passed, subclassed) runs only its own special methods by itself
            # (construction, `with`, operators); another method runs when its name is mentioned
            # (`p.run()`), and `Pipeline.push_to_hub = ...` runs none (transformers' pipelines/base.py)
            if word in used:
                for name, defs in self.owned.get(word, {}).items():
                    if name.startswith(b"__") and name.endswith(b"__") and (word, name) not in special:
                        special.add((word, name))
                        reach_names(*_names_in(defs))
        kinds: set[str] = set()
        if any_kinds:
            # each function's own kinds, computed once: the union over what is reached
            for key in [None] + sorted((done | {m for _c, m in special}) & set(self.bodies)):
                kinds.update(self._direct_kinds(key, trig, own_root))
        targets = set(self.stars)
        for word in mention:
            # an imported name only ever the object of an attribute (`TrainingArguments.__doc__`,
            # `torch.cuda.init`) reaches its attributes' chains, not itself (its own target is first)
            chains = self.chains.get(word, ())
            targets.update(chains if word in used else chains[1:])
        return tuple(sorted(kinds)), tuple(sorted(targets))

    def graph(self, trig: "_Triggers", own_root: str, any_kinds: bool) -> tuple[tuple[str, ...], dict[str, list], dict[str, list]]:
        """What `reach` needs from this file's text, as plain data: (the dotted names of other
        modules its code may call, the imported names -> indices of those, the defined names ->
        [own kinds, own imports, the defined names it mentions, indices of the dotted names]).
        cudalint.prefilter._Calls walks it from any name without a tree."""
        table = sorted({t for ts in self.chains.values() for t in ts})
        at = {t: i for i, t in enumerate(table)}
        names = {k.decode(): [at[t] for t in ts] for k, ts in self.chains.items()}
        defined = set(self.nodes) | set(self.bases)
        defs: dict[str, list] = {}
        for word in sorted(defined):
            mention = set(self.bases.get(word, ()))
            done = [m for m in [word] + self.methods.get(word, []) if m in self.nodes]
            for m in done:
                mention |= self._names_of(m)[0]
            kinds: set[str] = set()
            if any_kinds:
                for m in done:
                    if m in self.bodies:
                        kinds.update(self._direct_kinds(m, trig, own_root))
            imports = sorted({i for m in done for i in self.imports_of.get(m, ())})
            refs = sorted({at[t] for w in mention for t in self.chains.get(w, ())})
            defs[word.decode()] = [sorted(kinds), imports, sorted(w.decode() for w in mention & defined if w != word), refs]
        return tuple(table), names, defs


def _imports(data: bytes, modname: str, is_package: bool) -> tuple[tuple[str, ...], dict[bytes, tuple[str, ...]], tuple[str, ...]]:
    """(module names the file may import or reach, local name -> the names it may stand for,
    modules star-imported)."""
    if b"import" not in data:
        return (), {}, ()
    package = modname if is_package else modname.rpartition(".")[0]
    locals_: dict[bytes, str] = {}  # local name -> module (or module.attribute) it stands for
    names: set[str] = set()
    stars: set[str] = set()
    for m in _FROM.finditer(data):
        dots, mod, what = m.group(1), m.group(2).decode(), m.group(3)
        base = _relative(package, len(dots), mod) if dots else mod
        if base is None:
            continue
        if base:
            names.add(base)
            if what.strip() == b"*":
                stars.add(base)
        for alias in _ALIAS.finditer(what.strip(b"()")):
            name, asname = alias.group(1), alias.group(2)
            if name in (b"as", b"import"):
                continue
            full = f"{base}.{name.decode()}" if base else name.decode()
            names.add(full)
            locals_[asname or name] = full
    for m in _IMPORT.finditer(data):
        if not _statement_start(data, m.start()):
            continue
        for alias in _ALIAS.finditer(m.group(1)):
            name, asname = alias.group(1), alias.group(2)
            if name == b"as":
                continue
            full = name.decode().strip(".")
            if not full:
                continue
            names.add(full)
            if asname:
                locals_[asname] = full
            else:
                root = full.split(".", 1)[0]
                locals_[root.encode()] = root
    chains: dict[bytes, set[str]] = {local: {target} for local, target in locals_.items()}
    if locals_:
        # `import pkg` then `pkg.mod.f()` reaches pkg.mod without importing it by name
        for local, target in locals_.items():
            pos = data.find(local)
            while pos >= 0:
                end = pos + len(local)
                m = _CHAIN_TAIL.match(data, end)
                # not the end of a longer name or an attribute of something else
                if m is not None and (pos == 0 or data[pos - 1] not in _NAME_OR_DOT):
                    full = target + re.sub(rb"\s", b"", m.group(1)).decode()
                    names.add(full)
                    chains[local].add(full)
                pos = data.find(local, end)
    out: set[str] = set()
    for name in names:
        parts = name.split(".")
        out.update(".".join(parts[: i + 1]) for i in range(len(parts)))
    # each local name's own target first (cudalint.prefilter._qualified_calls qualifies with it)
    return tuple(sorted(out)), {k: (locals_[k],) + tuple(sorted(v - {locals_[k]})) for k, v in chains.items()}, tuple(sorted(stars))


def _statement_start(data: bytes, pos: int) -> bool:
    """`import` at the start of a statement: after a line start, `;` or `:`, and blanks."""
    i = pos - 1
    while i >= 0 and data[i] in b" \t":
        i -= 1
    return i < 0 or data[i] in b"\n\r;:"


def _relative(package: str, level: int, mod: str) -> Optional[str]:
    base = package.split(".") if package else []
    if level - 1 > len(base):
        return None
    base = base[: len(base) - (level - 1)] if level > 1 else base
    return ".".join([p for p in base + ([mod] if mod else []) if p])


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
    if not calls.precise:
        return _select_coarse(scans, kinds, edges, importers, code | top | own_top) | named
    return code | top | own_top | named | calls.dependencies(code, top, own_top, edges)


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


class _Calls:
    """Whether calling names of other modules may reach kinds of events: the functions reached from
    each name (cudalint.prefilter._Layout.reach), across modules, read on demand."""

    def __init__(self, index, scans, modules, kinds, importers, precise: bool):
        self.index = index
        self.scans = scans
        self.modules = modules
        self.kinds = kinds  # each file's kinds after CUD004's and the thread rules' gating
        self.importers = importers
        self.precise = precise
        self.nodes: dict[tuple[str, bytes], Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]] = {}
        self.below: dict[Optional[frozenset], set[str]] = {}
        self.stops: dict[tuple[str, str], bool] = {}
        self.imatter: Optional[set[str]] = None
        self.resolved: dict[tuple[str, str], list[tuple[str, Optional[bytes]]]] = {}
        self.unreached: dict[Optional[frozenset], set[tuple[str, bytes]]] = {}  # nodes known not to reach a goal
        self.exports: dict[str, Optional[frozenset]] = {}  # cudalint.prefilter._Calls._exports

    def gated(self, path: str, kinds: Iterable[str]) -> set[str]:
        return self.kinds[path].intersection(kinds)

    def _below(self, goal: Optional[set[str]]) -> set[str]:
        """Files with such an event (None: any event, or a way to end a path) in them or below them."""
        key = frozenset(goal) if goal is not None else None
        below = self.below.get(key)
        if below is None:
            if goal is None:
                seeds = (p for p, ks in self.kinds.items() if ks or self.scans[p].may_stop)
            else:
                seeds = (p for p, ks in self.kinds.items() if goal & ks)
            below = self.below[key] = _up_closure(seeds, self.importers)
        return below

    def _matters(self, key: tuple[str, bytes], node: Optional[tuple], goal: Optional[set[str]]) -> bool:
        target = key[0]
        if node is None:
            return True
        if goal is None:
            return bool(self.gated(target, node[0])) or self.never_returns(target, key[1])
        return bool(goal & self.gated(target, node[0]))

    def never_returns(self, path: str, name: Optional[bytes]) -> bool:
        """May calling `name` of `path` (None: importing it) end every path? Across modules; a
        question already being asked (recursion) is answered yes."""
        return self._stops(path, "" if name is None else name.decode())

    def _stops(self, path: str, key: str) -> bool:
        hit = self.stops.get((path, key))
        if hit is not None:
            return hit
        scan = self.scans[path]
        if not scan.syntax_ok:
            return True
        entry = scan.stops.get(key)
        if entry is None or entry == 1:
            result = entry == 1
        else:
            self.stops[(path, key)] = True
            chains, keys = entry  # type: ignore[misc]
            below = self._below(None)
            result = any(n is not None and t in below and self.never_returns(t, n) for c in chains for t, n in self._resolve(path, c))
            result = result or any(self._stops(path, k) for k in keys)
        self.stops[(path, key)] = result
        return result

    def dependencies(self, code: set[str], top: set[str], own_top: set[str], edges: Mapping[str, set[str]]) -> set[str]:
        """What a full analysis of the relevant files uses besides them: below the `top` ones, the
        modules whose top level may establish a fact or end a path (and those on the way to them);
        the modules of the functions that `code` and `top` may call, and the top level of `own_top`,
        that may (or call one that does)."""
        scans = self.scans
        out = self._imported(top, edges)
        starts = [(p, c) for p in code | top for c in scans[p].code_targets]
        starts += [(p, c) for p in out for c in scans[p].top_targets]
        imports = {(p, m) for p in code | top for m in scans[p].func_imports}
        # CUD003's walk of a top level does not run imports, not even inside the functions it calls
        own = [(p, c) for p in own_top for c in scans[p].top_targets]
        return out | self._called_modules(starts, imports, edges) | self._called_modules(own, set(), edges, imports_run=False)

    def _import_matter(self) -> set[str]:
        if self.imatter is None:
            scans = self.scans
            on_import = {
                p for p in self._below(None) if self.gated(p, scans[p].top_kinds) or self.never_returns(p, None) or self.reaches(p, scans[p].top_targets, None)
            }
            self.imatter = _up_closure(on_import, self.importers)
        return self.imatter

    def _imported(self, start: Iterable[str], edges: Mapping[str, set[str]]) -> set[str]:
        imatter = self._import_matter()
        out: set[str] = set()
        todo = list(start)
        seen = set(todo)
        while todo:
            for t in edges.get(todo.pop(), ()):
                if t in imatter and t not in seen:
                    seen.add(t)
                    out.add(t)
                    todo.append(t)
        return out

    def _called_modules(self, starts: list[tuple[str, str]], imports: set[tuple[str, str]], edges: Mapping[str, set[str]], imports_run: bool = True) -> set[str]:
        """The modules of the functions reached from `starts` that matter: they may establish a fact
        or end a path, or call one that does (their summaries then carry it to the caller); and what
        the modules they name may import (an import inside a function runs a top level)."""
        below = self._below(None)
        imatter = self._import_matter()
        modules: set[str] = set()
        callers: dict[tuple[str, bytes], set[tuple[str, bytes]]] = {}
        selfish: dict[tuple[str, bytes], bool] = {}
        todo: list[tuple[Optional[tuple[str, bytes]], str, str]] = [(None, o, c) for o, c in starts]
        while todo:
            parent, origin, chain = todo.pop()
            for target, name in self._resolve(origin, chain):
                if target not in below:
                    continue
                if name is None:
                    continue  # the module itself: not a call
                key = (target, name)
                if parent is not None:
                    callers.setdefault(key, set()).add(parent)
                if key in selfish:
                    continue
                node = self._node(target, name)
                # a function that imports a module runs its top level
                runs = {t for m in (node[2] if node is not None and imports_run else ()) for t in self.index.targets(target, [m])} & imatter
                modules |= runs
                selfish[key] = bool(runs) or self._matters(key, node, None)
                if node is not None:
                    todo.extend((key, target, c) for c in node[1])
        # a function that calls one that matters matters: up the call edges from those that do
        matters = {k for k, v in selfish.items() if v}
        todo_up = list(matters)
        while todo_up:
            for parent in callers.get(todo_up.pop(), ()):
                if parent not in matters:
                    matters.add(parent)
                    todo_up.append(parent)
        for origin, name in imports:
            modules |= self.index.targets(origin, [name]) & imatter
        return {k[0] for k in matters} | modules | self._imported(modules, edges)

    def reaches(self, path: str, chains: Iterable[str], goal: Optional[set[str]]) -> bool:
        below = self._below(goal)
        unreached = self.unreached.setdefault(frozenset(goal) if goal is not None else None, set())
        seen: set[tuple[str, bytes]] = set()
        todo = [(path, c) for c in chains]
        while todo:
            origin, chain = todo.pop()
            for target, name in self._resolve(origin, chain):
                if target not in below or name is None:
                    continue  # nothing of the kind there; or the module itself, not a call into it
                if not self.precise:
                    return True
                if (target, name) in seen or (target, name) in unreached:
                    continue
                seen.add((target, name))
                node = self._node(target, name)
                if self._matters((target, name), node, goal):
                    return True
                todo.extend((target, c) for c in node[1])  # type: ignore[index]
        unreached |= seen  # every node seen was followed to its end without reaching the goal
        return False

    def _resolve(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        key = (origin, chain)
        hit = self.resolved.get(key)
        if hit is None:
            hit = self.resolved[key] = self._resolve_uncached(origin, chain)
        return hit

    def _resolve_uncached(self, origin: str, chain: str) -> list[tuple[str, Optional[bytes]]]:
        parts = chain.split(".")
        for i in range(len(parts), 0, -1):
            hit = self.index.targets(origin, [".".join(parts[:i])])
            if hit:
                # (one attribute more: `Cls.method`, `obj.method` run that method, not all of Cls)
                name = ".".join(parts[i : i + 2]).encode() if i < len(parts) else None
                return [(h, name) for h in sorted(hit)]
        return []

    def _provides(self, importer: str, module: str, name: str) -> bool:
        """May `from module import *` in `importer` bring `name`? Only then can the name's node there
        reach anything (a name a module neither defines nor imports reaches nothing of its own)."""
        for target in self.index.targets(importer, [module]):
            names = self._exports(target)
            if names is None or name in names:
                return True
        return False

    def _exports(self, path: str) -> Optional[frozenset]:
        """The names a module defines or imports by name, through its star imports too; None when
        unknown (a file that does not parse, a cycle of star imports): it may have any name."""
        if path in self.exports:
            return self.exports[path]
        self.exports[path] = None  # (in progress: a cycle through it stays unknown)
        scan = self.scans[path]
        names: Optional[set] = set(scan.defs) | set(scan.names) if scan.syntax_ok else None
        for star in scan.stars if names is not None else ():
            for target in self.index.targets(path, [star]):
                more = self._exports(target)
                if more is None:
                    names = None
                    break
                names |= more  # type: ignore[operator]
            if names is None:
                break
        result = self.exports[path] = frozenset(names) if names is not None else None
        return result

    def _node(self, path: str, name: bytes) -> Optional[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]]:
        """(the kinds, the dotted names of other modules, the imports) that calling `name` of `path`
        may reach in that file (cudalint.prefilter._Layout.reach, from the scan's stored graph)."""
        key = (path, name)
        if key not in self.nodes:
            scan = self.scans[path]
            if not scan.syntax_ok:
                self.nodes[key] = None
                return None
            start = name.decode()
            kinds: set[str] = set()
            imports: set[str] = set()
            targets = set(scan.stars)
            head, _, attr = start.partition(".")
            if attr:
                # `Cls.attr` / `obj.attr` (cudalint.prefilter._Calls._resolve): the attribute runs,
                # not the whole class (`TrainingArguments.__doc__` constructs nothing); an imported
                # name's attribute lives where the name comes from
                if head in scan.names:
                    first = scan.names[head][:1]  # (its own target: cudalint.prefilter._imports)
                    targets.update(f"{scan.table[i]}.{attr}" for i in first)
                    start = ""
                elif head not in scan.defs and attr not in scan.defs:
                    targets.update(f"{m}.{head}.{attr}" for m in scan.stars if self._provides(path, m, head))
                    start = ""
                else:
                    start = attr
            refs: set[int] = set(scan.names.get(start, ()))
            if not start:
                pass
            elif start in scan.defs:
                seen, todo = {start}, [start]
                while todo:
                    own, imp, mentions, rs = scan.defs[todo.pop()]
                    kinds.update(own)
                    imports.update(imp)
                    refs.update(rs)
                    for d in mentions:
                        if d not in seen:
                            seen.add(d)
                            todo.append(d)
            elif start not in scan.names:
                # a name this module does not define or import by name: from a star import, if any,
                # of a module that has it (transformers' `models/__init__` star-imports 546 packages,
                # each of which star-imports its modules: looking a name up in all of them made 2.9
                # million nodes and 4.5 GB)
                targets.update(f"{m}.{start}" for m in scan.stars if self._provides(path, m, start))
            targets.update(scan.table[i] for i in refs)
            self.nodes[key] = (tuple(sorted(kinds)), tuple(sorted(targets)), tuple(sorted(imports)))
        return self.nodes[key]


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


def _down_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    """The modules the seeds import, transitively."""
    seeds = set(seeds)
    if not seeds:
        return set()
    imports: dict[str, list[str]] = {}
    for target, by in importers.items():
        for imp in by:
            imports.setdefault(imp, []).append(target)
    out = set(seeds)
    todo = list(out)
    while todo:
        for t in imports.get(todo.pop(), ()):
            if t not in out:
                out.add(t)
                todo.append(t)
    return out


def _up_closure(seeds: Iterable[str], importers: Mapping[str, list[str]]) -> set[str]:
    out = set(seeds)
    todo = list(out)
    while todo:
        for imp in importers.get(todo.pop(), ()):
            if imp not in out:
                out.add(imp)
                todo.append(imp)
    return out


class _Index:
    """Module resolution as cudalint.project does it, over paths instead of summaries."""

    def __init__(self, modules: Mapping[str, str]):
        import os

        self.by_path = {os.path.normpath(p): p for p in modules}
        self.by_name: dict[str, list[str]] = {}
        for path, name in modules.items():
            if name:
                self.by_name.setdefault(name, []).append(path)
        self._dirs: dict[str, str] = {}
        self._memo: dict[tuple[str, str], frozenset] = {}

    def _one(self, base: str, name: str) -> frozenset:
        key = (base, name)
        hit = self._memo.get(key)
        if hit is None:
            rel = name.replace(".", "/")
            out = set(self.by_name.get(name, ()))
            for cand in (f"{base}/{rel}.py" if base else f"{rel}.py", f"{base}/{rel}/__init__.py" if base else f"{rel}/__init__.py"):
                found = self.by_path.get(cand)
                if found is not None:
                    out.add(found)
            hit = self._memo[key] = frozenset(out)
        return hit

    def targets(self, importer: str, names: Iterable[str]) -> set[str]:
        import os

        base = self._dirs.get(importer)
        if base is None:
            base = self._dirs[importer] = os.path.dirname(os.path.normpath(importer))
        out: set[str] = set()
        for name in names:
            out |= self._one(base, name)
        out.discard(importer)
        return out
