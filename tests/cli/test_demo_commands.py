"""Every command the demo prints works as printed, in a real process (issue #34: the folder existed, simulate
dumped no inputs, `compare -d` met two runs)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp

pytest.importorskip("onnxruntime")

SRC = Path(dumpcmp.__file__).resolve().parents[1]  # the package the tests import: installed, or src/


def _dumpcmp(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_every_printed_command_runs_as_printed(tmp_path):
    tmp_path = tmp_path / "a folder"  # with a space: the printed paths are quoted for the shell
    tmp_path.mkdir()
    demo = _dumpcmp(["demo"], tmp_path)
    assert demo.returncode == 0, demo.stderr
    commands = [shlex.split(line, comments=True) for line in demo.stdout.splitlines()
                if line.strip().startswith("dumpcmp ")]
    assert len(commands) >= 6
    assert any(c[1] == "simulate" for c in commands) and any("-d" in c for c in commands)
    for command in commands:
        assert command[0] == "dumpcmp"
        done = _dumpcmp(command[1:], tmp_path)
        assert done.returncode == 0, f"{shlex.join(command)}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr
    # the printed commands write only under the demo folder, which --force may replace afterwards
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dumpcmp-demo"]
    again = _dumpcmp(["demo", "-o", str(tmp_path / "dumpcmp-demo"), "--force"], tmp_path)
    assert again.returncode == 0, again.stderr
