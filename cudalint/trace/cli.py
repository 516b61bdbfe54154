"""Command line of the tracer: `cudalint --trace [options] (-m module | script) [args...]`, also
`python -m cudalint.trace [options] ...`.

Options stop at the first argument that is not one of ours, so the program's own options pass
through untouched:
  --format text|json   the report (default text)
  -o, --output FILE    write the report to FILE instead of stdout (stdout is the program's)
  --findings FILE      static findings from `cudalint --format json` instead of running the analyzer
  --catalogue FILE     an extra catalogue file (like `extend-catalogue`), repeatable
  --events FILE        keep the raw event stream (JSON lines) in FILE
"""
from __future__ import annotations

import sys

from cudalint.trace import run

USAGE = ("usage: cudalint --trace [--format text|json] [-o FILE] [--findings FILE] [--catalogue FILE] "
         "[--events FILE] (-m module | script) [args...]")
_VALUED = {"--format": "fmt", "-o": "output", "--output": "output", "--findings": "findings",
           "--catalogue": "catalogue", "--events": "events"}


def main(argv: list[str]) -> int:
    opts: dict = {"fmt": "text", "output": None, "findings": None, "events": None, "catalogue": []}
    module = False
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, value = a.partition("=")
        if name in _VALUED and (eq or i + 1 < len(argv)):
            if not eq:
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
        else:
            break
    rest = argv[i:]
    if not rest or opts["fmt"] not in ("text", "json"):
        print(USAGE, file=sys.stderr)
        return 2
    kwargs = dict(module=module, fmt=opts["fmt"], findings_file=opts["findings"],
                  catalogue=tuple(opts["catalogue"]), events_file=opts["events"])
    if opts["output"]:
        with open(opts["output"], "w", encoding="utf-8") as out:
            return run(rest, out=out, **kwargs)
    return run(rest, out=sys.stdout, **kwargs)


def run_from_cli(argv: list[str]) -> int:
    """For `cudalint --trace ...`: argv as given to cudalint, starting with `--trace` (or
    `--trace=script.py`)."""
    first, eq, script = argv[0].partition("=")
    if first != "--trace":
        print(USAGE, file=sys.stderr)
        return 2
    return main(([script] if eq else []) + argv[1:])
