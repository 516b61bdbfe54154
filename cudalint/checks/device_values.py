"""CUD007: values the environment or a device API will not take as meant.

- a non-string written to the environment: `os.environ[k] = 1` raises TypeError at run time;
- a `CUDA_VISIBLE_DEVICES` literal CUDA does not parse as intended (knowledge.md §6): CUDA stops at
  the first invalid entry, so `"cuda:0"`, `"[0,1]"`, `"gpu0"` make no GPU visible;
- a `CUDA_DEVICE_ORDER` other than FASTEST_FIRST / PCI_BUS_ID;
- a literal device string a catalogued API rejects (`device_arg` / `device_ok` in the catalogue:
  `torch.cuda.set_device("cpu")`).
"""
from __future__ import annotations

import fnmatch
import re
from typing import Callable, Iterable, Optional

from cudalint.core.catalogue import Catalogue
from cudalint.core.findings import Finding
from cudalint.analysis.check_marks import local
from cudalint.analysis.flow import Exposed

NOT_STRINGS = {"int", "float", "bool", "NoneType", "list", "tuple", "dict", "set", "complex"}
DEVICE_ORDERS = ("FASTEST_FIRST", "PCI_BUS_ID")
_INDEX = re.compile(r"\d+")
_NEGATIVE = re.compile(r"-\d+")
_UUID = re.compile(r"GPU-[0-9A-Fa-f][0-9A-Fa-f-]*")
_MIG = re.compile(r"MIG-[0-9A-Za-z][0-9A-Za-z/-]*")


def visible_devices_problem(value: str) -> Optional[str]:
    """Why a CUDA_VISIBLE_DEVICES value will not select the devices it names, or None.

    Valid (knowledge.md §6): unset, "" and "-1" (no GPU), comma-separated indices, `GPU-<uuid>`
    prefixes, `MIG-...`. Spaces around entries are not flagged: NVIDIA does not document them and
    PyTorch's emulation of the parser strips them.
    """
    tokens = [t.strip() for t in value.split(",")]
    if not any(tokens):
        return None
    seen: set[str] = set()
    for i, tok in enumerate(tokens):
        last = i == len(tokens) - 1
        hidden = "no GPU will be visible" if i == 0 else "only the devices before it will be visible"
        if tok == "":
            if last:
                continue  # a trailing comma ends the list where it ends anyway
            return f"has an empty entry; CUDA stops at the first invalid entry, so {hidden}"
        if _NEGATIVE.fullmatch(tok):
            if any(tokens[i + 1 :]):
                return f"'{tok}' ends the list: CUDA stops at the first invalid index, so the devices after it are not visible"
            continue
        if _INDEX.fullmatch(tok):
            key = str(int(tok))
        elif _UUID.fullmatch(tok) or _MIG.fullmatch(tok):
            key = tok.lower()
        else:
            digits = re.findall(r"\d+", tok)
            hint = f" (write '{digits[0]}')" if len(digits) == 1 and i == 0 and len(tokens) == 1 else ""
            return (
                f"'{tok}' is not a device index, GPU-<uuid> or MIG-<uuid>{hint}; "
                f"CUDA stops at the first invalid entry, so {hidden}"
            )
        if key in seen:
            return (
                f"lists device {tok} twice; NVIDIA does not define repeats, and PyTorch's emulation of the "
                "parser treats a repeated device as an invalid list (no GPU visible)"
            )
        seen.add(key)
    return None


def _expected(globs: Iterable[str]) -> str:
    out = []
    for g in globs:
        out.append("an int" if g == "<int>" else f"'{g.replace('[0-9]*', '<n>')}'")
    return ", ".join(out)


def checks(catalogue: Catalogue, enabled: Callable[[str], bool]) -> Iterable[tuple[str, Callable]]:
    if not enabled("CUD007"):
        return []

    def finding(exposed: Exposed, message: str) -> Finding:
        ev = exposed.event
        return Finding("CUD007", exposed.path, ev.loc[0], ev.loc[1], ev.loc[2], ev.loc[3], message, (), "error")

    @local
    def check_env_value(_analyzer, exposed: Exposed, _lookup, _prefix) -> Optional[Finding]:
        var, text, vtype, exact = (exposed.event.data + ("", "", "", ""))[:4]
        shown = var or "an environment variable"
        if vtype in NOT_STRINGS:
            return finding(
                exposed,
                f"{shown} is given {'an' if vtype == 'int' else 'a'} {vtype} ({text}); the environment takes only strings, so this raises "
                f"TypeError at run time: write str({text})" if vtype != "NoneType" else
                f"{shown} is given None; the environment takes only strings, so this raises TypeError at run time "
                "(to remove the variable, use os.environ.pop(...))",
            )
        if vtype != "str" or not exact:
            return None
        if var == "CUDA_VISIBLE_DEVICES":
            problem = visible_devices_problem(exact)
            if problem:
                return finding(exposed, f"CUDA_VISIBLE_DEVICES={exact!r}: {problem}")
        elif var == "CUDA_DEVICE_ORDER" and exact not in DEVICE_ORDERS:
            return finding(
                exposed,
                f"CUDA_DEVICE_ORDER={exact!r} is not a value CUDA knows (FASTEST_FIRST or PCI_BUS_ID); the default order is used",
            )
        return None

    @local
    def check_device_arg(_analyzer, exposed: Exposed, _lookup, _prefix) -> Optional[Finding]:
        api_name, vtype, exact, text = exposed.event.data
        if vtype != "str" or not exact:
            return None
        for api in catalogue.calls_named(api_name):
            ok = api.get("device_ok")
            if not ok:
                continue
            if any(fnmatch.fnmatchcase(exact, g) for g in ok if not g.startswith("<")):
                return None
            return finding(exposed, f"{api_name}({text}): {exact!r} is not a CUDA device; expected {_expected(ok)}")
        return None

    return [("env_write", check_env_value), ("device_arg", check_device_arg)]
