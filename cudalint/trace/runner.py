"""The parent side: start the program in a child with the hooks, forward signals, wait, correlate.

The child is `sys.executable` with the interpreter's own flags, the same cwd, inherited stdio and
the same environment (plus one variable the bootstrap removes). While it runs, the parent lints the
program (static findings) and, where a driver exists, samples NVML, so neither costs the program
wall time. Only the events file connects the two processes.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

from cudalint.trace.handoff import BOOT, CONFIG_VAR
from cudalint.trace.plan import cached_plan, load_plan

TYPE_CHECKING = False  # typing's import is start-up time the program waits for
if TYPE_CHECKING:
    from typing import Any, Sequence, TextIO

    from cudalint.core.findings import Finding


# Everything else is imported once the child runs: the program should not wait for the report code.

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _terminal_already_sent(signum: int) -> bool:
    """Ctrl-C at a terminal goes to the whole foreground process group, child included: forwarding
    it again would interrupt the program twice. So SIGINT is forwarded only when we are not the
    terminal's foreground group (e.g. `kill -INT <pid>` from a script)."""
    if signum != signal.SIGINT:
        return False
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


class _Static:
    """The static analyzer, run in a thread while the program runs."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.note = ""
        self.lint: Any = None
        self._thread: threading.Thread | None = None

    def start(self, paths: list[str], catalogue: Sequence[str] = ()) -> None:
        try:
            from cudalint.api import lint_paths  # the analyzer (lead's package)
        except ImportError:
            self.note = "unavailable (cudalint.api is not installed); only runtime findings are shown"
            return
        from cudalint.engine.cache import Cache
        from cudalint.core.catalogue import load_catalogue
        from cudalint.inputs.config import Config

        # the analyzer must read the same extra catalogue as the hooks; like `cudalint PATH`, it
        # reuses the summary cache, so tracing the same program again does not parse it again
        config = Config(extend_catalogue=tuple(catalogue))
        cache = Cache.open(None, load_catalogue(config.extend_catalogue))
        self.lint = lambda p: lint_paths(p, config, cache=cache)
        self._thread = threading.Thread(target=self._run, args=(paths,), daemon=True, name="cudalint-static")
        self._thread.start()

    def _run(self, paths: list[str]) -> None:
        if not paths:
            return
        try:
            self.findings.extend(self.lint(paths).findings)
        except Exception as exc:  # a crash of the analyzer must not lose the runtime evidence
            self.note = f"failed: {type(exc).__name__}: {exc}"

    def finish(self, more: list[str]) -> list[Finding]:
        if self._thread is not None:
            self._thread.join()
        if self.lint is not None and more and not self.note:
            try:
                self.findings.extend(self.lint(more).findings)
            except Exception as exc:
                self.note = f"failed: {type(exc).__name__}: {exc}"
        from cudalint.trace.location import is_user_file

        seen, out = set(), []
        for f in self.findings:
            key = (f.code, os.path.realpath(f.path), f.line, f.column, f.message)
            if key not in seen and is_user_file(os.path.realpath(f.path)):
                seen.add(key)
                out.append(f)
        return out


def _user_files(events: list[dict[str, Any]]) -> set[str]:
    """Project files the program ran through (every event's user frame)."""
    out = set()
    for e in events:
        for key in ("site",):
            s = e.get(key)
            if s:
                out.add(os.path.realpath(s["path"]))
        for t in e.get("threads", ()):
            if t.get("site"):
                out.add(os.path.realpath(t["site"]["path"]))
    return out


def _module_file(name: str) -> str | None:
    """Where `python -m name` would find the module, without importing anything in this process."""
    from importlib.machinery import PathFinder

    search = [os.getcwd(), *sys.path[1:]]
    parts = name.split(".")
    spec = None
    for i, _ in enumerate(parts):
        spec = PathFinder.find_spec(".".join(parts[: i + 1]), search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    if spec is None or spec.origin in (None, "namespace"):
        return None
    if spec.submodule_search_locations:  # a package: python -m runs its __main__
        main = os.path.join(list(spec.submodule_search_locations)[0], "__main__.py")
        return main if os.path.exists(main) else None
    return spec.origin


def exit_status(confirmed: bool, returncode: int) -> int:
    """1 when a finding is confirmed; else the program's own failure, so that `cudalint --trace`
    can replace `python train.py` in CI (a signal N as 128+N, as shells report it); else 0."""
    if confirmed:
        return 1
    if returncode < 0:
        return 128 - returncode
    return returncode


def _relative(findings: list[Finding], cwd: str) -> list[Finding]:
    """The linter's path style: relative to the working directory when under it."""
    from cudalint.core.record import replace

    def rel(p: str) -> str:
        if not os.path.isabs(p):
            return p
        r = os.path.relpath(p, cwd)
        return p if r.startswith(os.pardir) else r

    return [replace(f, path=rel(f.path), witness=tuple(replace(s, path=rel(s.path)) for s in f.witness))
            for f in findings]


def run(argv: list[str], *, module: bool, fmt: str, out: TextIO | None = None, output: str | None = None,
        html: str | None = None, findings: list[Finding] | None = None, catalogue: Sequence[str] = (),
        events_file: str | None = None) -> int:
    if not argv:
        print("cudalint: --trace needs a program to run", file=sys.stderr)
        return 2
    target, args = argv[0], argv[1:]
    command = ["python", *(["-m"] if module else []), *argv]
    if not module and not os.path.exists(target):
        print(f"cudalint: can't open file {os.path.abspath(target)!r}: no such file", file=sys.stderr)
        return 2
    entry = _module_file(target) if module else target

    try:
        plan_path = cached_plan(tuple(catalogue))
    except Exception as exc:  # a catalogue the options check did not see (changed since)
        print(f"cudalint: catalogue: {exc}", file=sys.stderr)
        return 2
    # a private directory for the event stream (tempfile's import would cost start-up time)
    tmp = os.path.join(os.environ.get("TMPDIR") or "/tmp", f"cudalint-trace-{os.getpid()}-{time.monotonic_ns()}")
    os.mkdir(tmp, 0o700)
    try:
        events_path = os.path.abspath(events_file) if events_file else os.path.join(tmp, "events.jsonl")
        if events_file and os.path.exists(events_file):
            os.unlink(events_file)
        env = dict(os.environ)
        env[CONFIG_VAR] = f"{events_path}\n{plan_path}"
        cmd = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", BOOT.format(root=_ROOT),
               "module" if module else "script", target, *args]
        try:
            child = subprocess.Popen(cmd, env=env)
        except OSError as exc:
            print(f"cudalint: cannot start {sys.executable}: {exc}", file=sys.stderr)
            return 2

        def forward(signum: int, _frame: Any) -> None:
            if not _terminal_already_sent(signum):
                try:
                    child.send_signal(signum)
                except OSError:
                    pass

        previous = {s: signal.signal(s, forward) for s in FORWARDED}
        static = _Static()
        sampler, nvml_why = None, "no NVIDIA driver on this machine"
        try:
            # while the program runs: the analyzer, NVML, and the modules the report needs
            if findings is None:
                from cudalint.trace.location import is_user_file

                # `-m torch.distributed.run`: the launcher is not the user's code; the files its
                # workers ran through are linted once the run is over
                mine = entry and is_user_file(os.path.realpath(entry))
                static.start([entry] if mine else [], catalogue)
            from cudalint.trace import nvml, report
            from cudalint.trace.correlate import correlate
            from cudalint.trace.events import EventWriter, read_events

            if nvml.driver_present():
                backend, nvml_why = nvml.open_backend()
                if backend is not None:
                    writer = EventWriter(events_path)
                    sampler = nvml.Sampler(backend, child.pid, lambda kind, **f: writer.emit(kind, source="nvml", **f))
                    sampler.start()
            rc = child.wait()
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
            if sampler is not None:
                sampler.stop()

        plan = load_plan(plan_path)
        events = read_events(events_path)
        if any(e["kind"] == "start_failed" for e in events):
            return 2
        if not any(e["kind"] == "start" for e in events):
            # the bootstrap never ran (an interpreter that cannot import cudalint, a bad flag)
            print(f"cudalint: the traced program did not start (status {rc}); see the errors above", file=sys.stderr)
            return 2
        seen = _user_files(events) - ({os.path.realpath(entry)} if entry else set())
        cwd = os.getcwd()
        if findings is None:
            findings = static.finish(sorted(seen))
        else:
            static.note = ""
        findings = _relative(findings, cwd)
        sig = signal.Signals(-rc).name if rc < 0 else None
        result = correlate(
            findings, events, env_rules=plan["env"], cwd=cwd, returncode=rc if rc >= 0 else None,
            signal_name=sig, nvml_why=nvml_why, static_note=static.note,
        )
        status = exit_status(result.confirmed, rc)
        if html:
            from cudalint.trace import timeline

            _write_file(html, lambda fh: fh.write(timeline.page(result, events, command, cwd)))
        if out is not None:
            report.write(result, command, fmt, out, status)
        elif output and output != "-":
            _write_file(output, lambda fh: report.write(result, command, fmt, fh, status))
        else:
            sys.stdout.flush()  # what the program's own (inherited) stdout still holds is not ours
            report.write(result, command, fmt, sys.stderr, status)
        return status
    finally:
        for name in os.listdir(tmp):
            os.unlink(os.path.join(tmp, name))
        os.rmdir(tmp)
        if os.path.basename(plan_path).startswith("cudalint-plan-"):  # the uncached fallback copy
            os.unlink(plan_path)


def _write_file(path: str, write: Any) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            write(fh)
    except OSError as exc:  # checked before the program ran; the folder may have gone since
        print(f"cudalint: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
