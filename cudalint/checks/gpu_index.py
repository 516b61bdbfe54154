"""CUD004: a GPU index from one numbering used in the other.

NVML and nvidia-smi number GPUs physically (PCI order) and ignore CUDA_VISIBLE_DEVICES; CUDA
ordinals are numbered after it (and in CUDA_DEVICE_ORDER, FASTEST_FIRST by default). The values are
labelled by the summarizer (cudalint.summary.labels); this check resolves labels that come from a project
function's return value and judges the sinks:

- an NVML index where a CUDA ordinal is expected (`torch.cuda.set_device`, `torch.device(f"cuda:{i}")`,
  `.to(...)`, `cupy.cuda.Device`, `Llama(main_gpu=...)`): error;
- a CUDA ordinal where an NVML index is expected (`nvmlDeviceGetHandleByIndex`): error;
- NVML indices written to CUDA_VISIBLE_DEVICES while nothing in the project sets
  CUDA_DEVICE_ORDER=PCI_BUS_ID: a warning of the same code (the mapping is right only in PCI order).

Labels do not depend on the flow state, so each event is judged once, in its own function's walk; a
read of CUDA_VISIBLE_DEVICES earlier on that walk (in it or in a function it calls) means the code
maps between the numberings itself, and the sink is not flagged.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator, Optional

from cudalint.analysis.callgraph import ProjectIndex
from cudalint.core.findings import Finding, Step
from cudalint.analysis.check_marks import judges, own_only
from cudalint.analysis.flow import Analyzer, Exposed
from cudalint.core.ir import Event, Label, ModuleIR

CVD = "CUDA_VISIBLE_DEVICES"
ORDER = "CUDA_DEVICE_ORDER"
READ = "env_read:CUDA_VISIBLE_DEVICES"  # the fact cudalint.checks.gpu_enumeration derives
_NOTES = {
    "nvml": "{text} gives an NVML index (physical PCI order; ignores CUDA_VISIBLE_DEVICES)",
    "cuda": "{text} is a CUDA ordinal (numbered after CUDA_VISIBLE_DEVICES)",
}
_MAX_DEPTH = 8


_BOTH = frozenset(_NOTES)
_NVML = frozenset(("nvml",))


def resolve(
    index: ProjectIndex, mod: ModuleIR, labels: Iterable[Label], depth: int = 0, want: frozenset = _BOTH
) -> Iterator[tuple[str, tuple[Step, ...]]]:
    """(numbering, witness steps from the value's origin) for each label, through return values and
    callers' arguments, lazily and earliest origin first: a check takes the first it can use. Only
    the numberings in `want` are given, and a branch that cannot reach one is not entered: on
    transformers, listing every path from 575 sinks up to 8 calls away made 494,521 calls of this
    function where the project has no NVML index at all."""
    if want.isdisjoint(numberings(index, mod, labels, depth)):
        return
    # labels come in sets (string hashes vary between runs): the earliest origin is the witness
    for lb in sorted(labels, key=lambda x: (int(x.origin) if isinstance(x.origin, int) else 0, x.kind, x.detail, x.text)):
        if lb.kind in _NOTES:
            if lb.kind in want:
                yield lb.kind, (Step(mod.path, int(lb.origin), _NOTES[lb.kind].format(text=lb.text)),)  # type: ignore[arg-type]
        elif lb.kind == "param" and depth < _MAX_DEPTH:
            for caller, ev, given, name in _passed(index, mod, lb):
                how = "starts a child process with it as" if len(ev.data) > 2 and ev.data[2] == "child" else "passes it as"
                passed = Step(caller.path, ev.loc[0], f"{ev.text} {how} `{name}`")
                for kind, steps in resolve(index, caller, given, depth + 1, want):
                    yield kind, steps + (passed,)
        elif lb.kind == "ret" and depth < _MAX_DEPTH:
            for callee, returned, inner in _returned(index, mod, lb):
                for kind, steps in resolve(index, callee, inner, depth + 1, want):
                    yield kind, steps + returned


def numberings(index: ProjectIndex, mod: ModuleIR, labels: Iterable[Label], depth: int = 0) -> frozenset:
    """The numberings `resolve` can give for these labels at this depth, memoized for the run (on
    the index; keyed by the labels' identity, which the entry keeps alive)."""
    memo = index.memos.setdefault("CUD004 numberings", {})
    key = (id(labels), mod.path, depth)
    hit = memo.get(key)
    if hit is not None:
        return hit[1]
    found: set[str] = set()
    for lb in labels:
        if found == _BOTH:
            break
        if lb.kind in _NOTES:
            found.add(lb.kind)
        elif lb.kind == "param" and depth < _MAX_DEPTH:
            for caller, _ev, given, _name in _passed(index, mod, lb):
                found |= numberings(index, caller, given, depth + 1)
        elif lb.kind == "ret" and depth < _MAX_DEPTH:
            for callee, _steps, inner in _returned(index, mod, lb):
                found |= numberings(index, callee, inner, depth + 1)
    kinds = frozenset(found)
    memo[key] = (labels, kinds)
    return kinds


def _returned(index: ProjectIndex, mod: ModuleIR, lb: Label) -> Iterator[tuple[ModuleIR, tuple[Step, ...], tuple]]:
    """Where a call's result comes from: (module, the steps back to the call, the labels there)."""
    found = index.resolve(mod, lb.detail)
    if found is None and lb.detail.startswith(":"):
        return  # a local callable we cannot see (`mapper = getattr(obj, "remap")`): unknown
    if found is None:
        # not a project function (numpy.argmax, a library the catalogue does not know):
        # its result keeps the numbering of what it was given
        yield mod, (Step(mod.path, int(lb.origin), f"{lb.text} keeps it"),), lb.inner  # type: ignore[arg-type]
        return
    callee_mod, qualname = found
    fn = callee_mod.functions.get(qualname)
    if fn is None:
        return
    back = Step(mod.path, int(lb.origin), f"{lb.text} gives it here")  # type: ignore[arg-type]
    for ret in fn.returns:
        yield callee_mod, (Step(callee_mod.path, int(ret.origin), f"{qualname}() returns it ({ret.text})"), back), ret.inner


def _passed(index: ProjectIndex, mod: ModuleIR, lb: Label) -> Iterator[tuple[ModuleIR, Event, tuple, str]]:
    """A parameter holds what its callers pass: (caller, call event, the argument's labels, the
    parameter's name) for each call site that passes it."""
    qualname, _, rest = lb.detail.partition("|")
    position, _, name = rest.partition("|")
    fn = mod.functions.get(qualname)
    if fn is None or not position.isdigit():
        return
    # `obj.m(x)` / `self.m(x)`: the first argument written is the second parameter
    offset = 1 if fn.params and fn.params[0] in ("self", "cls") else 0
    slot = str(int(position) - offset) if int(position) >= offset else ""
    for caller, ev in index.arg_sites(mod.path, qualname):
        for given_slot, given in ev.data[1]:
            if given_slot == name or given_slot == slot:
                yield caller, ev, given, name


def _dedup(steps: tuple[Step, ...]) -> tuple[Step, ...]:
    """One step per line in a row: `set_device(free_gpu())` gets the value and uses it on one line."""
    out: list[Step] = []
    for step in steps:
        if out and (out[-1].path, out[-1].line) == (step.path, step.line):
            out[-1] = step
            continue
        out.append(step)
    return tuple(out)


def checks(enabled: Callable[[str], bool]) -> list[tuple[str, Callable]]:
    if not enabled("CUD004"):
        return []
    orders: dict[tuple[int, str], bool] = {}

    def pci_order_set(index: ProjectIndex, mod: ModuleIR) -> bool:
        # the module that writes CUDA_VISIBLE_DEVICES also sets the order (the shell may set it too:
        # `# noqa: CUD004` then says so)
        key = (id(index), mod.path)
        if key not in orders:
            orders[key] = any(ev.data[0] == ORDER and "PCI_BUS_ID" in str(ev.data[1]) for ev in index.events(mod, "env_write"))
        return orders[key]

    def finding(exposed: Exposed, steps: tuple[Step, ...], note: str, message: str, severity: str) -> Finding:
        ev = exposed.event
        return Finding.at(
            "CUD004",
            exposed.path,
            ev.loc,
            message=message,
            witness=_dedup(steps + (Step(exposed.path, ev.loc[0], note),)),
            severity=severity,
        )

    @own_only
    def check_sink(analyzer: Analyzer, exposed: Exposed, lookup, _prefix) -> Optional[Finding]:
        if lookup(READ) is not None:
            # the path reads CUDA_VISIBLE_DEVICES (itself or in a helper it calls): the code maps
            # between the numberings (DeepSpeed's _get_nvml_gpu_id: ids[torch_gpu_id] when it is set,
            # the same id when it is not)
            return None
        index = analyzer.index
        mod = index.module(exposed.path)
        if mod is None:
            return None
        ev = exposed.event
        sink, api, labels, arg = ev.data[:4]
        listed: tuple[Step, ...] = ()
        if api == "[]":
            # a subscript (cudalint.summary.label_effects.subscript_sink): the list is in NVML order
            api = f"`{ev.data[4]}`, a per-GPU list in NVML/nvidia-smi order"
            listed = next((steps for _kind, steps in resolve(index, mod, ev.data[5], want=_NVML)), ())
        else:
            api = f"{api}()" if "." in api else f".{api}()"
        wrong = "nvml" if sink == "cuda" else "cuda"
        for _kind, steps in resolve(index, mod, labels, want=frozenset((wrong,))):
            origin = steps[0].note.split(" gives ")[0].split(" is a ")[0]
            origin += f", line {steps[0].line}" if steps[0].path == exposed.path else f", {steps[0].path}:{steps[0].line}"
            if sink == "cuda":
                message = (
                    f"`{arg}` is an NVML/nvidia-smi index (from {origin}) used as a CUDA ordinal in "
                    f"{api}; NVML numbers GPUs physically and ignores CUDA_VISIBLE_DEVICES. Map it through the visible "
                    "list or by UUID / PCI bus id"
                )
                note = f"used as a CUDA ordinal by {api}"
            else:
                message = (
                    f"`{arg}` is a CUDA ordinal (from {origin}) used as an NVML index in {api}; "
                    "NVML ignores CUDA_VISIBLE_DEVICES and numbers GPUs physically. Look the device up by UUID or PCI "
                    "bus id (nvmlDeviceGetHandleByUUID / nvmlDeviceGetHandleByPciBusId)"
                )
                if listed:
                    message = (
                        f"`{arg}` is a CUDA ordinal (from {origin}) used to pick a row of {api} (line {listed[0].line}), "
                        "which lists every GPU of the machine in PCI order and ignores CUDA_VISIBLE_DEVICES. Map the "
                        "ordinal through CUDA_VISIBLE_DEVICES or ask about the device itself (torch.cuda.get_device_capability, "
                        "its UUID)"
                    )
                note = f"used as an NVML index by {api}" if not listed else f"picks a row of {api} by it"
            return finding(exposed, listed + steps, note, message, "error")
        return None

    @own_only
    @judges(lambda ev: len(ev.data) >= 5 and ev.data[0] == CVD and bool(ev.data[4]))
    def check_env(analyzer: Analyzer, exposed: Exposed, _lookup, _prefix) -> Optional[Finding]:
        ev = exposed.event
        index = analyzer.index
        mod = index.module(exposed.path)
        if mod is None or pci_order_set(index, mod):
            return None
        for _kind, steps in resolve(index, mod, ev.data[4], want=_NVML):
            message = (
                f"CUDA_VISIBLE_DEVICES is built from NVML/nvidia-smi indices (line {steps[0].line}) but nothing sets "
                "CUDA_DEVICE_ORDER=PCI_BUS_ID in this module; CUDA's default order (FASTEST_FIRST) can differ from nvidia-smi's on "
                "a machine with mixed GPUs. Set os.environ['CUDA_DEVICE_ORDER'] = 'PCI_BUS_ID' too"
            )
            return finding(exposed, steps, "written to CUDA_VISIBLE_DEVICES without CUDA_DEVICE_ORDER=PCI_BUS_ID", message, "warning")
        return None

    return [("gpu_index", check_sink), ("env_write", check_env)]
