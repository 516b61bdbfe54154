"""Re-lay cudalint/ out as packages that follow the pipeline, by a map, on whatever main holds today.

    python tools/relayout.py --dry-run   # check the map against this tree, print the plan, write nothing
    python tools/relayout.py             # apply it: `git mv`, new modules, every reference rewritten

The layout is produced by this script rather than by hand because other branches edit the same
modules: re-run it on the merged tree instead of merging a hand-made move.  The map below says
(a) which modules move whole (MOVES), (b) which top-level names of a module move into a new module
(SPLITS), and (c) which methods of a big class move into a mixin class in a new module
(CLASS_SPLITS).  A name the map does not mention stays where it is.

What the script does with a split: it cuts each named definition (with its decorators and the comment
block right above it), works out which names each side still needs from the other (free globals, by
`symtable`), copies the imports the moved code uses, adds `from <new> import ...` where the old module
still uses a moved name, drops imports nobody uses any more, and rewrites every reference to a moved
module or name in cudalint/, tests/, benchmarks/, tools/, scripts/, docs and the project files
(imports, `module.name` attributes, `setattr(module, "name", ...)`, dotted strings such as
"cudalint.x.y" and paths such as cudalint/x.py).  fixtures/ are lint input and stay untouched.

It refuses (exit 1, nothing written) when: the tree is not clean or already re-laid out; a module or
name in the map does not exist; a split would make its pieces import each other; a moved method uses
`super()`, `__class__` or a private `__name`; a moved module reads `__file__`; the result has a module
over MAX_LINES lines or an import cycle.  Each refusal names the module and name: adjust the map.
"""
from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import symtable
from dataclasses import dataclass, field
from pathlib import Path

MAX_LINES = 500

# ---------------------------------------------------------------------------------------------------
# The map.  Module names are the names before the move; targets are the names after it.
# ---------------------------------------------------------------------------------------------------

PACKAGES: dict[str, str] = {
    "cudalint.core": "What every stage shares: the IR, source positions, findings, the catalogue of library calls,\nthe project's module names and the rule registry. Imports nothing else of cudalint.",
    "cudalint.inputs": "What a run reads: the files to lint, their bytes decoded and parsed (notebooks too), and the\nproject's settings.",
    "cudalint.scan": "Which files need a syntax tree at all: a byte-level scan of every file, then a closure over\nthe import graph, so that most of a big tree is never parsed.",
    "cudalint.summary": "One parsed module into IR: its effects (calls, environment writes, forks, threads) in\nevaluation order, inside structured flow, with value labels.",
    "cudalint.analysis": "Whole-project questions over the IR: path-sensitive flow with per-function summaries, the\ncall graph, and which code runs on several threads at once.",
    "cudalint.engine": "Runs the stages over a tree: scan, select, parse, summarize; cached by content and in parallel.",
    "cudalint.output": "Findings into what a person or a machine reads: text, JSON, SARIF, GitHub annotations, code\nframes; baselines and suppressions.",
    "cudalint.fixes": "`--fix` / `--diff`: the few edits that are certain, and the text edits offered to editors.",
}

MOVES: dict[str, str] = {
    # core: data shared by every stage
    "cudalint.ir": "cudalint.core.ir",
    "cudalint.positions": "cudalint.core.positions",
    "cudalint.findings": "cudalint.core.findings",
    "cudalint.catalogue": "cudalint.core.catalogue",
    "cudalint.project": "cudalint.core.project",
    "cudalint.registry": "cudalint.core.registry",
    "cudalint.callargs": "cudalint.core.callargs",
    "cudalint.values": "cudalint.core.values",
    "cudalint.tomlreader": "cudalint.core.tomlreader",
    "cudalint.deep": "cudalint.core.deep",
    "cudalint.cache_files": "cudalint.core.cache_files",  # the catalogue's parse cache uses it too
    # inputs: files, their text, settings
    "cudalint.discover": "cudalint.inputs.discover",
    "cudalint.source": "cudalint.inputs.source",
    "cudalint.notebook": "cudalint.inputs.notebook",
    "cudalint.nblines": "cudalint.inputs.nblines",
    "cudalint.newsyntax": "cudalint.inputs.newsyntax",
    "cudalint.settings": "cudalint.inputs.settings",
    "cudalint.config": "cudalint.inputs.config",
    # scan: which files need a tree (prefilter is split below; its rest is the selection)
    "cudalint.prefilter": "cudalint.scan.select",
    "cudalint.importgraph": "cudalint.scan.importgraph",
    # summary: one module into IR
    "cudalint.summarize": "cudalint.summary.summarize",
    "cudalint.labels": "cudalint.summary.labels",
    "cudalint.child_env": "cudalint.summary.child_env",
    "cudalint.thread_events": "cudalint.summary.thread_events",
    "cudalint.static_guards": "cudalint.summary.static_guards",
    # analysis: the whole project
    "cudalint.flow": "cudalint.analysis.flow",
    "cudalint.callgraph": "cudalint.analysis.callgraph",
    "cudalint.threads": "cudalint.analysis.threads",
    # engine: running the stages
    "cudalint.runner": "cudalint.engine.runner",
    "cudalint.cache": "cudalint.engine.cache",
    "cudalint.serialize": "cudalint.engine.serialize",
    "cudalint.suppress": "cudalint.engine.suppress",  # api filters findings with it before any output
    # output
    "cudalint.report": "cudalint.output.report",
    "cudalint.sarif": "cudalint.output.sarif",
    "cudalint.frames": "cudalint.output.frames",
    "cudalint.outputs": "cudalint.output.destinations",
    "cudalint.baseline": "cudalint.output.baseline",
    "cudalint.rulecli": "cudalint.output.rulecli",
    # fixes
    "cudalint.fix": "cudalint.fixes.apply",
    "cudalint.fixinfo": "cudalint.fixes.fixinfo",
    "cudalint.cst_positions": "cudalint.fixes.cst_positions",
    # staying at the top, the public surface and what drives it: cudalint.named (judges named files
    # inside their project, through cudalint.api), cudalint.api, cudalint.cli, cudalint.entry (console script),
    # cudalint.__main__ (python -m cudalint), cudalint.flake8_plugin (flake8 entry point),
    # cudalint.resources and cudalint.fingerprint (they find files from their own __file__),
    # cudalint.safepath (the first import of the console script; finds cudalint's folder from __file__); and the packages trace/, server/, checks/.
}


# modules that other branches add (recall-flow, as of 23:20 UTC): moved when present, else a note
MOVES_IF_PRESENT: dict[str, str] = {
    "cudalint.child_args": "cudalint.summary.child_args",
    "cudalint.concurrent_calls": "cudalint.summary.concurrent_calls",
    "cudalint.container_refs": "cudalint.summary.container_refs",
    "cudalint.cuda_attrs": "cudalint.summary.cuda_attrs",
}

