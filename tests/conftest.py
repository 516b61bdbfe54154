"""Shared test setup."""
from __future__ import annotations

import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _cache_outside_the_tree():
    # CLI runs in tests must not leave .cudalint_cache directories inside fixtures/
    with tempfile.TemporaryDirectory(prefix="cudalint-cache-") as tmp:
        old = os.environ.get("CUDALINT_CACHE_DIR")
        os.environ["CUDALINT_CACHE_DIR"] = tmp
        yield
        if old is None:
            os.environ.pop("CUDALINT_CACHE_DIR", None)
        else:
            os.environ["CUDALINT_CACHE_DIR"] = old
