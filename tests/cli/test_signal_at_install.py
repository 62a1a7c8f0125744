"""A SIGTERM that arrives while `main()` puts its signal handlers in place unwinds as any other signal: one line, exit
143, no traceback (CI's slow signal sweep saw a `Terminated` traceback from inside `install_signal_cleanup`, the
handlers of SIGINT and SIGTERM already set, SIGHUP's not yet)."""

from __future__ import annotations

import os
import signal

import dumpcmp.support.files as files
from dumpcmp.cli import main


def test_sigterm_while_the_handlers_are_installed(monkeypatch, capsys):
    real = files.install_signal_cleanup

    def install() -> None:
        real()
        os.kill(os.getpid(), signal.SIGTERM)  # the handler just installed raises Terminated here

    monkeypatch.setattr(files, "install_signal_cleanup", install)
    assert main(["info", "--help-nonexistent-option"]) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err == "dumpcmp: stopped by signal 15\n"
