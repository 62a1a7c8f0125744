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


def _assert_one_line_end(monkeypatch, capsys, run, sig: int) -> None:
    """`compare` whose run is `run`: exit 128 + sig and the one line, the process's handlers restored after."""
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(compare_command, "run", run)
    try:
        install_signal_cleanup()
        code = dispatch.main(["compare", "-l", "left", "-r", "right"])
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    assert code == 128 + sig
    expected = "dumpcmp: interrupted" if sig == signal.SIGINT else f"dumpcmp: stopped by signal {int(sig)}"
    assert capsys.readouterr().err.strip() == expected


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_wrapped_in_a_runtime_error_ends_the_command(monkeypatch, capsys, sig):
    _assert_one_line_end(monkeypatch, capsys, _signal_in_set_name(sig), sig)


def _signal_replaced_by(sig: int, error: Exception):
    """A command whose signal some code catches and replaces by `error` without a chain, as an extension module's
    initialisation does (an ImportError) or NumPy's fromfile (a TypeError)."""
    def run(args) -> int:
        try:
            os.kill(os.getpid(), sig)
            for _ in range(100):
                pass
        except BaseException:
            pass
        error.__suppress_context__ = True
        error.__context__ = None
        raise error

    return run


def _signal_turned_into_import_error(sig: int):
    return _signal_replaced_by(sig, ImportError('PyCapsule_Import could not import module "datetime"'))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_turned_into_an_import_error_ends_the_command(monkeypatch, capsys, sig):
    """A signal while NumPy initialises surfaced as its ImportError (a traceback, exit 1, in the writers' sweep)."""
    _assert_one_line_end(monkeypatch, capsys, _signal_turned_into_import_error(sig), sig)


def _signal_turned_into_type_error(sig: int):
    return _signal_replaced_by(sig, TypeError("expected str, bytes or os.PathLike object, not BufferedReader"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_turned_into_a_type_error_ends_the_command(monkeypatch, capsys, sig):
    """A signal inside np.load surfaced as NumPy's TypeError (a traceback, exit 1, in CI's writers sweep)."""
    _assert_one_line_end(monkeypatch, capsys, _signal_turned_into_type_error(sig), sig)


def test_an_error_without_a_signal_during_the_command_stays_a_traceback(monkeypatch):
    """A signal met by an earlier command of this process does not excuse a later command's bug."""
    def bug(args) -> int:
        raise TypeError("a bug")

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        install_signal_cleanup()
        monkeypatch.setattr(compare_command, "run", _signal_turned_into_type_error(signal.SIGTERM))
        assert dispatch.main(["compare", "-l", "left", "-r", "right"]) == 128 + signal.SIGTERM
        monkeypatch.setattr(compare_command, "run", bug)
        with pytest.raises(TypeError, match="a bug"):
            dispatch.main(["compare", "-l", "left", "-r", "right"])
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def test_an_import_error_without_a_signal_is_not_taken_for_one():
    from dumpcmp.support.files import interrupted_by

    chained = ImportError("init failed")
    chained.__context__ = KeyboardInterrupt()
    assert interrupted_by(chained) == signal.SIGINT
    assert interrupted_by(ValueError("x")) is None
