"""What the child must hook, computed once in the parent from the catalogue.

The catalogue is the one list of library behaviour (the analyzer reads the same entries); this module
only selects the entries the tracer can act on and flattens them to JSON, so the child starts without
parsing TOML. Entries the tracer cannot hook are listed with the reason, for `--format json`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cudalint.catalogue import Api, Catalogue


@dataclass(frozen=True)
class HookPlan:
    init: tuple[dict[str, Any], ...]          # calls/probes/imports that initialize CUDA
    touch: tuple[str, ...]                    # Class.method names that use a llama context
    construct: tuple[str, ...]                # classes whose instances own a llama context
    env: tuple[dict[str, Any], ...]           # variables read once: name, frozen_by, rule
    frozen_imports: tuple[str, ...]           # modules whose import freezes a variable
    skipped: tuple[dict[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "init": list(self.init),
            "touch": list(self.touch),
            "construct": list(self.construct),
            "env": list(self.env),
            "frozen_imports": list(self.frozen_imports),
            "skipped": list(self.skipped),
        }

    def dump(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(self.to_json(), fh)


def _conds(conds: tuple[tuple[tuple[str, ...], str], ...]) -> list[list[Any]]:
    return [[list(slots), pattern] for slots, pattern in conds]


def build_plan(cat: Catalogue) -> HookPlan:
    init: list[dict[str, Any]] = []
    touch: list[str] = []
    construct: list[str] = []
    skipped: list[dict[str, str]] = []
    seen: set[str] = set()
    for api in cat.apis:
        if api.initializes:
            if api.kind == "method":
                # `x.cuda()` on any receiver has no single object to wrap; the probes
                # (torch.cuda._lazy_init) that every such path goes through record it instead
                skipped.append({"name": "." + api.name, "why": "method on any receiver; covered by probes"})
            elif api.is_glob:
                skipped.append({"name": api.name, "why": "glob name; no single object to wrap"})
            else:
                entry = _init_entry(api)
                key = json.dumps(entry, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    init.append(entry)
        if api.get("touches_context") and api.name not in touch:
            touch.append(api.name)
        if api.get("llama_context") and api.name not in construct:
            construct.append(api.name)
    env = tuple({"name": e.name, "frozen_by": e.frozen_by, "rule": e.rule, "library": e.library} for e in cat.env)
    frozen_imports = tuple(sorted({e.frozen_by.split(":", 1)[1] for e in cat.env if e.frozen_by.startswith("import:")}))
    return HookPlan(tuple(init), tuple(touch), tuple(construct), env, frozen_imports, tuple(skipped))


def _init_entry(api: Api) -> dict[str, Any]:
    return {
        "name": api.name,
        "kind": api.kind,
        "init": api.init,
        "library": api.library,
        "note": api.note,
        "match": _conds(api.match),
        "unless": _conds(api.unless),
    }


def load_plan(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)
