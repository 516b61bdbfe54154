"""The tracer's options, checked before the program starts.

Every problem an option can have (a missing or malformed `--findings` file, an output in a missing
folder, `--events` naming a folder, an unreadable `--catalogue`, an unknown `--format`) is found
here and reported as one line naming the option, the file and the reason; the caller exits 2
without running the program. Nothing is written here: outputs are only checked to be writable.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from cudalint.core.findings import Finding

FORMATS = ("text", "json", "sarif")


class OptionError(ValueError):
    """One line for the user: which option, which file, what is wrong."""


class Options:
    """The parsed options (a plain class: dataclasses' import would cost ~50 ms before the program starts)."""

    __slots__ = ("argv", "module", "fmt", "output", "html", "findings_file", "catalogue", "events", "findings")

    def __init__(self, argv: tuple[str, ...], module: bool = False, fmt: str = "text", output: str | None = None,
                 html: str | None = None, findings_file: str | None = None, catalogue: tuple[str, ...] = (),
                 events: str | None = None, findings: tuple = ()) -> None:
        self.argv, self.module, self.fmt, self.output, self.html = argv, module, fmt, output, html
        self.findings_file, self.catalogue, self.events, self.findings = findings_file, catalogue, events, findings


def check_output(option: str, path: str) -> None:
    """`path` can be created or overwritten as a file: its folder exists, it is not a folder."""
    if path == "-":
        return
    if os.path.isdir(path):
        raise OptionError(f"{option} {path}: is a folder, not a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise OptionError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise OptionError(f"{option} {path}: not writable")


def check_catalogue(paths: tuple[str, ...]) -> None:
    for p in paths:
        if not os.path.isfile(p):
            raise OptionError(f"--catalogue {p}: {'is a folder' if os.path.isdir(p) else 'no such file'}")
    from cudalint.core.catalogue import CatalogueError, load_catalogue

    try:
        load_catalogue(paths)
    except CatalogueError as exc:
        raise OptionError(f"--catalogue: {exc}") from None


def _need(d: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise OptionError(f"{where}: `{key}` is missing")
    v = d[key]
    if not isinstance(v, kind) or isinstance(v, bool) and kind is int:
        raise OptionError(f"{where}: `{key}` must be {getattr(kind, '__name__', 'a number')}")
    return v


def load_findings(path: str) -> list[Finding]:
    """Findings as `cudalint --format json` writes them (a list, or {"findings": [...]}), each field
    checked: a file of the wrong shape is an error naming the entry, not a traceback later."""
    import json

    from cudalint.core.findings import Finding, Step

    opt = f"--findings {path}"
    if os.path.isdir(path):
        raise OptionError(f"{opt}: is a folder, not a file")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise OptionError(f"{opt}: no such file") from None
    except OSError as exc:
        raise OptionError(f"{opt}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise OptionError(f"{opt}: not JSON ({exc})") from None
    items = data.get("findings") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise OptionError(f"{opt}: expected a list of findings or {{\"findings\": [...]}}, "
                          f"as `cudalint --format json` writes")
    out = []
    for i, d in enumerate(items):
        where = f"{opt}: finding {i + 1}"
        if not isinstance(d, dict):
            raise OptionError(f"{where}: expected an object, got {type(d).__name__}")
        code = _need(d, "code", str, where)
        fpath = _need(d, "path", str, where)
        line = _need(d, "line", int, where)
        message = _need(d, "message", str, where)
        column = d.get("column", 1)
        witness = d.get("witness", [])
        if not isinstance(column, int) or not isinstance(witness, list):
            raise OptionError(f"{where}: `column` must be int and `witness` a list")
        steps = []
        for s in witness:
            steps.append(Step(_need(s, "path", str, where + " witness"), _need(s, "line", int, where + " witness"),
                              _need(s, "note", str, where + " witness")))
        end_line, end_column = d.get("end_line", line), d.get("end_column", column)
        if not isinstance(end_line, int) or not isinstance(end_column, int):
            raise OptionError(f"{where}: `end_line` and `end_column` must be int")
        out.append(Finding(code=code, path=fpath, line=line, column=column, end_line=end_line,
                           end_column=end_column, message=message, severity=str(d.get("severity", "error")),
                           witness=tuple(steps)))
    return out


def check(opts: Options) -> Options:
    """The options, with `--findings` loaded; OptionError for the first problem."""
    if opts.fmt not in FORMATS:
        raise OptionError(f"--format {opts.fmt}: unknown format (text, json or sarif)")
    if opts.output:
        check_output("--output", opts.output)
    if opts.html:
        check_output("--html", opts.html)
    if opts.events:
        check_output("--events", opts.events)
    if opts.catalogue:
        check_catalogue(opts.catalogue)
    if opts.findings_file:
        opts.findings = tuple(load_findings(opts.findings_file))
    return opts
