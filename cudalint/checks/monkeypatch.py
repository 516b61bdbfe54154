"""CUD008: a catalogued CUDA API replaced by assignment (`torch.cuda.is_available = lambda: False`).

The patch changes the answer of one function; every other path to the GPU (`tensor.cuda()`,
`torch.cuda.device_count()`, another library) still sees it and initializes it. Test doubles that
undo themselves (`monkeypatch.setattr`, `mock.patch`) are not assignments and are not reported.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from cudalint.core.catalogue import Catalogue
from cudalint.core.findings import Finding
from cudalint.analysis.flow import Exposed


def checks(catalogue: Catalogue, enabled: Callable[[str], bool]) -> Iterable[tuple[str, Callable]]:
    if not enabled("CUD008"):
        return []

    def check(_analyzer, exposed: Exposed, _lookup, _prefix) -> Optional[Finding]:
        ev = exposed.event
        name = ev.data[0]
        message = (
            f"{name} is replaced for the whole process; code that does not call it (tensor.cuda(), "
            "device_count(), other libraries) still sees and initializes the GPU. To hide GPUs, set "
            'CUDA_VISIBLE_DEVICES="" before anything initializes CUDA'
        )
        return Finding("CUD008", exposed.path, ev.loc[0], ev.loc[1], ev.loc[2], ev.loc[3], message, (), "warning")

    return [("monkeypatch", check)]
