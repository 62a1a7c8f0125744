"""The tests mirror src/dumpcmp: tests/dumps/ tests dumpcmp.dumps, tests/graph/ dumpcmp.graph, and so on (tests/core/
the compiled core's stub, tests/support/ the safe writer). Suites that cut across the stages have folders of their
own: tests/oracle/ (every output against the original tool's), tests/hostile/ (broken inputs, fuzzing),
tests/realnets/ (real networks and what they taught). tests/test_layers.py holds the package to its layout rules.

Imports: tests/ is on sys.path (pyproject.toml's `pythonpath`), so `from helpers import graphjson` reaches the shared
helpers; a test imports a module of its own folder by its bare name (pytest puts the folder on sys.path). Test file
names are unique across folders (the folders are not packages)."""

from __future__ import annotations

import signal

import numpy as np
import pytest

# A test run started in a shell's background (`cmd &` in a script) inherits SIGINT ignored, and one under `nohup`
# SIGHUP ignored; the children it starts inherit that, and the signal tests would test nothing. Put back what a
# terminal run has: Python's own handler for SIGINT, the default action for SIGHUP.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


_HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def signal_handlers_restored():
    """Each test leaves the run's signal handlers as it found them: a test that runs a command's process entry
    (`dispatch.run()`) in process installs the command's own, and a later test's SIGINT then killed the whole run
    (exit 130, no report)."""
    before = {s: signal.getsignal(s) for s in _HANDLED}
    yield
    for s, handler in before.items():
        if signal.getsignal(s) is not handler and handler is not None:
            signal.signal(s, handler)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261121)


@pytest.fixture(scope="session")
def testhooks():
    """The tests' native hooks (dumpcmp_testhooks), built from the source tree on first use:
    tests/helpers/native_hooks.py."""
    from helpers import native_hooks

    return native_hooks.load()
