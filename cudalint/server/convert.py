"""Findings and fixes as LSP values: 0-based lines, UTF-16 columns, URIs."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types

from cudalint.core.findings import Finding

SOURCE = "cudalint"


def uri_to_path(uri: str) -> Optional[str]:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path)


def path_to_uri(path: str) -> str:
    return Path(path).absolute().as_uri()


def utf16_column(line_text: Optional[str], column: int) -> int:
    """A 1-based code-point column -> a 0-based UTF-16 offset (what LSP counts by default)."""
    if line_text is None:
        return max(column - 1, 0)
    prefix = line_text[: max(column - 1, 0)]
    return len(prefix.encode("utf-16-le")) // 2 + max(column - 1 - len(prefix), 0)


def diagnostic(f: Finding, line_of: Callable[[str, int], Optional[str]]) -> types.Diagnostic:
    """`line_of(path, line)`: the text of a 1-based line (from the buffer or the file), for columns."""
    from cudalint.output.report import doc_url

    start = types.Position(line=f.line - 1, character=utf16_column(line_of(f.path, f.line), f.column))
    end = types.Position(line=f.end_line - 1, character=utf16_column(line_of(f.path, f.end_line), f.end_column))
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=path_to_uri(step.path),
                range=types.Range(start=types.Position(line=step.line - 1, character=0), end=types.Position(line=step.line - 1, character=0)),
            ),
            message=step.note,
        )
        for step in f.witness
    ]
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=f.message,
        severity=types.DiagnosticSeverity.Warning if f.severity == "warning" else types.DiagnosticSeverity.Error,
        code=f.code,
        code_description=types.CodeDescription(href=doc_url(f.code)),
        source=SOURCE,
        related_information=related or None,
        data={"line": f.line, "column": f.column, "code": f.code},
    )


def text_edits(edits, line_of: Callable[[int], Optional[str]]) -> list[types.TextEdit]:
    """cudalint.fixes.fixinfo edits (1-based rows and code-point columns) -> LSP text edits."""
    out = []
    for e in edits:
        start = types.Position(line=e.row - 1, character=utf16_column(line_of(e.row), e.column))
        end = types.Position(line=e.end_row - 1, character=utf16_column(line_of(e.end_row), e.end_column))
        out.append(types.TextEdit(range=types.Range(start=start, end=end), new_text=e.content))
    return out
