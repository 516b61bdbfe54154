"""One file's bytes into its summary: decode, parse, summarize (once more with a deep stack when
the code is nested deeply); whatever fails is a CUD900 finding.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Union

from cudalint.inputs import source
from cudalint.core.catalogue import Catalogue
from cudalint.core.findings import Finding
from cudalint.core.ir import ModuleIR

if TYPE_CHECKING:
    import ast


def _summarize_bytes(path: str, data: bytes, modname: str, is_package: bool, catalogue: Catalogue, lean: bool = False) -> Union[ModuleIR, Finding]:
    src = source.decode(path, data)
    if isinstance(src, Finding):
        return src
    tree = source.parse(src)
    if isinstance(tree, Finding):
        return tree
    return summarize_tree(path, src.text, tree, modname, is_package, catalogue, lean)


def summarize_tree(path: str, text: str, tree: "ast.Module", modname: str, is_package: bool, catalogue: Catalogue, lean: bool = False) -> Union[ModuleIR, Finding]:
    """The summary of a parsed file (`text` is its decoded source, for positions, messages and noqa);
    `lean`: without the thread model's events (cudalint.summary.thread_free)."""
    from cudalint.summary.summarize import summarize

    try:
        return summarize(tree, text, path, modname, catalogue, is_package=is_package, lean=lean)
    except RecursionError:
        pass
    from cudalint.core.deep import call_deep  # deeply nested code: once more with a deep stack

    try:
        return call_deep(lambda: summarize(tree, text, path, modname, catalogue, is_package=is_package, lean=lean))
    except RecursionError:
        return source.problem(path, "cannot analyze: nested too deeply")