# the modules that stay at the top of cudalint/ (the public surface); every other top-level module
# must be in MOVES, so that a module added on another branch gets a place (the script says which)
STAY: set[str] = {
    "cudalint", "cudalint.__main__", "cudalint.api", "cudalint.cli", "cudalint.entry", "cudalint.flake8_plugin",
    "cudalint.named", "cudalint.resources", "cudalint.safepath", "cudalint.fingerprint",
    "cudalint.checks", "cudalint.server", "cudalint.trace",
}


@dataclass(frozen=True)
class Split:
    source: str  # module name before the move
    target: str  # the new module, by its final name
    names: tuple[str, ...]
    doc: str


@dataclass(frozen=True)
class ClassSplit:
    source: str  # module name before the move
    cls: str
    mixin: str  # the new class, mixed into `cls` ahead of its other bases
    target: str  # the new module, by its final name
    methods: tuple[str, ...]
    doc: str


SPLITS: list[Split] = [
    # hashes cudalint's own files from its __file__, so it stays at the top of the package
    Split("cudalint.cache", "cudalint.fingerprint", ("code_fingerprint",),
          "A hash of cudalint's own source, which every cache key includes."),
    # api <-> runner: the runner summarizes a file the way the library does; that way lives below both
    Split("cudalint.api", "cudalint.summary.from_bytes", ("_summarize_bytes", "summarize_tree"),
          "One file's bytes into its summary: decode, parse, summarize (once more with a deep stack when\n"
          "the code is nested deeply); whatever fails is a CUD900 finding."),
    # prefilter (1,700 lines) along its seams; what stays is the selection (select, _Calls, closures)
    Split("cudalint.prefilter", "cudalint.scan.text", (
        "_WORD", "_DUNDER", "_ESCAPE", "_JOINER", "_called", "_CALLED", "_CALL_CHAIN", "_INT_ASSIGNED",
        "_assigned_int", "_qualified_calls", "_keyword", "_Strings", "_LEADING", "_SETATTR", "_chunks",
        "_name_words", "_word_of"),
          "What the bytes of a file say without parsing them: words, string literals (and what escapes or\n"
          "adjacent literals could spell), qualified calls, keyword arguments."),
    Split("cudalint.prefilter", "cudalint.scan.triggers", (
        "_STOP_WORDS", "_LABEL_KINDS", "_NO_KIND", "_LLAMA", "_THREAD", "_ENV_WRITE", "_Clause", "_Triggers",
        "_TRIGGERS", "_triggers"),
          "Which event kinds a file's text could produce: the catalogue's entries as words to look for, with\n"
          "the clauses (write forms, sinks, sources) that make an entry count."),
    Split("cudalint.prefilter", "cudalint.scan.imports", (
        "_FROM", "_IMPORT", "_CHAIN_TAIL", "_NAME_OR_DOT", "_ALIAS", "_imports", "_statement_start", "_relative"),
          "A file's import statements, found in its bytes without parsing it."),
    Split("cudalint.flow", "cudalint.analysis.facts", (
        "Fact", "State", "IMPORTED", "_NONE", "imported", "_union", "join", "holds", "seen_from", "gen",
        "add_imported", "Seen", "_FLATTEN", "seen"),
          "What the flow engine knows at a point of a path: facts with their witnesses, states, and how they join."),
    Split("cudalint.prefilter", "cudalint.scan.nodes", (
        "_ast", "_DEPRECATED", "_FIELDS", "_nodes", "_names", "_names_in", "_annotation_names", "_top_names", "_COMPOUND_FIELDS", "_dotted"),
          "CPython's `ast` for the few files the scan must parse: the tree, its nodes, the names a module's\n"
          "top level binds."),
    Split("cudalint.prefilter", "cudalint.scan.stops", (
        "_or", "_and", "_calls_in", "_has_break", "_block_stops", "_stmt_stops", "_any", "_all", "_INITS",
        "_NONE", "_Stops"),
          "Which functions may never return (raise, loop forever, exit): stop formulas over a module's\n"
          "functions, evaluated once for the module (a caller's path ends there)."),
    Split("cudalint.prefilter", "cudalint.scan.layout", ("_ENV_ALIAS", "_Layout"),
          "A parsed module's layout as the selection needs it: what its top level runs, which functions\n"
          "may stop, which names it binds and imports."),
    Split("cudalint.prefilter", "cudalint.scan.scanner", (
        "SCAN_FIELDS", "_EMPTY", "Scan", "_lines", "scan", "_first_look", "file_kinds", "scan_tree"),
          "The scan of one file: its event kinds, imports and layout, from its bytes (and its tree only when\n"
          "the bytes cannot tell)."),
    # summarize: the small readers of syntax go below the summarizer and its helpers (labels, child_env
    # and thread_events imported them from summarize, which imports them: the cycle)
    Split("cudalint.summarize", "cudalint.summary.syntax", (
        "_STDLIB", "_BUILTINS", "_UNKNOWN", "_LITERALS", "_COMPREHENSIONS", "_LEAVES", "literal", "dotted",
        "_fnmatch", "_Scope", "_Consts", "_SKIP", "_FIELDS", "_children", "_targets", "_is_main_guard",
        "_env_conditions"),
          "The summarizer's small readers of syntax: a literal's value, a dotted name, the scopes names\n"
          "resolve in, a node's children."),
    # fix (930 lines): the files it edits, what a module's top level holds, the plan, and the edit
    Split("cudalint.fix", "cudalint.fixes.files", ("Loaded", "load", "_inside", "refusal", "write_atomic"),
          "The files `--fix` reads and writes: refused when outside the project or not what was analysed;\n"
          "written atomically."),
    Split("cudalint.fix", "cudalint.fixes.module_shape", (
        "_STDLIB", "_UNKNOWN_VALUE", "literal", "_module_bindings", "_import_modules", "_is_stdlib_import",
        "_is_future_import", "_is_docstring", "_binds", "_constant_stmt", "_Module", "_is_import_of"),
          "What a module's top level binds, imports and computes, read with libcst: where a moved\n"
          "statement may go."),
    Split("cudalint.fix", "cudalint.fixes.plan", (
        "ENV_VARS", "ADD_DEVICE_ORDER_CODE", "Fix", "FilePlan", "EnvWrite", "_names_in", "env_write", "_events",
        "env_writes", "HINT_MOVE", "HINT_ORDER", "_top_level_index", "plan_file", "_plan_move", "_guard_calls",
        "_plan_guard", "_find_statement", "_plan_device_order"),
          "Which edits a file gets: move an environment write above the first CUDA import, guard a call,\n"
          "add CUDA_DEVICE_ORDER; or a hint when no edit is certain."),
    # threads (610 lines): the model's data, and how a name resolves to a shared object or a lock
    # labels' two entry points for calls go above labels, so that what they call (child_args on
    # recall-flow, which reads labels_of) sits between them without a cycle
    Split("cudalint.labels", "cudalint.summary.label_effects", ("api_effects", "method_call"),
          "The labels a call adds: a catalogued call's effects on values, and the methods that store into\n"
          "containers or start threads and processes."),
    Split("cudalint.threads", "cudalint.analysis.thread_model", (
        "FnKey", "Key", "Site", "Context", "MAIN", "Obj", "Use", "Creation", "ThreadModel", "flatten"),
          "The thread model's data: where code runs (contexts), which objects it shares, what it does\n"
          "with them."),
    Split("cudalint.threads", "cudalint.analysis.thread_objects", ("_LOCKISH",),
          "How the thread analysis resolves a name to a shared object, a singleton or a lock\n"
          "(mixed into `ThreadAnalysis`)."),
    # the tracer: the parent and the child share a configuration variable and a boot line
    Split("cudalint.trace", "cudalint.trace.handoff", ("CONFIG_VAR", "BOOT"),
          "How the tracer hands its configuration to the traced process: an environment variable and the\n"
          "`-c` line that imports the bootstrap."),
    Split("cudalint.trace", "cudalint.trace.launch", ("run",),
          "`run`: trace one program (a script or `-m module`) and report; the library's entry point."),
    Split("cudalint.trace.children", "cudalint.trace.child_start", ("start_child",),
          "The start of a traced grandchild (from boot/sitecustomize.py): install the bootstrap there."),
]

