"""Which event kinds a file's text could produce: the catalogue's entries as words to look for, with
the clauses (write forms, sinks, sources) that make an entry count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from cudalint.core.catalogue import Catalogue
from cudalint.scan.select import _call_word
from cudalint.scan.text import (
    _DUNDER, _SETATTR, _Strings, _called, _chunks, _keyword, _name_words, _qualified_calls, _word_of,
)


# an exiting call, `raise`, or `while True:` may end a path inside a function
_STOP_WORDS = frozenset({b"raise", b"while"})

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
# (`child_args`/`env_arg`/`command_arg`/`shell_when` say what a child's work / environment / command line is given, `child_uses_cuda` and the
# `spawn_seen_init`/`spawn_when_env` lists qualify a library's own fork; they ride on entries whose `child_work`/`starts_process` bring their kind)
_NO_KIND = frozenset({"returns", "exits", "ordinal_map", "index_container", "output_file", "unless_env", "when_env", "gpu_presence", "child_args", "env_arg", "command_arg", "shell_when", "child_uses_cuda", "spawn_seen_init", "spawn_when_env"})
# CUD101/CUD102 look at threads only around a llama.cpp context: without one in the project, thread
# starts, locks and web endpoints produce nothing
_LLAMA = frozenset({"llama_context", "touches_context", "streams", "gpu_offload", "concurrent_use", "concurrent_limit", "concurrent_inputs"})
_THREAD = frozenset({"workers", "executor", "starts_thread", "starts_task", "thread_target", "thread_many", "thread_waits", "lock", "lock_count", "endpoint", "concurrency", "singleton"})
# the write forms of the environment mapping the summarizer knows (cudalint.summary.summarize: assign_target,
# env_call, `|=`, del, aliases); `from os import environ as e` makes every `e[...] = ` one
_ENV_WRITE = re.compile(
    rb"environ\s*\[[^\]\n]*\]\s*(?:=(?!=)|\|=)"
    rb"|environ\s*\.\s*(?:update|setdefault|pop|popitem|clear|__setitem__|__delitem__)\b"
    rb"|environ\s*\|="
    rb"|\bdel\b[^\n]*environ"
    rb"|(?:=|:=|\bas)\s*(?:[\w.]*\.)?environ\b(?!\s*[.\[(])"
    rb"|environ\s+as\b"
)


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


# a dotted name alone on its line (or after a `;`) up to where it is assigned: `torch.cuda.is_available`
_CHAIN = re.compile(rb"[ \t]*([A-Za-z_]\w*)(?:\s*\.\s*[A-Za-z_]\w*)*\s*")


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
            # cudalint.summary.summarize.call_effects): `platform.system()` is not `os.system`, nor a name
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
        # (the assignment `.name =` first, then the chain before it on its line: the chain tried at every
        # line start was 7 % of the scan)
        self.patch_re = re.compile(rb"\.\s*(" + b"|".join(re.escape(w) for w in sorted(patched)) + rb")\s*(?::[^=\n]*)?=(?!=)") if patched else None
        self.patched = frozenset(patched)
        self.patched_members = frozenset(patched_members)

    def _assigns_api(self, data: bytes, heads: Optional[frozenset], words: frozenset) -> bool:
        """`torch.cuda.is_available = f`: an attribute of an imported name (`self.device = d` is not).
        `words`: the text's words (or more); the attribute's name is one of them."""
        if self.patched.isdisjoint(words):
            return False
        for m in self.patch_re.finditer(data):  # type: ignore[union-attr]
            at = m.start()
            start = max(data.rfind(b"\n", 0, at), data.rfind(b";", 0, at)) + 1  # (the statement's start)
            chain = _CHAIN.fullmatch(data, start, at)
            if chain is not None and (heads is None or chain.group(1) in heads or m.group(1) in self.patched_members):
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
            return calls.int_first(clause.qualified) if clause.int_first else clause.qualified in calls
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
        name stands for (cudalint.scan.imports._imports), None when unknown; `imported`: the modules
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
        patched: Optional[bool] = None if self.patch_re is not None else False  # (asked only for a monkeypatch clause)
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
            if clause.module and imported is not None and clause.module not in imported:
                continue
            if not all(w in words for w in clause.words) or (clause.makers and not any(w in root_words for w in clause.makers)):
                continue
            if clause.kind == "monkeypatch":
                if patched is None:
                    patched = self._assigns_api(data, heads, words)
                if not patched:
                    continue
            if (
                strings_of.may_hold(clause.needs)
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
        if "nvml_source" in kinds and "cuda_source" in kinds and only in (None, "nvml_sink"):
            # a per-GPU list in NVML order taken at a CUDA ordinal (`rows[torch.cuda.current_device()]`,
            # cudalint.summary.label_effects.subscript_sink): a subscript, which no catalogue entry names
            kinds.add("nvml_sink")
        if only in (None, "*") and b"CUDA_VISIBLE_DEVICES" in data:
            # CUD010: a child's environment gets it (`dict(os.environ, CUDA_VISIBLE_DEVICES=...)`), or
            # code reads this process's own (a fact its callers' paths need: cudalint.summary.child_env)
            kinds.add("*")
        return tuple(sorted(kinds))


_TRIGGERS: dict[int, tuple[Catalogue, _Triggers]] = {}


def _triggers(catalogue: Catalogue) -> _Triggers:
    # keyed by identity: hashing a whole catalogue per file would cost more than the scan
    hit = _TRIGGERS.get(id(catalogue))
    if hit is None or hit[0] is not catalogue:
        hit = _TRIGGERS[id(catalogue)] = (catalogue, _Triggers(catalogue))
    return hit[1]
