"""Code actions: the fix `--fix` can prove for a finding, and "suppress with `# noqa: CODE`"."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lsprotocol import types

from cudalint.server.convert import SOURCE, text_edits, uri_to_path

if TYPE_CHECKING:
    from cudalint.server.protocol import CudalintServer


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (
        a.end.line,
        a.end.character,
    )


def code_actions(ls: "CudalintServer", params: types.CodeActionParams) -> list[types.CodeAction]:
    from cudalint.engine.suppress import add_noqa_text

    uri = params.text_document.uri
    path = uri_to_path(uri)
    if path is None:
        return []
    key = os.path.normpath(path)
    doc = ls.docs.get(key)
    if doc is None:
        return []
    wanted = [d for d in params.context.diagnostics if d.source == SOURCE] or None
    found = ls.findings.get(key, [])
    lines = doc.text.split("\n")
    chosen = []
    for f in found:
        if wanted is not None:
            if not any(d.code == f.code and d.range.start.line == f.line - 1 for d in wanted):
                continue
        elif not _overlaps(params.range, types.Range(start=types.Position(f.line - 1, 0), end=types.Position(f.end_line - 1, 10**6))):
            continue
        chosen.append(f)
    actions: list[types.CodeAction] = []
    if not chosen:
        return actions
    project = ls.projects.of(path)
    with ls.docs_lock:
        texts = {d.path: d.text for d in ls.docs.values()}
    try:
        fixes = project.fixes(chosen, texts)
    except Exception:  # a fix that cannot be computed is no action, never an error in the editor
        fixes = {}

    def line_of(n: int):
        return lines[n - 1] if 1 <= n <= len(lines) else None

    for f in chosen:
        fx = fixes.get((f.path, f.line, f.column, f.code))
        if fx is not None:
            actions.append(
                types.CodeAction(
                    title=f"Fix {f.code}: {fx.message}",
                    kind=types.CodeActionKind.QuickFix,
                    is_preferred=True,
                    edit=types.WorkspaceEdit(changes={uri: text_edits(fx.edits, line_of)}),
                )
            )
        new, added, _ = add_noqa_text(doc.text, {f.line: [f.code]})
        if added:
            new_line = new.split("\n")[f.line - 1]
            old_line = lines[f.line - 1]
            edit = types.TextEdit(
                range=types.Range(
                    start=types.Position(line=f.line - 1, character=0),
                    end=types.Position(line=f.line - 1, character=len(old_line.encode("utf-16-le")) // 2),
                ),
                new_text=new_line,
            )
            actions.append(
                types.CodeAction(
                    title=f"Suppress {f.code} with # noqa: {f.code}",
                    kind=types.CodeActionKind.QuickFix,
                    edit=types.WorkspaceEdit(changes={uri: [edit]}),
                )
            )
    return actions
