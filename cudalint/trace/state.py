"""Per-process tracer state shared by the hooks: the event writer and what has initialized CUDA."""
from __future__ import annotations

import os
import threading
from typing import Any

from cudalint.trace.events import EventWriter


class TraceState:
    def __init__(self, writer: EventWriter, *, driver_present: bool) -> None:
        self.writer = writer
        # the parent found libcuda.so.1 on this machine; without it the probe cannot say anything
        # and "initialized" means "a catalogued initializing call ran" (call order only)
        self.driver_present = driver_present
        self.first_init: dict[str, Any] | None = None
        self.done: set[str] = set()  # APIs whose first call is recorded (per process)
        self.local = threading.local()  # .depth: inside an init wrapper (nested calls not recorded)

    def emit(self, kind: str, **fields: Any) -> None:
        self.writer.emit(kind, **fields)

    def record_init(self, event: dict[str, Any]) -> None:
        if self.first_init is None:
            self.first_init = event
        self.writer.emit("init", **event)

    def cuda_initialized(self) -> tuple[bool, str]:
        """(initialized?, how we know): the libcuda probe where a driver exists, else call order."""
        if self.driver_present:
            from cudalint.trace.nvml import driver_state

            state = driver_state()
            if state in ("initialized", "not-initialized", "not-loaded"):
                return state == "initialized", "libcuda probe: " + state
        return self.first_init is not None, "call order"

    def after_fork_in_child(self) -> None:
        self.writer.after_fork_in_child()
        # the child inherits CUDA state but its own first calls are new evidence (bad-fork use)
        self.done = set()
        self.local = threading.local()


def env_snapshot(names: list[str]) -> dict[str, str | None]:
    return {n: os.environ.get(n) for n in names}
