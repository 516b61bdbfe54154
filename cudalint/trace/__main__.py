"""`python -m cudalint.trace [--format json] [-o REPORT] [-m] program args...`

The same as `cudalint --trace ...` (the main CLI calls `cudalint.trace.run`). Options stop at the
first argument that is not one of ours, so the program's own options pass through untouched.
`--findings FILE` takes static findings from a `cudalint --format json` file instead of running the
analyzer; `--events FILE` keeps the raw event stream.
"""
from __future__ import annotations

import sys

from cudalint.trace import run

USAGE = "usage: python -m cudalint.trace [--format text|json] [-o FILE] [--findings FILE] [--catalogue FILE] [--events FILE] (-m module | script) [args...]"


def main(argv: list[str]) -> int:
    fmt, output, findings, events, catalogue, module = "text", None, None, None, [], False
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--format", "-o", "--output", "--findings", "--catalogue", "--events") and i + 1 < len(argv):
            v = argv[i + 1]
            if a == "--format":
                fmt = v
            elif a in ("-o", "--output"):
                output = v
            elif a == "--findings":
                findings = v
            elif a == "--events":
                events = v
            else:
                catalogue.append(v)
            i += 2
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
            i += 1
        elif a == "-m":
            module = True
            i += 1
            break
        elif a in ("-h", "--help"):
            print(USAGE)
            return 0
        else:
            break
    rest = argv[i:]
    if not rest or fmt not in ("text", "json"):
        print(USAGE, file=sys.stderr)
        return 2
    if output:
        with open(output, "w", encoding="utf-8") as out:
            return run(rest, module=module, fmt=fmt, out=out, findings_file=findings, catalogue=catalogue, events_file=events)
    return run(rest, module=module, fmt=fmt, out=sys.stdout, findings_file=findings, catalogue=catalogue, events_file=events)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
