"""`cudalint server` through pygls's own client, over stdio, one feature per test."""
from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from tests.fixture_expectations import FIXTURES  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BAD = 'import os\n\nimport torch\n\nif torch.cuda.is_available():\n    os.environ["CUDA_VISIBLE_DEVICES"] = "1"\n'
CUD001_MESSAGE = (
    "CUDA_VISIBLE_DEVICES is set after CUDA was initialized by torch.cuda.is_available() (line 5); "
    "the driver read it then, so this write has no effect"
)


class Session:
    def __init__(self, root: Path, args: tuple[str, ...] = ()):
        self.root = root
        self.args = args  # more of `cudalint server`'s options
        self.client = LanguageClient("cudalint-test", "1")
        self.published: list[types.PublishDiagnosticsParams] = []
        self.messages: list[str] = []
        self.versions: dict[str, int] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        await self.client.start_io(sys.executable, "-m", "cudalint", "server", *self.args, cwd=str(self.root), env=env)
        await self.client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=self.root.as_uri(), process_id=os.getpid())
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str, text: str | None = None) -> None:
        text = (self.root / name).read_text() if text is None else text
        self.versions[name] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=self.uri(name), language_id="python", version=1, text=text))
        )

    def change(self, name: str, text: str) -> int:
        self.versions[name] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=self.uri(name), version=self.versions[name]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        return self.versions[name]

    async def diagnostics(self, name: str, when: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True, timeout: float = 120):
        deadline = time.monotonic() + timeout
        uri = self.uri(name)
        while time.monotonic() < deadline:
            for p in reversed(self.published):
                if p.uri == uri and when(p):
                    return list(p.diagnostics)
            await asyncio.sleep(0.02)
        raise AssertionError(f"no diagnostics for {name}; got {[(p.uri, p.version, len(p.diagnostics)) for p in self.published]}")


def run(root: Path, body, args: tuple[str, ...] = ()) -> None:
    async def main() -> None:
        session = Session(root, args)
        await session.start()
        try:
            await asyncio.wait_for(body(session), 300)
        finally:
            await session.stop()

    asyncio.run(main())


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (tmp_path / "t.py").write_text(BAD, encoding="utf-8")
    return tmp_path


def test_diagnostics_on_open_carry_code_range_severity_witness_and_doc_link(project: Path) -> None:
    async def body(s: Session) -> None:
        s.open("t.py")
        (d,) = await s.diagnostics("t.py", lambda p: bool(p.diagnostics))
        assert (d.code, d.source, d.severity, d.message) == ("CUD001", "cudalint", types.DiagnosticSeverity.Error, CUD001_MESSAGE)
        assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (5, 4, 5, 44)
        assert d.code_description.href == "https://github.com/cudalint/cudalint/blob/main/rules/CUD001.md"
        assert [(r.location.uri, r.location.range.start.line, r.message) for r in d.related_information] == [
            (s.uri("t.py"), 4, "torch.cuda.is_available() initializes CUDA (calls cudaGetDeviceCount, which runs cuInit (unless PYTORCH_NVML_BASED_CUDA_CHECK=1 and NVML works))"),
            (s.uri("t.py"), 5, "CUDA_VISIBLE_DEVICES is written here, after the CUDA driver read it"),
        ]

    run(project, body)


def test_every_change_is_judged_without_saving_and_stale_versions_are_not_published(project: Path) -> None:
    async def body(s: Session) -> None:
        s.open("t.py")
        await s.diagnostics("t.py", lambda p: bool(p.diagnostics))
        fixed = 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\nimport torch\n\ntorch.cuda.is_available()\n'
        for i in range(5):  # typing: only the last version needs an answer
            s.change("t.py", BAD + f"# {i}\n")
        last = s.change("t.py", fixed)
        assert await s.diagnostics("t.py", lambda p: p.version == last) == []
        assert (project / "t.py").read_text() == BAD  # nothing was saved
        versions = [p.version for p in s.published if p.uri == s.uri("t.py")]
        assert versions == sorted(versions) and versions[-1] == last
        assert len(versions) < 7  # the burst was debounced

    run(project, body)


