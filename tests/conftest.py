from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


@pytest.fixture(scope="session")
def testhooks():
    """The tests' native hooks (dumpcmp_testhooks), built from the source tree on first use: tests/native_hooks.py."""
    import native_hooks

    return native_hooks.load()