CLASS_SPLITS: list[ClassSplit] = [
    ClassSplit("cudalint.summarize", "_Summarizer", "_CallEvents", "cudalint.summary.call_events", (
        "call", "call_effects", "monkeypatch_event", "receiver_is_value", "maybe_project", "api_effects",
        "sets_env_events", "arg_literal", "arg_text", "env_event", "env_reads", "dict_env_events", "is_env",
        "key_of", "env_call", "import_effects", "_cuda_names", "note_cuda_object", "cuda_object_use"),
        "The summarizer's events of a call: catalogue effects, environment reads and writes,\n"
        "monkeypatches, CUDA objects (mixed into `_Summarizer`)."),
    ClassSplit("cudalint.summarize", "_Summarizer", "_Statements", "cudalint.summary.statements", (
        "block", "if_", "static_truth", "for_", "while_", "try_", "with_", "match_", "expr_stmt", "assign",
        "ann_assign", "aug_assign", "delete", "return_", "raise_", "break_", "continue_", "import_",
        "import_from", "assert_", "global_", "nothing", "funcdef", "classdef", "subscript_key",
        "assign_target", "bind", "_bind", "type_of_value"),
        "The summarizer's statements: structured flow (if, loops, try, with, match), assignments and\n"
        "bindings, imports, function and class definitions (mixed into `_Summarizer`)."),
    ClassSplit("cudalint.threads", "ThreadAnalysis", "_Resolve", "cudalint.analysis.thread_objects", (
        "function", "canon", "binds_of", "obj", "_obj", "from_origin", "call_result", "singleton", "lock",
        "effective_locks"),
        "How the thread analysis resolves a name to a shared object, a singleton or a lock\n"
        "(mixed into `ThreadAnalysis`)."),
]

# ---------------------------------------------------------------------------------------------------
# The machinery.
# ---------------------------------------------------------------------------------------------------

SKIP_DIRS = ("fixtures/", ".git/")
# dotted text that is a file name, not a module (the GitHub Action's default SARIF file), unless
# written as code (`cudalint.sarif` in backquotes is the module)
FILE_NAMES = {"cudalint.sarif", "cudalint.json", "cudalint.html", "cudalint.txt", "cudalint.log", "cudalint.toml"}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".json", ".sh", ""}


class Refusal(Exception):
    pass


def refuse(msg: str) -> None:
    raise Refusal(msg)


def mod_path(name: str, files: dict[str, str]) -> str | None:
    base = name.replace(".", "/")
    for p in (base + ".py", base + "/__init__.py"):
        if p in files:
            return p
    return None


def path_mod(path: str) -> str:
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def final_path(name: str) -> str:
    return name.replace(".", "/") + ".py"


# --- one module's top level ------------------------------------------------------------------------

@dataclass
class Stmt:
    node: ast.stmt
    start: int  # first line, 1-based, including decorators and the comment block above
    end: int  # last line, 1-based
    defines: set[str]
    uses: set[str]
    kind: str  # "def", "import", "simple", "other"
    guard: str | None = None  # the `if TYPE_CHECKING:` line an import sits under
    types: set[str] = field(default_factory=set)  # names used only in annotations (never evaluated)


@dataclass
class Binding:
    name: str
    stmt: ast.stmt
    alias: ast.alias
    guard: str | None


def _annotation_names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                out |= _annotation_names(ast.parse(sub.value, mode="eval"))
            except SyntaxError:
                pass
    return out


def _names_loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _table_globals(table: symtable.SymbolTable) -> tuple[set[str], set[str]]:
    """Names a scope and its children read from the module, and names they declare `global`."""
    used: set[str] = set()
    declared: set[str] = set()
    for sym in table.get_symbols():
        if sym.is_declared_global():
            declared.add(sym.get_name())
        if sym.is_global() and (sym.is_referenced() or sym.is_assigned() or sym.is_annotated()):
            used.add(sym.get_name())
    for child in table.get_children():
        u, d = _table_globals(child)
        used |= u
        declared |= d
    return used, declared


def _def_uses(node: ast.AST, tables: dict) -> tuple[set[str], set[str], set[str]]:
    """Module names a def or class uses at run time: its own scope (symtable; it leaves out
    annotations under `from __future__ import annotations`) plus what runs at module level when it
    is defined (decorators, defaults, bases); and the names its annotations mention."""
    used: set[str] = set()
    types: set[str] = set()
    declared: set[str] = set()
    table = tables.get((node.name, node.lineno)) or tables.get((node.name, None))
    if table is not None:
        used, declared = _table_globals(table)
    for dec in node.decorator_list:
        used |= _names_loaded(dec)
    if isinstance(node, ast.ClassDef):
        for b in node.bases + [k.value for k in node.keywords]:
            used |= _names_loaded(b)
    else:
        a = node.args
        for d in a.defaults + [x for x in a.kw_defaults if x is not None]:
            used |= _names_loaded(d)
    for sub in ast.walk(node):
        ann = getattr(sub, "annotation", None) or getattr(sub, "returns", None)
        if ann is not None:
            types |= _annotation_names(ann)
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.returns is not None:
            types |= _annotation_names(sub.returns)
    return used, declared, types - used


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


@dataclass
class Module:
    name: str
    path: str
    text: str
    tree: ast.Module
    stmts: list[Stmt]
    bindings: dict[str, Binding]  # import bindings at top level (and under `if TYPE_CHECKING:`)
    lines: list[str] = field(default_factory=list)

    def stmt_of(self, name: str) -> Stmt | None:
        for s in self.stmts:
            if name in s.defines and s.kind in ("def", "simple"):
                return s
        return None


