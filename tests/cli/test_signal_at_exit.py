"""A signal after the command's work is done, before the interpreter's exit is made quiet, ends it with one line.

CI's long compare sweep met a SIGINT in the few instructions between main()'s return and `command_start.finish()`: a
KeyboardInterrupt traceback out of `dispatch.run` (1 in 300 interrupts). Here the signal lands there every time: in
the flush of standard output that `run` does after main() returned.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from helpers.signal_sweep import fake_command_child

CHILD = fake_command_child("""
    SIG = int(os.environ["SIG"])

    class Out:
        def __init__(self, real):
            self.real = real

        def write(self, text):
            return self.real.write(text)

        def flush(self):  # the flush run() does after main() returned: the signal's handler runs here
            self.real.flush()
            os.kill(os.getpid(), SIG)
            for _ in range(10000):
                pass

    def run(args):
        print("work done", flush=True)
        sys.stdout = Out(sys.stdout)
        return 0
""", as_command=True)


def default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_between_main_and_the_exit_is_one_line(sig):
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60,
                       env={"SIG": str(int(sig)), "PATH": "/usr/bin:/bin"},
                       preexec_fn=default_signals)
    assert "Traceback" not in p.stderr, p.stderr
    assert p.stdout == "work done\n"
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)
    line = "dumpcmp: interrupted" if sig == signal.SIGINT else f"dumpcmp: stopped by signal {int(sig)}"
    assert p.stderr.strip() == line
