"""What the bytes of a file say without parsing them: words, string literals (and what escapes or
adjacent literals could spell), qualified calls, keyword arguments.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional


_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")

_DUNDER = re.compile(r"^__\w+__$")

_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789")
_DIGITS = frozenset(b"0123456789")


def _has_word(text: bytes, word: bytes) -> bool:
    """Whether `_WORD.findall(text)` lists `word`: a word (not `import.`, a name the import regexes
    may find in a comment), found where no word character follows, with none but digits before it
    (`2foo` lists `foo`; `a2foo` is one word)."""
    if _WORD.fullmatch(word) is None:
        return False
    pos = text.find(word)
    while pos >= 0:
        end = pos + len(word)
        if end == len(text) or text[end] not in _WORD_BYTES:
            before = pos - 1
            while before >= 0 and text[before] in _DIGITS:
                before -= 1
            if before < 0 or text[before] not in _WORD_BYTES:
                return True
        pos = text.find(word, pos + 1)
    return False


# spellings that put text into a string value without writing it out: escapes, and adjacent
# literals / f-string placeholders that the summarizer's `literal` joins
_ESCAPE = re.compile(rb"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|N\{[^}\n]*\})")
_JOINER = re.compile(
    rb"[\"'](?:[ \t\r\n\\]|#[^\n]*\n)*[rRbBuUfF]{0,2}[\"']"  # (one way to match: no backtracking blow-up)
    rb"|\{[ \t]*[rRbBuU]{0,2}[\"']"
    rb"|[\"'][ \t]*\}"
)


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


_CALLED: dict[bytes, tuple[re.Pattern, re.Pattern, re.Pattern]] = {}
# A call `a.b.c(x`, found in the text read backwards: `(` first, then the dotted name spelled
# backwards, which must not go on into a word or a dot. A pattern that starts with a literal is
# searched for at C speed; read forwards (`(?<![\w.])a.b.c[ \t]*\(`) every word was a start to try,
# and that one regex was a twentieth of a worker's time on transformers. Forwards it also took the
# first argument's name for its own (`f(g(x))` found `f` only).
_CALL_CHAIN_BACKWARDS = re.compile(rb"\([ \t]*(\w*[A-Za-z_](?:[ \t]*\.[ \t]*\w*[A-Za-z_])*)(?![\w.])")
# the first argument's leading token, where there is one: a number, or a name
_FIRST_ARG = re.compile(rb"\(\s*(-?\d|[A-Za-z_]\w*)")

_INT_ASSIGNED = re.compile(rb"\b([A-Za-z_]\w*)\s*(?::[^=\n]*)?=\s*-?\d")


def _assigned_int(name: bytes, data: bytes, seen: dict[bytes, bool]) -> bool:
    names = seen.get(b"")
    if names is None:
        names = seen[b""] = {m.group(1) for m in _INT_ASSIGNED.finditer(data)}  # type: ignore[assignment]
    elif callable(names):
        names = seen[b""] = names()  # (given lazily: the int question is rarely asked)
    return name in names  # type: ignore[operator]


class _QualifiedCalls:
    """The calls of a text by qualified name (`in`, iteration), and whether some call of a name has
    a first argument that may be an int (`int_first`): asked of the few names a clause looks up,
    so the names assigned ints are found only then."""

    __slots__ = ("firsts", "data", "ints")

    def __init__(self, firsts: dict[str, set], data: bytes, ints: dict):
        self.firsts = firsts  # qualified name -> the first arguments' leading tokens (None: none)
        self.data = data
        self.ints = ints

    def __contains__(self, name: str) -> bool:
        return name in self.firsts

    def __iter__(self):
        return iter(self.firsts)

    def int_first(self, name: str) -> bool:
        # an int literal, or a name some assignment gives one (what cudalint.summary.syntax.literal sees)
        for first in self.firsts.get(name, ()):
            if first is not None and (first[:1] in b"-0123456789" or _assigned_int(first, self.data, self.ints)):
                return True
        return False


def _qualified_calls(data: bytes, bases: Mapping[bytes, tuple[str, ...]], ints: Optional[dict] = None) -> _QualifiedCalls:
    """The calls in `data` by qualified name: a dotted call `a.b.c(...)` is qualified through what
    its head was imported as (a local name, builtins and the like are kept as written)."""
    ints = {} if ints is None else ints  # (given: the names of the whole file, where constants are)
    raw: dict[bytes, set] = {}
    firsts = {m.start(): m.group(1) for m in _FIRST_ARG.finditer(data)}  # `(`'s place -> its first argument
    last = len(data) - 1
    for m in _CALL_CHAIN_BACKWARDS.finditer(data[::-1]):
        chain = m.group(1)[::-1]
        first = firsts.get(last - m.start())
        hit = raw.get(chain)
        if hit is None:
            raw[chain] = {first}
        else:
            hit.add(first)
    out: dict[str, set] = {}
    for chain, firsts in raw.items():
        if b" " in chain or b"\t" in chain:
            chain = re.sub(rb"\s", b"", chain)
        head, _, rest = chain.partition(b".")
        base = bases.get(head)
        names = [chain.decode()]
        if base:
            names.append(base[0] + ("." + rest.decode() if rest else ""))
        for name in names:
            have = out.get(name)
            if have is None:
                out[name] = firsts
            else:
                out[name] = have | firsts
    return _QualifiedCalls(out, data, ints)


def _keyword(name: bytes, data: bytes, seen: dict[bytes, bool]) -> bool:
    key = b"=" + name
    hit = seen.get(key)
    if hit is None:
        # the value cudalint.summary.summarize.value_of can read as a string: a literal, a constant's name,
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
            found = self._holds_once(need)  # (the triggers of one file ask the same texts many times)
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
            if not _may_join(need.lstrip(b"^"), self.data):
                return False
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


def _may_join(body: bytes, data: bytes) -> bool:
    """Whether joining adjacent literals (`_JOINER`) may spell `body`, which `data` does not hold:
    some part of it must end right before where a joint starts (a quote, or the `{` of an f-string
    placeholder). Asked before the joining, which rewrites the whole text (a fiftieth of a
    worker's time on transformers, mostly for texts that could not join into anything)."""
    return any(body[:i] + q in data for i in range(1, len(body)) for q in (b'"', b"'", b"{"))


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