def read_module(name: str, path: str, text: str) -> Module:
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    try:
        top = symtable.symtable(text, path, "exec")
    except SyntaxError as exc:
        refuse(f"{path}: cannot build the symbol table: {exc}")
    tables: dict = {}
    for child in top.get_children():
        tables[(child.get_name(), child.get_lineno())] = child
        tables.setdefault((child.get_name(), None), child)
    stmts: list[Stmt] = []
    bindings: dict[str, Binding] = {}
    prev_end = 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        start = first
        # the comment block right above (no blank line between), but not past the previous statement
        while start - 1 > prev_end and lines[start - 2].lstrip().startswith("#"):
            start -= 1
        end = node.end_lineno
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            uses, declared, types = _def_uses(node, tables)
            s = Stmt(node, start, end, {node.name}, uses, "def", types=types)
            if declared:
                s.uses |= {"global:" + d for d in declared}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            s = Stmt(node, start, end, set(), set(), "import")
            for a in node.names:
                bound = a.asname or a.name.split(".")[0]
                s.defines.add(bound)
                bindings[bound] = Binding(bound, node, a, None)
        elif _is_type_checking(node) and all(isinstance(x, (ast.Import, ast.ImportFrom)) for x in node.body) and not node.orelse:
            guard = lines[node.lineno - 1].rstrip("\n")
            s = Stmt(node, start, end, set(), _names_loaded(node.test), "import", guard)
            for imp in node.body:
                for a in imp.names:
                    bound = a.asname or a.name.split(".")[0]
                    s.defines.add(bound)
                    bindings[bound] = Binding(bound, imp, a, guard)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defines = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            uses = _names_loaded(node) - (defines if isinstance(node, ast.Assign) else set())
            if isinstance(node, ast.AugAssign) or isinstance(node, ast.Assign) and any(
                    not isinstance(t, ast.Name) for t in targets):
                uses |= _names_loaded(node)
            s = Stmt(node, start, end, defines, uses, "simple")
        else:
            defines = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for sub in ast.walk(node):
                if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defines.add(sub.name)
                elif isinstance(sub, (ast.Import, ast.ImportFrom)):
                    defines |= {a.asname or a.name.split(".")[0] for a in sub.names}
            s = Stmt(node, start, end, defines, _names_loaded(node), "other")
        stmts.append(s)
        prev_end = end
    return Module(name, path, text, tree, stmts, bindings, lines)


# --- rendering imports ----------------------------------------------------------------------------

def render_from(module: str, aliases: list[tuple[str, str | None]], indent: str = "", width: int = 110) -> str:
    parts = [n if a is None or a == n else f"{n} as {a}" for n, a in aliases]
    line = f"{indent}from {module} import {', '.join(parts)}"
    if len(line) <= width:
        return line
    body = f"{indent}    "
    out, cur = [], body
    for p in parts:
        piece = p + ","
        if cur.strip() and len(cur) + 1 + len(piece) > width:
            out.append(cur.rstrip())
            cur = body
        cur = cur + ("" if not cur.strip() else " ") + piece
    out.append(cur.rstrip())
    return f"{indent}from {module} import (\n" + "\n".join(out) + f"\n{indent})"


def render_import_stmt(stmt: ast.stmt, keep: list[ast.alias], indent: str = "") -> str:
    if isinstance(stmt, ast.ImportFrom):
        mod = "." * stmt.level + (stmt.module or "")
        return render_from(mod, [(a.name, a.asname) for a in keep], indent)
    return "\n".join(f"{indent}import {a.name}" + (f" as {a.asname}" if a.asname else "") for a in keep)


# --- the rewrite of references ---------------------------------------------------------------------

@dataclass
class Plan:
    old_modules: set[str]  # every cudalint module before the run
    modmap: dict[str, str]  # old module -> new module (whole moves and split rests)
    namemap: dict[tuple[str, str], str]  # (old module, name) -> new module, for moved names
    new_modules: set[str] = field(default_factory=set)

    def module(self, old: str) -> str:
        return self.modmap.get(old, old)

    def where(self, old: str, name: str) -> str:
        return self.namemap.get((old, name), self.module(old))

    def dotted(self, dotted: str) -> str:
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            head = ".".join(parts[:i])
            if head in self.old_modules:
                rest = parts[i:]
                if rest and (head, rest[0]) in self.namemap:
                    return ".".join([self.namemap[(head, rest[0])]] + rest)
                return ".".join([self.module(head)] + rest)
        return dotted


_DOTTED = re.compile(r"(?<![\w.])cudalint(?:\.[A-Za-z_]\w*)+")
_PATH = re.compile(r"(?<![\w.])cudalint(?:/[A-Za-z_]\w*)+(?:\.py)?")


def rewrite_text(text: str, plan: Plan, skip: list[tuple[int, int]]) -> str:
    def inside(a: int, b: int) -> bool:
        return any(s <= a and b <= e for s, e in skip)

    def sub_dotted(m: re.Match) -> str:
        if inside(m.start(), m.end()) or m.group(0) in FILE_NAMES and text[m.start() - 1:m.start()] != "`":
            return m.group(0)
        return plan.dotted(m.group(0))

    def sub_path(m: re.Match) -> str:
        if inside(m.start(), m.end()):
            return m.group(0)
        raw = m.group(0)
        py = raw.endswith(".py")
        dotted = (raw[:-3] if py else raw).replace("/", ".")
        if dotted.endswith(".__init__"):
            return raw
        new = plan.dotted(dotted)
        if new == dotted:
            return raw
        return new.replace(".", "/") + (".py" if py else "")

    # one pass per pattern over the original text, so that a new name is never mapped again
    out: list[str] = []
    pos = 0
    spans = sorted([(m.start(), m.end(), sub_dotted(m)) for m in _DOTTED.finditer(text)]
                   + [(m.start(), m.end(), sub_path(m)) for m in _PATH.finditer(text)])
    for s, e, rep in spans:
        if s < pos:
            continue
        out.append(text[pos:s])
        out.append(rep)
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _offsets(text: str) -> list[int]:
    offs = [0]
    for line in text.splitlines(keepends=True):
        offs.append(offs[-1] + len(line))
    return offs


def _char(text_lines: list[str], offs: list[int], lineno: int, col: int) -> int:
    line = text_lines[lineno - 1]
    return offs[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))


