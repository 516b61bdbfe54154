"""Which modules of a project can matter to one file, from import statements found without parsing.

A finding in a file can depend on the modules it imports (their top level runs first) and on the
modules that import it (they call its functions after doing something else). Both are in the file's
connected component of the import graph, so the flake8 plugin analyses that component, not the
whole project, and reuses the result for every other file of the component.

The statements are found with a regular expression, which errs on the side of more edges (an
`import` inside a docstring adds one): a larger component costs time, never a finding. The module
names are resolved the way `cudalint.core.project.Project.resolve_module` does (next to the importer
first, then by dotted name), keeping every candidate.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Sequence

from cudalint.core.modnames import module_name
from cudalint.digest import hex_digest

_IMPORT_RE = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<dots>\.*)[ \t]*(?P<mod>[\w.]*)[ \t]+import[ \t]*(?P<names>\([^)]*\)|[^\n#;]*)"
    r"|import[ \t]+(?P<plain>[^\n#;]*))",
    re.MULTILINE,
)


def _prefixes(name: str) -> Iterable[str]:
    parts = name.split(".")
    for i in range(len(parts)):
        yield ".".join(parts[: i + 1])


def imported_names(text: str, modname: str, is_package: bool) -> tuple[set[str], bool]:
    """Every dotted module name an import statement in `text` may run, and whether any is relative."""
    names: set[str] = set()
    relative = False
    package = modname if is_package else modname.rpartition(".")[0]
    for m in _IMPORT_RE.finditer(text):
        plain = m.group("plain")
        if plain is not None:
            for part in plain.replace("\\", " ").split(","):
                words = part.split()
                if words and words[0].replace(".", "").replace("_", "a").isalnum():
                    names.update(_prefixes(words[0]))
            continue
        mod = m.group("mod")
        dots = len(m.group("dots"))
        if dots:
            relative = True
            base = package.split(".") if package else []
            if dots - 1 > len(base):
                continue
            base = base[: len(base) - (dots - 1)]
            mod = ".".join(base + ([mod] if mod else []))
        if mod:
            names.update(_prefixes(mod))
        for part in m.group("names").strip().strip("()").replace("\\", " ").split(","):
            words = part.split()
            if words and words[0] != "*" and words[0].isidentifier():
                names.add(f"{mod}.{words[0]}" if mod else words[0])
    return names, relative


@dataclass
class ImportGraph:
    """The project's files (in discovery order), their content digests and undirected import edges.

    The edges are found when a component is first asked for: the flake8 plugin given a whole project
    needs only the digests (finding the edges was four fifths of building the graph on lightning)."""

    paths: list[str]
    digests: dict[str, str]
    order: dict[str, int] = field(default_factory=dict)
    read: Optional[Callable[[str], Optional[bytes]]] = field(default=None, repr=False, compare=False)
    _edges: Optional[dict[str, set[str]]] = field(default=None, repr=False, compare=False)
    _components: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def build(cls, files: Sequence[str], read: Callable[[str], Optional[bytes]]) -> "ImportGraph":
        paths: list[str] = []
        digests: dict[str, str] = {}
        for path in files:
            if path.endswith(".ipynb"):
                continue
            data = read(path)
            if data is None:
                continue
            path = os.path.normpath(path)
            paths.append(path)
            digests[path] = hex_digest(data)
        return cls(paths=paths, digests=digests, order={p: i for i, p in enumerate(paths)}, read=read)

    @property
    def edges(self) -> dict[str, set[str]]:
        if self._edges is None:
            self._edges = self._link()
        return self._edges

    def _link(self) -> dict[str, set[str]]:
        # (the files are read again: a file changed since its digest was taken gets the edges of its
        # new text, and flake8's text of it no longer matches the digest, so it is judged alone)
        imports: dict[str, set[str]] = {}
        by_name: dict[str, list[str]] = {}
        for path in self.paths:
            data = self.read(path) if self.read is not None else None
            modname, is_package = module_name(os.path.abspath(path))
            imports[path] = imported_names(data.decode("utf-8", "replace"), modname, is_package)[0] if data is not None else set()
            if modname:
                by_name.setdefault(modname, []).append(path)
        edges: dict[str, set[str]] = {}
        for path in self.paths:
            edges.setdefault(path, set())
            base = os.path.dirname(path)
            for name in imports[path]:
                rel = name.replace(".", "/")
                targets = [os.path.normpath(os.path.join(base, rel + ".py")), os.path.normpath(os.path.join(base, rel, "__init__.py"))]
                targets.extend(by_name.get(name, ()))
                for target in targets:
                    if target in self.digests and target != path:
                        edges[path].add(target)
                        edges.setdefault(target, set()).add(path)
        return edges

    def component(self, path: str) -> list[str]:
        """The files connected to `path` by imports in either direction, in discovery order (each
        component found once: flake8 asks for every file of a project, one at a time)."""
        path = os.path.normpath(path)
        if path not in self.edges:
            return [path]
        known = self._components.get(path)
        if known is not None:
            return list(known)
        seen = {path}
        todo = [path]
        while todo:
            for nxt in self.edges[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        members = tuple(sorted(seen, key=lambda p: self.order.get(p, -1)))
        for member in members:
            self._components[member] = members
        return list(members)
