"""Per-process tracer state shared by the hooks: the event writer and what has initialized CUDA."""
from __future__ import annotations

import threading

from cudalint.trace import probe
from cudalint.trace.events import EventWriter

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs the traced program's start-up
if TYPE_CHECKING:
    from typing import Any


class TraceState:
    def __init__(self, writer: EventWriter) -> None:
        self.writer = writer
        # is libcuda.so.1 on this machine? Without it the probe cannot say anything and
        # "initialized" means "a catalogued initializing call ran" (call order only). With it, ctypes
        # is imported now: the probe runs in fork handlers, where importing is not safe.
        self.driver_present = probe.driver_installed()
        if self.driver_present:
            import ctypes  # noqa: F401
        self.first_init: dict[str, Any] | None = None
        self.done: set[str] = set()  # APIs whose first call is recorded (per process)
        self.local = threading.local()  # .depth: inside an init wrapper (nested calls not recorded)
        self.quiet = False  # the tracer's own environment writes (children.refresh) are not evidence
        self.seen_sites: set[tuple[Any, ...]] = set()  # (api, code, line) of recorded init calls

    def emit(self, kind: str, **fields: Any) -> None:
        self.writer.emit(kind, **fields)

    def record_init(self, event: dict[str, Any]) -> None:
        if self.first_init is None:
            self.first_init = event
        self.writer.emit("init", **event)

    def cuda_initialized(self) -> tuple[bool, str]:
        """(initialized?, how we know): the libcuda probe where a driver exists, else call order."""
        if self.driver_present:
            state = probe.driver_state()
            if state in ("initialized", "not-initialized", "not-loaded"):
                return state == "initialized", "libcuda probe: " + state
        return self.first_init is not None, "call order"

    def after_fork_in_child(self) -> None:
        self.writer.after_fork_in_child()
        # the child inherits CUDA state but its own first calls are new evidence (bad-fork use)
        self.done = set()
        self.seen_sites = set()
        self.local = threading.local()
