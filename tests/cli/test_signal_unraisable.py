"""A signal whose exception Python cannot propagate still ends the command.

A signal handler runs wherever the main thread is. Inside a weakref callback of the import system or a `__del__`,
the Terminated / KeyboardInterrupt it raises is only printed ("Exception ignored in ...") and the command went on:
CI's start-up sweep (tests/hostile/test_signals_compare.py) met SIGTERM during an import, a traceback, then exit 0.
Here the signal lands inside a `__del__`, every time.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from helpers.signal_sweep import fake_command_child

CHILD = fake_command_child("""
    import signal, time

    class Dropped:
        def __del__(self):
            os.kill(os.getpid(), int(sys.argv[1]))
            for _ in range(10000):  # the handler runs here, inside __del__
                pass

    def run(args):
        Dropped()
        time.sleep(3)
        print("went on after the signal", flush=True)
        return 0
""")


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_inside_a_finaliser_ends_the_command(sig):
    p = subprocess.run([sys.executable, "-c", CHILD, str(int(sig))], capture_output=True, text=True,
                       timeout=60, preexec_fn=default_sigint)
    assert "went on" not in p.stdout
    assert "Exception ignored" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)
    assert p.stderr.strip() in ("dumpcmp: interrupted", f"dumpcmp: stopped by signal {int(sig)}")