def rewrite_python(path: str, text: str, plan: Plan, problems: list[str]) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return rewrite_text(text, plan, [])
    lines = text.splitlines(keepends=True)
    offs = _offsets(text)
    edits: list[tuple[int, int, str]] = []
    module_bindings: dict[str, str] = {}  # local name -> old module object it is bound to
    binding_stmt: dict[str, ast.stmt] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                node.module == "cudalint" or node.module.startswith("cudalint.")):
            base = node.module
            if base not in plan.old_modules:
                continue
            targets: list[tuple[str, str, str | None]] = []
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in plan.old_modules:
                    new = plan.module(full)
                    parent, _, last = new.rpartition(".")
                    asname = a.asname or (a.name if last != a.name else None)
                    targets.append((parent, last, asname))
                    module_bindings[a.asname or a.name] = full
                    binding_stmt[a.asname or a.name] = node
                else:
                    targets.append((plan.where(base, a.name), a.name, a.asname))
            if all(t[0] == base and t[1] == a.name for t, a in zip(targets, node.names)):
                continue
            grouped: dict[str, list[tuple[str, str | None]]] = {}
            for mod, name, asname in targets:
                grouped.setdefault(mod, []).append((name, asname))
            indent = " " * node.col_offset
            new_text = "\n".join(render_from(m, al, indent) for m, al in grouped.items()).lstrip()
            start = _char(lines, offs, node.lineno, node.col_offset)
            end = _char(lines, offs, node.end_lineno, node.end_col_offset)
            if "#" in text[start:end]:
                problems.append(f"{path}:{node.lineno}: a comment inside this import was dropped")
            edits.append((start, end, new_text))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and a.name in plan.old_modules:
                    module_bindings[a.asname] = a.name
                    binding_stmt[a.asname] = node
    # module.name where the name moved away from the module
    added: dict[tuple[int, str], str] = {}

    def new_binding(local: str, newmod: str) -> str:
        stmt = binding_stmt[local]
        parent, _, last = newmod.rpartition(".")
        key = (stmt.lineno, newmod)
        if key not in added:
            taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | set(module_bindings)
            if last in taken and last not in {a for (_, m), a in added.items() if m == newmod}:
                problems.append(f"{path}:{stmt.lineno}: `{last}` is taken; bound {newmod} as _{last}")
                alias = f"_{last}"
            else:
                alias = last
            added[key] = alias
            indent = " " * stmt.col_offset
            at = offs[stmt.end_lineno]
            edits.append((at, at, render_from(parent, [(last, None if alias == last else alias)], indent) + "\n"))
        return added[key]

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in module_bindings:
            old = module_bindings[node.value.id]
            if (old, node.attr) in plan.namemap:
                alias = new_binding(node.value.id, plan.namemap[(old, node.attr)])
                v = node.value
                edits.append((_char(lines, offs, v.lineno, v.col_offset), _char(lines, offs, v.end_lineno, v.end_col_offset), alias))
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in module_bindings and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str):
            old = module_bindings[node.args[0].id]
            if (old, node.args[1].value) in plan.namemap:
                alias = new_binding(node.args[0].id, plan.namemap[(old, node.args[1].value)])
                v = node.args[0]
                edits.append((_char(lines, offs, v.lineno, v.col_offset), _char(lines, offs, v.end_lineno, v.end_col_offset), alias))
    # the edits, and the textual pass over the text between them (never over what they wrote)
    pieces: list[str] = []
    pos = 0
    for s, e, rep in sorted(edits, key=lambda x: (x[0], x[1])):
        pieces.append(rewrite_text(text[pos:s], plan, []))
        pieces.append(rep)
        pos = e
    pieces.append(rewrite_text(text[pos:], plan, []))
    return "".join(pieces)


# --- splitting one module --------------------------------------------------------------------------

_PRIVATE = re.compile(r"(?<![\w.])self\.__[A-Za-z]\w*(?<!__)\b|(?<![\w])__[a-z]\w*[a-z0-9_](?<!__)\b")


def apply_class_split(files: dict[str, str], cs: ClassSplit) -> None:
    path = mod_path(cs.source, files)
    if path is None:
        refuse(f"class split: module {cs.source} does not exist (map: CLASS_SPLITS {cs.cls} -> {cs.target})")
    text = files[path]
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cs.cls), None)
    if cls is None:
        refuse(f"class split: {cs.source} has no top-level class {cs.cls}")
    if any(isinstance(n, ast.ClassDef) and n.name == cs.mixin for n in tree.body):
        refuse(f"class split: {cs.source} already has a {cs.mixin}: already re-laid out?")
    methods = {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    chunks: list[tuple[int, int]] = []
    for name in cs.methods:
        m = methods.get(name)
        if m is None:
            refuse(f"class split: {cs.source}.{cs.cls} has no method {name} (map: CLASS_SPLITS -> {cs.target})")
        for sub in ast.walk(m):
            if isinstance(sub, ast.Name) and sub.id in ("super", "__class__"):
                refuse(f"class split: {cs.source}.{cs.cls}.{name} uses {sub.id}, which a mixin changes")
            if isinstance(sub, ast.Attribute) and sub.attr.startswith("__") and not sub.attr.endswith("__"):
                refuse(f"class split: {cs.source}.{cs.cls}.{name} uses the private name {sub.attr}")
        start = min([m.lineno] + [d.lineno for d in m.decorator_list])
        while lines[start - 2].lstrip().startswith("#"):
            start -= 1
        chunks.append((start, m.end_lineno))
    if len(chunks) == len(methods) and not any(not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) or n.name not in cs.methods for n in cls.body):
        refuse(f"class split: every method of {cs.cls} would move")
    taken = set()
    for s, e in chunks:
        taken |= set(range(s, e + 1))
    body: list[str] = []
    for s, e in sorted(chunks):
        if body:
            body.append("\n")
        body.extend(lines[s - 1:e])
    doc = cs.doc.replace("\n", "\n    ")
    mixin = f"class {cs.mixin}:\n    \"\"\"{doc}\"\"\"\n\n" + "".join(body)
    # the class loses the methods and gains the mixin, first among its bases
    keep: list[str] = []
    for i, line in enumerate(lines, start=1):
        if i in taken:
            continue
        keep.append(line)
    new = "".join(keep)
    new = re.sub(r"\n{3,}(?=    \S)", "\n\n", new)  # no double blank lines left inside the class
    tree2 = ast.parse(new)
    cls2 = next(n for n in tree2.body if isinstance(n, ast.ClassDef) and n.name == cs.cls)
    lines2 = new.splitlines(keepends=True)
    header = lines2[cls2.lineno - 1]
    if cls2.bases:
        first = cls2.bases[0]
        if first.lineno != cls2.lineno:
            refuse(f"class split: {cs.cls}'s bases span lines; write them on the class line")
        col = len(header.encode()[:first.col_offset].decode())
        header = header[:col] + cs.mixin + ", " + header[col:]
    else:
        header = re.sub(rf"class {cs.cls}\s*(\(\s*\))?\s*:", f"class {cs.cls}({cs.mixin}):", header, count=1)
    lines2[cls2.lineno - 1] = header
    start = min([cls2.lineno] + [d.lineno for d in cls2.decorator_list])
    while lines2[start - 2].lstrip().startswith("#"):
        start -= 1
    lines2.insert(start - 1, mixin + "\n\n")
    files[path] = "".join(lines2)


