"""Command line of the tracer: `cudalint --trace [options] (-m module | script) [args...]`, also
`python -m cudalint.trace [options] ...`.

Options stop at the first argument that is not one of ours, so the program's own options pass
through untouched. The program's stdout is left to the program; the report goes to stderr unless
`-o` names a file.
  --format text|json|sarif   the report (default text; sarif: verdicts as result properties)
  -o, --output-file FILE     write the report to FILE instead of stderr (also --output)
  --html FILE                also write the timeline: one self-contained HTML page
  --findings FILE            static findings from `cudalint --format json` instead of running the analyzer
  --catalogue FILE           an extra catalogue file (like `extend-catalogue`), repeatable
  --events FILE              keep the raw event stream (JSON lines) in FILE
Every option is checked before the program starts: a problem is one line and exit status 2.
Exit status: 1 a finding is confirmed; otherwise the program's own failure (its status, or 128+N
when killed by signal N); 0 when it succeeded; 2 when an option is wrong or the program could not start.
"""
from __future__ import annotations

import sys

from cudalint.trace.launch import run

USAGE = ("usage: cudalint --trace [--format text|json|sarif] [-o FILE] [--html FILE] [--findings FILE] "
         "[--catalogue FILE] [--events FILE] (-m module | script) [args...]")
_VALUED = {"--format": "fmt", "-o": "output", "--output": "output", "--output-file": "output", "--html": "html",
           "--findings": "findings", "--catalogue": "catalogue", "--events": "events"}


def parse(argv: list[str]):  # -> Options | int (an exit status)
    from cudalint.trace.options import Options, OptionError

    opts: dict = {"fmt": "text", "output": None, "html": None, "findings": None, "events": None, "catalogue": []}
    module = False
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if name in _VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    raise OptionError(f"{name} needs a value")
                value = argv[i + 1]
                i += 1
            key = _VALUED[name]
            if key == "catalogue":
                opts[key].append(value)
            else:
                opts[key] = value
            i += 1
        elif a == "-m":
            module = True
            i += 1
            break
        elif a in ("-h", "--help"):
            print(USAGE)
            print(__doc__.split("\n\n", 1)[1].rstrip())
            return 0
        elif a == "--":
            i += 1
            break
        elif a.startswith("-") and a != "-" and not module:
            raise OptionError(f"{a}: unknown option of --trace (the program's own options come after it)")
        else:
            break
    rest = argv[i:]
    if not rest:
        raise OptionError("a program to run is missing (" + USAGE.split(" ", 1)[1] + ")")
    return Options(argv=tuple(rest), module=module, fmt=opts["fmt"], output=opts["output"], html=opts["html"],
                   findings_file=opts["findings"], catalogue=tuple(opts["catalogue"]), events=opts["events"])


def main(argv: list[str]) -> int:
    from cudalint.trace.options import OptionError, check

    try:
        opts = parse(argv)
        if isinstance(opts, int):
            return opts
        opts = check(opts)
    except OptionError as exc:
        print(f"cudalint: {exc}", file=sys.stderr)
        return 2
    return run(list(opts.argv), module=opts.module, fmt=opts.fmt, output=opts.output, html=opts.html,
               findings=list(opts.findings) if opts.findings_file else None,
               catalogue=opts.catalogue, events_file=opts.events)


def run_from_cli(argv: list[str]) -> int:
    """For `cudalint --trace ...`: argv as given to cudalint, starting with `--trace` (or
    `--trace=script.py`)."""
    first, eq, script = argv[0].partition("=")
    if first != "--trace":
        print(USAGE, file=sys.stderr)
        return 2
    return main(([script] if eq else []) + argv[1:])
