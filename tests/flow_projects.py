"""Small projects written to a temporary folder, summarized and run through the flow engine
(cudalint.analysis.flow) with the shipped checks, or with the checks a test gives."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from cudalint.analysis.flow import Analyzer
from cudalint.checks import build_checks, build_derive, build_sparse, init_keys, watched
from cudalint.core.catalogue import load_catalogue
from cudalint.core.project import Project
from cudalint.inputs.config import Config
from cudalint.summary.from_bytes import _summarize_bytes


def analyze(tmp_path: Path, files: dict[str, str], checks: Optional[dict] = None) -> Analyzer:
    """`files`: relative path -> text (folders made as needed). `checks`: {kind: [check]} instead of
    the shipped ones (then no derivations)."""
    cat = load_catalogue()
    config = Config()
    mods = []
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        mods.append(_summarize_bytes(str(path), text.encode(), name[:-3].replace("/", "."), False, cat))
    if checks is not None:
        an = Analyzer(Project(mods), checks, init_keys)
    else:
        shipped = build_checks(cat, config.enabled, config.target_version)
        an = Analyzer(Project(mods), shipped, init_keys, derive=build_derive(config.target_version, cat), imports=watched.import_keys(cat), sparse=build_sparse(cat))
    an.run()
    return an