def test_a_change_in_one_module_rejudges_the_open_documents_that_depend_on_it(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURES / "CUD001" / "cross_module", proj)
    (proj / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")

    async def body(s: Session) -> None:
        s.open("gpus.py")
        s.open("utils/device.py")
        (d,) = await s.diagnostics("gpus.py", lambda p: bool(p.diagnostics))
        assert d.code == "CUD001" and d.range.start.line == 4
        assert [(Path(r.location.uri).name, r.location.range.start.line) for r in d.related_information] == [
            ("device.py", 2), ("serve.py", 3), ("serve.py", 6), ("gpus.py", 4)
        ]
        # utils/device.py stops initializing CUDA at import: gpus.py (not edited) is clean
        s.change("utils/device.py", 'DEVICE = "cpu"\n')
        assert await s.diagnostics("gpus.py", lambda p: not p.diagnostics) == []
        s.change("utils/device.py", (proj / "utils" / "device.py").read_text())
        assert [d.code for d in await s.diagnostics("gpus.py", lambda p: bool(p.diagnostics))] == ["CUD001"]

    run(proj, body)


def test_code_actions_offer_the_proven_fix_and_noqa(project: Path) -> None:
    async def body(s: Session) -> None:
        s.open("t.py")
        diags = await s.diagnostics("t.py", lambda p: bool(p.diagnostics))
        actions = await s.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("t.py")),
                range=diags[0].range,
                context=types.CodeActionContext(diagnostics=diags),
            )
        )
        assert [a.title for a in actions] == [
            "Fix CUD001: Test `device_count() > 0` instead of `is_available()`",
            "Suppress CUD001 with # noqa: CUD001",
        ]
        fix, noqa = actions
        assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
        (edit,) = fix.edit.changes[s.uri("t.py")]
        assert (edit.range.start.line, edit.range.start.character, edit.range.end.line, edit.range.end.character) == (4, 0, 5, 0)
        assert edit.new_text == "if torch.cuda.device_count() > 0:\n"
        (edit,) = noqa.edit.changes[s.uri("t.py")]
        assert (edit.range.start.line, edit.range.end.line) == (5, 5)
        assert edit.new_text == '    os.environ["CUDA_VISIBLE_DEVICES"] = "1"  # noqa: CUD001'
        # applying the noqa edit clears the diagnostic
        s.change("t.py", BAD.replace('"1"\n', '"1"  # noqa: CUD001\n'))
        assert await s.diagnostics("t.py", lambda p: p.version == 2) == []

    run(project, body)


def test_settings_are_reloaded_when_the_file_changes(project: Path) -> None:
    async def body(s: Session) -> None:
        s.open("t.py")
        await s.diagnostics("t.py", lambda p: bool(p.diagnostics))
        (project / "pyproject.toml").write_text('[tool.cudalint]\nignore = ["CUD001"]\n', encoding="utf-8")
        s.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=s.uri("pyproject.toml"), type=types.FileChangeType.Changed)])
        )
        assert await s.diagnostics("t.py", lambda p: not p.diagnostics) == []
        (project / "pyproject.toml").write_text('[tool.cudalint]\nselct = ["CUD001"]\n', encoding="utf-8")
        s.change("t.py", BAD)
        assert len(await s.diagnostics("t.py", lambda p: p.version == 2)) == 1  # defaults, and the error said
        assert any("unknown key 'selct'" in m for m in s.messages)

    run(project, body)


def test_closing_a_document_clears_its_diagnostics(project: Path) -> None:
    async def body(s: Session) -> None:
        s.open("t.py")
        await s.diagnostics("t.py", lambda p: bool(p.diagnostics))
        count = len(s.published)
        s.client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=s.uri("t.py"))))
        deadline = time.monotonic() + 30
        while len(s.published) == count and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert s.published[-1].uri == s.uri("t.py") and list(s.published[-1].diagnostics) == []

    run(project, body)


