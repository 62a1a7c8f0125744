"""golden and simulate show progress as compare does (issue #34): a bar on a terminal's stderr, nothing with
--quiet, nothing when stderr is not a terminal. A real process on a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp

pytest.importorskip("onnxruntime")

SRC = Path(dumpcmp.__file__).resolve().parents[1]  # the package the tests import: installed, or src/


def _on_terminal(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run dumpcmp with stderr on a pseudo-terminal; its return code, stdout and what the terminal received."""
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", *args], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal (EIO on Linux)
                break
            if not data:
                break
            chunks.append(data)
        out = proc.stdout.read().decode()
        proc.stdout.close()
        code = proc.wait(timeout=300)
    finally:
        os.close(master)
    return code, out, b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize("command", ["golden", "simulate"])
def test_progress_on_a_terminal_only_and_not_with_quiet(tmp_path, command):
    from dumpcmp.cli.demo import build_model

    model = build_model(tmp_path / "net.onnx")
    extra = ["--precision", "int8"] if command == "simulate" else []
    code, out, terminal = _on_terminal([command, str(model), "--seed", "0", "-o", str(tmp_path / "a"), *extra],
                                       tmp_path)
    assert code == 0, terminal
    label = "golden" if command == "golden" else "simulating int8"
    assert label + " " in terminal and "[" in terminal and "#" in terminal, terminal
    assert "\r" in terminal  # drawn in place
    assert "/" in terminal.split(label, 1)[1]  # done/total
    code, out, terminal = _on_terminal([command, str(model), "--seed", "0", "-o", str(tmp_path / "b"), "--quiet",
                                        *extra], tmp_path)
    assert code == 0 and terminal.strip() == "" and out == "", terminal
    # not a terminal: nothing but the summary
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "dumpcmp", command, str(model), "--seed", "0", "-o",
                           str(tmp_path / "c"), *extra], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