def apply_splits(files: dict[str, str], source: str, splits: list[Split], plan: Plan, users: dict[str, set[str]]) -> None:
    """Cut the split names out of `source` into their new modules (written under their final names;
    they import the rest by its old name, which the rewrite maps like every other reference)."""
    path = mod_path(source, files)
    if path is None:
        refuse(f"split: module {source} does not exist (map: SPLITS from {source})")
    mod = read_module(source, path, files[path])
    group_of: dict[str, str] = {}  # top-level name -> new module it moves to
    for sp in splits:
        for name in sp.names:
            s = mod.stmt_of(name)
            if s is None:
                refuse(f"split: {source} has no top-level name {name} (map: SPLITS {source} -> {sp.target}); "
                       "remove it from the map or name where it went")
            if name in group_of:
                refuse(f"split: {source}.{name} is mapped twice")
            group_of[name] = sp.target
            for other in s.defines - {name}:
                if other not in group_of:
                    group_of[other] = sp.target
    stmt_group: dict[int, str] = {}
    for i, s in enumerate(mod.stmts):
        gs = {group_of[d] for d in s.defines if d in group_of}
        if len(gs) > 1:
            refuse(f"split: {source} line {s.start} defines {sorted(s.defines)}, mapped to {sorted(gs)}")
        if gs and s.kind in ("def", "simple"):
            stmt_group[i] = gs.pop()
            if "__file__" in s.uses and stmt_group[i].count(".") != source.count("."):
                refuse(f"split: {source}: {sorted(s.defines)} reads __file__; it must stay")
    rest = source
    where: dict[str, str] = {}  # name -> group (module) that defines it after the split
    for i, s in enumerate(mod.stmts):
        if s.kind == "import":
            continue
        for d in s.defines:
            where[d] = stmt_group.get(i, rest)
    # what each group needs from the others, and from the imports
    needs: dict[str, dict[str, set[str]]] = {}
    type_needs: dict[str, dict[str, set[str]]] = {}  # only for annotations: under `if TYPE_CHECKING:`
    import_needs: dict[str, set[str]] = {}
    globals_moved: set[str] = set()
    for i, s in enumerate(mod.stmts):
        if s.kind == "import":
            continue
        g = stmt_group.get(i, rest)
        for u in s.uses:
            if u.startswith("global:"):
                name = u[7:]
                if where.get(name, rest) != g:
                    globals_moved.add(f"{name} (declared global in {sorted(s.defines)})")
                continue
            if u in s.defines:
                continue
            if u in where and where[u] != g:
                needs.setdefault(g, {}).setdefault(where[u], set()).add(u)
            elif u in mod.bindings and u not in where:
                import_needs.setdefault(g, set()).add(u)
        for u in s.types - s.defines:
            if u in where and where[u] != g:
                type_needs.setdefault(g, {}).setdefault(where[u], set()).add(u)
            elif u in mod.bindings and u not in where:
                import_needs.setdefault(g, set()).add(u)
    for g, by in type_needs.items():
        for other, names in by.items():
            names -= needs.get(g, {}).get(other, set())
    if globals_moved:
        refuse(f"split: {source}: a `global` crosses the split: {sorted(globals_moved)}")
    # the pieces must not import each other in a circle
    graph = {g: set(n) for g, n in needs.items()}
    for cyc in _cycles(graph):
        detail = "; ".join(f"{a} needs {sorted(needs[a][b])} from {b}" for a, b in zip(cyc, cyc[1:] + cyc[:1]))
        refuse(f"split: {source}: the pieces would import each other: {detail}. Move those names too.")
    # the names other modules import from `source` that it only re-exports must keep their imports
    exported = users.get(source, set())
    # new modules
    future = any(isinstance(s.node, ast.ImportFrom) and s.node.module == "__future__" for s in mod.stmts)
    for sp in splits:
        if mod_path(sp.target, files) is not None or final_path(sp.target) in files:
            refuse(f"split: {sp.target} exists already: already re-laid out?")
        body_parts: list[tuple[Stmt, str]] = []
        for i, s in enumerate(mod.stmts):
            if stmt_group.get(i) == sp.target:
                body_parts.append((s, "".join(mod.lines[s.start - 1:s.end])))
        imports = _imports_for(mod, import_needs.get(sp.target, set()), needs.get(sp.target, {}), plan, rest,
                               type_needs.get(sp.target, {}))
        out = f'"""{sp.doc}\n"""\n'
        if future:
            out += "from __future__ import annotations\n"
        if imports:
            out += "\n" + imports + "\n"
        prev: Stmt | None = None
        for s, chunk in body_parts:
            if prev is None:
                sep = "\n\n" if imports or future else "\n"
            elif s.kind == "simple" and prev.kind == "simple":
                sep = "" if prev.end + 1 == s.start else "\n"
            else:
                sep = "\n\n"
            out += sep + chunk
            prev = s
        files[final_path(sp.target)] = out
        plan.new_modules.add(sp.target)
    # the rest: cut the moved statements, import what it still uses from the new modules,
    # and drop imports only the moved code used
    drop: set[int] = set()
    for i, s in enumerate(mod.stmts):
        if i in stmt_group:
            drop |= set(range(s.start, s.end + 1))
    still_used: set[str] = set()
    for i, s in enumerate(mod.stmts):
        if i not in stmt_group:
            still_used |= {u for u in s.uses if not u.startswith("global:")} | s.types
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Name) and not any(
                mod.stmts[i].start <= node.lineno <= mod.stmts[i].end for i in stmt_group):
            still_used.add(node.id)
    moved_used = set().union(*import_needs.values()) if import_needs else set()  # only these may go
    all_names = ast.literal_eval(_dunder_all(mod)) if _dunder_all(mod) else []
    lines = list(mod.lines)
    replace: dict[int, str | None] = {}  # first line of an import statement -> its new text (None: drop)
    typed = {g: ns for g, ns in type_needs.get(rest, {}).items() if ns}
    add_tc = bool(typed) and "TYPE_CHECKING" not in mod.bindings and "TYPE_CHECKING" not in where
    for s in mod.stmts:
        if s.kind != "import":
            continue
        imps = [s.node] if not s.guard else list(s.node.body)
        for imp in imps:
            keep = [a for a in imp.names
                    if (a.asname or a.name.split(".")[0]) not in moved_used
                    or (a.asname or a.name.split(".")[0]) in still_used
                    or (a.asname or a.name.split(".")[0]) in exported
                    or (a.asname or a.name) in all_names
                    or isinstance(imp, ast.ImportFrom) and imp.module == "__future__"]
            if add_tc and not s.guard and isinstance(imp, ast.ImportFrom) and imp.module == "typing":
                keep = sorted([ast.alias("TYPE_CHECKING"), *keep], key=lambda a: (not a.name.isupper(), a.name))
                add_tc = False
                replace[imp.lineno] = ""  # forces the rewrite below
            if len(keep) != len(imp.names) or imp.lineno in replace:
                indent = " " * imp.col_offset
                replace[imp.lineno] = render_import_stmt(imp, keep, indent) if keep else None
                for ln in range(imp.lineno + 1, imp.end_lineno + 1):
                    replace[ln] = ""
        if s.guard and all(replace.get(imp.lineno, "x") is None for imp in s.node.body):
            for ln in range(s.start, s.end + 1):
                replace[ln] = ""
    wanted = needs.get(rest, {})
    new_imports = "\n".join(render_from(g, [(n, None) for n in sorted(names)]) for g, names in sorted(wanted.items()))
    if typed:
        if add_tc:
            new_imports = ("from typing import TYPE_CHECKING\n" + new_imports).strip("\n")
        new_imports += ("\n\n" if new_imports else "\n") + "if TYPE_CHECKING:\n" + "\n".join(
            render_from(g, [(n, None) for n in sorted(ns)], "    ") for g, ns in sorted(typed.items()))
    anchor = _import_anchor(mod)
    out: list[str] = []
    for i, line in enumerate(lines, start=1):
        if i in drop:
            if out and out[-1] != "\x00":
                out.append("\x00")
            continue
        if i in replace:
            r = replace[i]
            if r:
                out.append(r + "\n")
        else:
            out.append(line)
        if i == anchor and new_imports:
            out.append(new_imports + "\n")
    text = "".join(out)
    text = re.sub(r"\n*\x00\n*", "\n\n\n", text)
    text = re.sub(r"\n{4,}", "\n\n\n", text).rstrip("\n") + "\n"
    if anchor == 0 and new_imports:
        refuse(f"split: {source} has no top-level import to put `{new_imports}` after")
    files[path] = text


