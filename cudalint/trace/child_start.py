"""The start of a traced grandchild (from boot/sitecustomize.py): install the bootstrap there.
"""
from __future__ import annotations

from cudalint.trace.children import _config, _hide


def start_child(config: str) -> None:
    """In a new interpreter started below the traced program (from boot/sitecustomize.py)."""
    _config[:] = [config]
    _hide()
    events_path, plan_path = config.split("\n")[:2]
    from cudalint.trace import bootstrap

    bootstrap.install(events_path, plan_path, root=False)
