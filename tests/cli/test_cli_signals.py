"""The command's signal handling in-process: a signal that reaches the command wrapped by the interpreter (Python 3.11
turns an exception inside a class body's __set_name__, such as a dataclass field's, into a RuntimeError whose cause
it is; commands import their modules, dataclasses included, as they start) still ends the command with one line and
128 + the signal's number, not a RuntimeError traceback. Whole processes under signals: tests/hostile/
test_signals_compare.py.
"""

from __future__ import annotations

import os
import signal

import pytest

from dumpcmp.cli import compare as compare_command
from dumpcmp.cli import dispatch
from dumpcmp.support.files import install_signal_cleanup


def _signal_in_set_name(sig: int):
    def run(args) -> int:
        class Field:
            def __set_name__(self, owner, name):
                os.kill(os.getpid(), sig)  # its handler runs at the next instruction, inside __set_name__
                for _ in range(100):
                    pass

        class Owner:
            field = Field()

        return 0

    return run


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_wrapped_in_a_runtime_error_ends_the_command(monkeypatch, capsys, sig):
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(compare_command, "run", _signal_in_set_name(sig))
    try:
        install_signal_cleanup()
        code = dispatch.main(["compare", "-l", "left", "-r", "right"])
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert code == 128 + sig
    expected = "dumpcmp: interrupted" if sig == signal.SIGINT else f"dumpcmp: stopped by signal {int(sig)}"
    assert capsys.readouterr().err.strip() == expected