def _chain(root: Path, modules: int) -> None:
    """A package of `modules` modules, each importing the next and calling it at its top level: an
    analysis with an empty cache that takes a good part of a second (worker processes, summaries)."""
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    (root / "t.py").write_text(BAD, encoding="utf-8")
    for i in range(modules):
        nxt = f"from m{i + 1:03d} import step as after\n" if i + 1 < modules else "def after():\n    return 0\n"
        (root / f"m{i:03d}.py").write_text(f"import os\n{nxt}\n\ndef step():\n    os.environ.get('RANK')\n    return after()\n\n\nstep()\n")


def test_an_analysis_under_way_stops_when_a_newer_edit_of_its_project_arrives(tmp_path: Path) -> None:
    """The first analysis (an empty cache: worker processes summarize 150 modules) is still under way
    when the edit arrives: it stops, says so in the log, publishes nothing, and the edited text is
    analyzed next."""
    _chain(tmp_path, 150)
    log = tmp_path / "server.log"

    async def body(s: Session) -> None:
        s.open("t.py")
        await asyncio.sleep(0.15)  # (past the debounce: the analysis of version 1 has begun)
        fixed = 'import os\n\nos.environ["CUDA_VISIBLE_DEVICES"] = "1"\nimport torch\n\ntorch.cuda.is_available()\n'
        last = s.change("t.py", fixed)
        assert await s.diagnostics("t.py", lambda p: p.version == last) == []
        assert [p.version for p in s.published if p.uri == s.uri("t.py")] == [last]
        s.change("t.py", BAD)
        (d,) = await s.diagnostics("t.py", lambda p: p.version == last + 1)
        assert d.code == "CUD001"
        assert s.messages == []  # (a stop, not a failure)

    run(tmp_path, body, ("--log-file", str(log)))
    assert f"analysis of {tmp_path} cancelled: a newer edit is waiting" in log.read_text()


def test_a_cancelled_analysis_leaves_nothing_a_later_one_would_take(tmp_path: Path) -> None:
    """cudalint.server.engine.Project.analyze stopped between two walks (`cancelled`), at the first, at
    the 40th and at the last (one of CUD003's, after the flow analysis): the same buffers analyzed
    again give a fresh run's findings, not a reused partial one."""
    from cudalint.analysis.flow import Cancelled
    from cudalint.api import lint_files
    from cudalint.core.catalogue import load_catalogue
    from cudalint.inputs.config import Config
    from cudalint.server.engine import Project

    _chain(tmp_path, 80)
    texts = {str(tmp_path / "t.py"): BAD + "\n# edited\n", str(tmp_path / "m000.py"): (tmp_path / "m000.py").read_text()}
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    fresh = sorted((f.path, f.line, f.code, f.message) for f in lint_files(files, Config(), load_catalogue(), texts=texts, jobs=1).findings if f.path in texts)
    assert fresh and fresh[0][2] == "CUD001"
    from cudalint.checks import import_time

    walks: list[int] = []
    before_cud003: list[int] = []
    real_check = import_time.check

    def counted(analyzer):
        before_cud003.append(len(walks))
        return real_check(analyzer)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(import_time, "check", counted)
        Project(tmp_path, cache_dir=tmp_path / "count").analyze(texts, cancelled=lambda: walks.append(1) and False)
    assert before_cud003 and len(walks) > before_cud003[0]  # (CUD003's own walks are asked too)
    project = Project(tmp_path, cache_dir=tmp_path / "c")
    for stop_at in (1, 40, len(walks)):
        asked = []
        with pytest.raises(Cancelled):
            project.analyze(texts, cancelled=lambda: asked.append(1) or len(asked) >= stop_at)
        assert len(asked) == stop_at
    served = project.analyze(texts)
    assert sorted((f.path, f.line, f.code, f.message) for found in served.values() for f in found) == fresh
