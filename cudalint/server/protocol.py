"""`cudalint server`: the Language Server Protocol over stdio (pygls).

The message loop only records what the editor says (open, change, save, close) and hands the
affected project to one analysis thread. That thread waits until the edits pause (`debounce`),
analyzes the project with every open buffer in place, and publishes diagnostics for the open
documents of that project, unless a newer edit arrived meanwhile: then the analysis stops where it
is (or its result, if it was done, is dropped), and it runs again with the newer text. Diagnostics
are sent from the message loop's own thread (`call_soon_threadsafe`), never written from the worker.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from cudalint import __version__
from cudalint.analysis.flow import Cancelled
from cudalint.core.findings import Finding
from cudalint.server.convert import diagnostic, uri_to_path
from cudalint.server.engine import Project, Projects

log = logging.getLogger("cudalint.server")
DEBOUNCE_SECONDS = 0.03  # edits closer than this are analyzed together
SETTINGS_FILES = ("pyproject.toml", "cudalint.toml", "setup.cfg")


@dataclass(frozen=True)
class Doc:
    uri: str
    path: str
    version: Optional[int]
    text: str


class Worker:
    """The analysis thread: debounced, one project at a time, stale results dropped."""

    def __init__(self, server: "CudalintServer", debounce: float):
        self.server = server
        self.debounce = debounce
        self.cond = threading.Condition()
        self.generation = 0
        self.last_change = 0.0
        self.dirty: dict[int, Project] = {}
        self.thread = threading.Thread(target=self.run, name="cudalint-analysis", daemon=True)
        self.thread.start()

    def touch(self, project: Project) -> None:
        with self.cond:
            self.generation += 1
            self.last_change = time.monotonic()
            self.dirty[id(project)] = project
            self.cond.notify()

    def run(self) -> None:
        while True:
            with self.cond:
                while not self.dirty:
                    self.cond.wait()
                while True:  # debounce: until no edit for `debounce` seconds
                    left = self.last_change + self.debounce - time.monotonic()
                    if left <= 0:
                        break
                    self.cond.wait(left)
                generation = self.generation
                projects = list(self.dirty.values())
                self.dirty.clear()
            for project in projects:
                docs = self.server.docs_of(project)
                try:
                    # (a newer edit of this project, queued meanwhile, ends this analysis: on vllm one
                    # takes 1.5-3 s, and typing waited for the one under way before its own began)
                    by_path = project.analyze({d.path: d.text for d in docs}, cancelled=lambda p=project: id(p) in self.dirty)
                except Cancelled:
                    log.info("analysis of %s cancelled: a newer edit is waiting", project.root)
                    continue
                except Exception as exc:  # never take the server down: say it in the log and the editor
                    log.exception("analysis failed")
                    self.server.notify_error(f"cudalint: analysis failed: {type(exc).__name__}: {exc}")
                    continue
                with self.cond:
                    if self.generation != generation and id(project) in self.dirty:
                        continue  # stale: a newer edit of this project is queued
                self.server.publish(project, docs, by_path)


class CudalintServer(LanguageServer):
    def __init__(self, cache_dir: Optional[Path] = None, debounce: float = DEBOUNCE_SECONDS):
        super().__init__("cudalint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.projects = Projects(cache_dir)
        self.docs: dict[str, Doc] = {}  # by path
        self.findings: dict[str, list[Finding]] = {}  # the last published, by path
        self.docs_lock = threading.Lock()
        self.worker = Worker(self, debounce)
        self.loop_ref: Optional[asyncio.AbstractEventLoop] = None

    # ---- called on the message loop ----
    def record(self, uri: str, version: Optional[int]) -> Optional[Project]:
        path = uri_to_path(uri)
        if path is None or not path.endswith((".py", ".pyi")):
            return None
        self.loop_ref = self.loop_ref or asyncio.get_running_loop()
        text = self.workspace.get_text_document(uri).source
        with self.docs_lock:
            self.docs[os.path.normpath(path)] = Doc(uri, os.path.normpath(path), version, text)
        project = self.projects.of(path)
        self.worker.touch(project)
        return project

    def forget(self, uri: str) -> None:
        path = uri_to_path(uri)
        if path is None:
            return
        with self.docs_lock:
            self.docs.pop(os.path.normpath(path), None)
        self.findings.pop(os.path.normpath(path), None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if path.endswith((".py", ".pyi")):
            self.worker.touch(self.projects.of(path))  # the file on disk counts again for the others

    def disk_changed(self, path: str, created_or_deleted: bool = False) -> None:
        """A file changed on disk (saved, or changed by another program): re-judge its project."""
        for project in self.projects.all():
            try:
                Path(path).resolve().relative_to(project.root.resolve())
            except ValueError:
                continue
            if created_or_deleted or os.path.basename(path) in SETTINGS_FILES:
                project.forget_files()
            self.worker.touch(project)

    # ---- called on the worker ----
    def docs_of(self, project: Project) -> list[Doc]:
        with self.docs_lock:
            return [d for d in self.docs.values() if self.projects.of(d.path) is project]

    def publish(self, project: Project, docs: list[Doc], by_path: dict[str, list[Finding]]) -> None:
        lines: dict[str, list[str]] = {d.path: d.text.splitlines() for d in docs}

        def line_of(path: str, n: int) -> Optional[str]:
            key = os.path.normpath(path)
            if key not in lines:
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        lines[key] = fh.read().splitlines()
                except OSError:
                    lines[key] = []
            got = lines[key]
            return got[n - 1] if 1 <= n <= len(got) else None

        params = []
        for d in docs:
            found = by_path.get(d.path, [])
            self.findings[d.path] = found
            params.append(
                types.PublishDiagnosticsParams(uri=d.uri, version=d.version, diagnostics=[diagnostic(f, line_of) for f in found])
            )
        settings = project.settings()
        if settings.error:
            self.notify_error(f"cudalint: {settings.error} (using the defaults)")
        loop = self.loop_ref
        for p in params:
            if loop is not None:
                loop.call_soon_threadsafe(self.text_document_publish_diagnostics, p)

    def notify_error(self, message: str) -> None:
        loop = self.loop_ref
        if loop is not None:
            params = types.ShowMessageParams(type=types.MessageType.Error, message=message)
            loop.call_soon_threadsafe(self.window_show_message, params)


def build(cache_dir: Optional[Path] = None, debounce: float = DEBOUNCE_SECONDS) -> CudalintServer:
    server = CudalintServer(cache_dir, debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: CudalintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.record(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: CudalintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.record(params.text_document.uri, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: CudalintServer, params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        if path is not None:
            ls.loop_ref = ls.loop_ref or asyncio.get_running_loop()
            ls.disk_changed(path)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: CudalintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: CudalintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.loop_ref = ls.loop_ref or asyncio.get_running_loop()
        for change in params.changes:
            path = uri_to_path(change.uri)
            if path is not None:
                ls.disk_changed(path, created_or_deleted=change.type != types.FileChangeType.Changed)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: CudalintServer, params: types.InitializedParams) -> None:
        ls.loop_ref = asyncio.get_running_loop()
        caps = ls.client_capabilities.workspace
        watch = caps.did_change_watched_files if caps is not None else None
        if watch is not None and watch.dynamic_registration:
            # Python files created or deleted change the project; the settings files change the rules
            watchers = [types.FileSystemWatcher(glob_pattern=g) for g in ("**/*.py", "**/*.pyi", *(f"**/{n}" for n in SETTINGS_FILES))]
            await ls.client_register_capability_async(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="cudalint-watch",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
                        )
                    ]
                )
            )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False),
    )
    async def code_action(ls: CudalintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        from cudalint.server.actions import code_actions

        return await asyncio.to_thread(code_actions, ls, params)

    return server


def serve(cache_dir: Optional[Path] = None, log_file: Optional[str] = None) -> None:
    if log_file:
        logging.basicConfig(filename=log_file, level=logging.INFO)
    build(cache_dir).start_io()
