"""`--baseline FILE`: report only the findings that are not in an earlier run's JSON output.

The baseline is what `cudalint --format json -o cudalint-baseline.json .` writes (the array of
findings). A finding matches a baseline entry with the same code, path and message once line
numbers are taken out of the message, so code that moves up or down keeps its findings silenced;
each entry silences one finding (two new copies of a known bug show one).
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Iterable

from cudalint.core.findings import Finding

_LINE_REF = re.compile(r"\b(line|lines|cell)\s+\d+|:\d+\b")


class BaselineError(ValueError):
    """A baseline file that cannot be read; the message names it."""


def _key(code: str, path: str, message: str) -> tuple[str, str, str]:
    return code, os.path.normpath(path).replace(os.sep, "/"), _LINE_REF.sub(lambda m: m.group(1) or ":", message)


def load(path: str) -> Counter:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: no such baseline file; create it with `cudalint --format json -o {path} PATHS`"
        ) from None
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{path}: not a cudalint JSON report: {exc}") from None
    if not isinstance(data, list) or not all(
        isinstance(d, dict) and isinstance(d.get("code"), str) and isinstance(d.get("path"), str) and isinstance(d.get("message"), str)
        for d in data
    ):
        raise BaselineError(f"{path}: not a cudalint JSON report (`--format json`): expected an array of findings")
    return Counter(_key(d["code"], d["path"], d["message"]) for d in data)


def new_findings(findings: Iterable[Finding], known: Counter) -> list[Finding]:
    left = Counter(known)
    out = []
    for f in findings:
        k = _key(f.code, f.path, f.message)
        if left[k] > 0:
            left[k] -= 1
            continue
        out.append(f)
    return out