def _dunder_all(mod: Module) -> str | None:
    for s in mod.stmts:
        if "__all__" in s.defines and isinstance(s.node, ast.Assign):
            return ast.unparse(s.node.value)
    return None


def _import_anchor(mod: Module) -> int:
    """The last line of the last unguarded top-level import before the first definition."""
    last = 0
    for s in mod.stmts:
        if s.kind == "def":
            break
        if s.kind == "import" and not s.guard:
            last = s.end
    return last


def _imports_for(mod: Module, names: set[str], siblings: dict[str, set[str]], plan: Plan, rest: str,
                 type_siblings: dict[str, set[str]]) -> str:
    """The import lines a new module needs: the source's own imports of `names`, then the pieces of
    the split it uses (the rest by its old name, other new modules by theirs)."""
    plain: list[str] = []
    guarded: dict[str, list[str]] = {}
    done: set[int] = set()
    need_tc = False
    for s in mod.stmts:
        if s.kind != "import":
            continue
        imps = [s.node] if not s.guard else list(s.node.body)
        for imp in imps:
            keep = [a for a in imp.names if (a.asname or a.name.split(".")[0]) in names]
            if not keep or id(imp) in done:
                continue
            done.add(id(imp))
            if isinstance(imp, ast.ImportFrom) and imp.module == "__future__":
                continue
            text = render_import_stmt(imp, keep)
            if s.guard:
                guarded.setdefault(s.guard, []).append(text)
                need_tc = True
            else:
                plain.append(text)
    for g, ns in sorted(siblings.items()):
        plain.append(render_from(g, [(n, None) for n in sorted(ns)]))
    tc_guard = "if TYPE_CHECKING:"
    for g, ns in sorted(type_siblings.items()):
        if ns:
            guarded.setdefault(tc_guard, []).append(render_from(g, [(n, None) for n in sorted(ns)]))
            need_tc = True
    own_tc = next((s for s in mod.stmts if s.kind == "simple" and "TYPE_CHECKING" in s.defines), None)
    if need_tc and own_tc is not None:
        # the module spells it `TYPE_CHECKING = False` to spare its importers typing's import time
        plain.append("".join(mod.lines[own_tc.node.lineno - 1:own_tc.end]).rstrip("\n"))
    elif need_tc and "TYPE_CHECKING" not in names and "TYPE_CHECKING" not in " ".join(plain):
        for i, line in enumerate(plain):
            m = re.fullmatch(r"from typing import ([\w, ]+)", line)
            if m:
                names_ = sorted({"TYPE_CHECKING", *m.group(1).split(", ")}, key=lambda n: (not n.isupper(), n))
                plain[i] = render_from("typing", [(n, None) for n in names_])
                break
        else:
            at = next((i for i, line in enumerate(plain) if re.match(r"(from|import) cudalint\b", line)), len(plain))
            plain.insert(at, "from typing import TYPE_CHECKING")
    # stdlib, third party, cudalint: keep the source's order, but put cudalint last, sorted
    first = [p for p in plain if not re.match(r"(from|import) cudalint\b", p)]
    ours = sorted(p for p in plain if re.match(r"(from|import) cudalint\b", p))
    out = "\n".join(first)
    if ours:
        out += ("\n\n" if first else "") + "\n".join(ours)
    for guard, texts in guarded.items():
        out += f"\n\n{guard}\n" + "\n".join("    " + t.replace("\n", "\n    ") for t in texts)
    return out.strip("\n")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    nodes = set(graph) | {w for ws in graph.values() for w in ws}

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def import_graph(files: dict[str, str], type_checking: bool = False) -> dict[str, dict[str, int]]:
    """cudalint module -> {cudalint module it imports: line}, imports inside functions included,
    those under `if TYPE_CHECKING:` not (they never run)."""
    mods = {path_mod(p): p for p in files if p.startswith("cudalint/") and p.endswith(".py")}
    edges: dict[str, dict[str, int]] = {m: {} for m in mods}
    for m, p in mods.items():
        tree = ast.parse(files[p])
        skip: set[int] = set()
        if not type_checking:
            for node in ast.walk(tree):
                if _is_type_checking(node):
                    skip |= {id(x) for x in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = m.split(".") if p.endswith("__init__.py") else m.split(".")[:-1]
                    pkg = pkg[:len(pkg) - (node.level - 1)]
                    base = ".".join(pkg + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != m:
                    edges[m].setdefault(t, node.lineno)
    return edges


# --- the run ---------------------------------------------------------------------------------------

def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def scope_files(root: Path) -> list[str]:
    out = []
    for p in git(root, "ls-files").splitlines():
        if p.startswith(SKIP_DIRS) or p == "tools/relayout.py":  # the map names the modules before the move
            continue
        if Path(p).suffix not in TEXT_SUFFIXES and Path(p).name not in ("Makefile",):
            continue
        out.append(p)
    return out


def plan_and_apply(root: Path, dry_run: bool, force: bool = False) -> int:
    if not dry_run and git(root, "status", "--porcelain", "--untracked-files=no").strip():
        refuse("the work tree has uncommitted changes: commit or stash them first")
    paths = scope_files(root)
    files: dict[str, str] = {}
    for p in paths:
        try:
            files[p] = (root / p).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError):
            continue
    old_modules = {path_mod(p) for p in files if p.startswith("cudalint/") and p.endswith(".py")}
    # refuse to run twice, and refuse a map that names what is not there
    for old, new in MOVES_IF_PRESENT.items():
        if old in old_modules:
            MOVES[old] = new
        else:
            print(f"note: {old} is not on this tree (MOVES_IF_PRESENT): not moved", file=sys.stderr)
    for pkg in PACKAGES:
        if mod_path(pkg, files) is not None:
            refuse(f"{pkg} exists already: this tree is re-laid out (run the script on the tree before the move)")
    for old, new in MOVES.items():
        if old not in old_modules:
            refuse(f"move: module {old} does not exist (map: MOVES {old} -> {new}); remove or rename it in the map")
        if new in old_modules:
            refuse(f"move: {new} exists already")
    new_names = set(MOVES.values()) | {s.target for s in SPLITS} | {c.target for c in CLASS_SPLITS} | set(PACKAGES)
    for n in new_names:
        for o in old_modules:
            if o != "cudalint" and (n == o or n.startswith(o + ".")) and o in MOVES:
                refuse(f"{n}: its name starts with the moved module {o}; pick another name")
    plan = Plan(old_modules, dict(MOVES), {})
    problems: list[str] = []
    # which names other files import from each module (so that a re-export keeps its import)
    users: dict[str, set[str]] = {}
    for p, text in files.items():
        if not p.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in old_modules:
                users.setdefault(node.module, set()).update(a.name for a in node.names)
    # class splits make a mixin class at top level, which a top-level split then moves
    splits = list(SPLITS)
    for cs in CLASS_SPLITS:
        apply_class_split(files, cs)
        splits.append(Split(cs.source, cs.target, (cs.mixin,), cs.doc))
    by_source: dict[str, list[Split]] = {}
    for sp in splits:
        by_source.setdefault(sp.source, []).append(sp)
    for sp in splits:
        for name in sp.names:
            plan.namemap[(sp.source, name)] = sp.target
    for source, group in by_source.items():
        # a split of a split's target: merge into one Split per target
        merged: dict[str, Split] = {}
        for sp in group:
            if sp.target in merged:
                m = merged[sp.target]
                merged[sp.target] = Split(source, sp.target, m.names + sp.names, m.doc)
            else:
                merged[sp.target] = sp
        apply_splits(files, source, list(merged.values()), plan, users)
    for old, new in MOVES.items():
        if old.count(".") != new.count(".") and re.search(r"\b(?<!\.)__file__\b", files[mod_path(old, files)]):
            refuse(f"move: {old} reads __file__ and {new} is at another depth: what it finds would change. "
                   "Keep it in place, or split the function that reads __file__ out first.")
    # rewrite every reference, in every file, against the names before the move
    new_files: dict[str, str] = {}
    for p, text in files.items():
        if p.endswith(".py") or (not Path(p).suffix and text.startswith("#!") and "python" in text.split("\n", 1)[0]):
            new_files[p] = rewrite_python(p, text, plan, problems)
        else:
            new_files[p] = rewrite_text(text, plan, [])
    # the moves themselves
    renames: dict[str, str] = {}
    for old, new in MOVES.items():
        renames[mod_path(old, files)] = final_path(new)
    final: dict[str, str] = {}
    for p, text in new_files.items():
        final[renames.get(p, p)] = text
    for pkg, doc in PACKAGES.items():
        init = pkg.replace(".", "/") + "/__init__.py"
        final[init] = f'"""{doc}\n"""\n'
    used_pkgs = {n.rpartition(".")[0] for n in set(MOVES.values()) | plan.new_modules}
    for pkg in used_pkgs:
        if pkg != "cudalint" and pkg.replace(".", "/") + "/__init__.py" not in final:
            refuse(f"{pkg} is not a package: add it to PACKAGES with a docstring")
    # check the result before writing anything
    before = {renames.get(p, p): t for p, t in files.items()}
    for p, text in final.items():
        if p.endswith(".py") and text != before.get(p):
            try:
                compile(text, p, "exec")
            except SyntaxError as exc:
                refuse(f"{p}: the result does not parse ({exc}); this is a bug in tools/relayout.py")
    long = sorted((len(t.splitlines()), p) for p, t in final.items()
                  if p.startswith("cudalint/") and p.endswith(".py") and len(t.splitlines()) > MAX_LINES)
    cycles = _cycles({m: set(e) for m, e in import_graph(final).items()})
    report = []
    for m in sorted(old_modules):
        if m.count(".") == 1 and m not in STAY and m not in MOVES:
            report.append(f"{m} has no place: add it to MOVES (which package?) or to STAY")
    for n, p in long:
        report.append(f"{p}: {n} lines (over {MAX_LINES}): split more of it (SPLITS / CLASS_SPLITS)")
    for cyc in cycles:
        report.append("import cycle: " + " <-> ".join(cyc))
    for msg in problems:
        print("note:", msg, file=sys.stderr)
    if dry_run:
        for old, new in sorted(renames.items()):
            print(f"move  {old} -> {new}")
        for m in sorted(plan.new_modules):
            print(f"new   {final_path(m)} ({len(final[final_path(m)].splitlines())} lines)")
        changed = sorted(p for p in final if final[p] != files.get(next((o for o, n in renames.items() if n == p), p)))
        print(f"{len(changed)} files change")
    if report and not force:
        refuse("the result breaks the layout rules (--force writes it anyway; tests/test_layout.py then fails):\n  "
               + "\n  ".join(report))
    for line in report:
        print("warning:", line, file=sys.stderr)
    if dry_run:
        print("dry run: the map applies cleanly; nothing written")
        return 0
    for old, new in renames.items():
        (root / new).parent.mkdir(parents=True, exist_ok=True)
        git(root, "mv", old, new)
    for p, text in final.items():
        dest = root / p
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.exists() or dest.read_text(encoding="utf-8") != text:
            dest.write_text(text, encoding="utf-8")
    git(root, "add", "-A", "cudalint", *[p for p in final if not p.startswith("cudalint/")])
    print(f"done: {len(renames)} modules moved, {len(plan.new_modules)} new modules; review `git diff --cached --stat`")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="check the map and print the plan; write nothing")
    ap.add_argument("--force", action="store_true",
                    help="write the result even with an import cycle, a module over 500 lines or an unplaced module")
    ap.add_argument("--root", default=str(Path(__file__).resolve().parent.parent))
    args = ap.parse_args(argv)
    try:
        return plan_and_apply(Path(args.root), args.dry_run, args.force)
    except Refusal as exc:
        print(f"relayout: refused: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
