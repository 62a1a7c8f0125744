"""Hostile DebugConfig.txt files for `dumpcmp debug-config check`: random and mutated bytes never raise anything but
ConfigError (the CLI's exit 2 with one line), and real processes on devices, FIFOs, link loops and huge files exit
2 with one line naming the file, without a traceback or a hang."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dumpcmp.device.debugconfig import KNOWN_SWITCHES, check_debug_config
from dumpcmp.errors import ConfigError
import dumpcmp

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout
VALID = b"dumpTensor\neliminateGarbage\ndequantFixed\n#dumpasstring\n#disableDomainFuseOps\npath=/tmp\n"


def checked(path):
    try:
        return check_debug_config(path)
    except ConfigError as error:
        text = str(error)
        assert "\n" not in text and text.startswith(str(path)), text
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_bytes(tmp_path, data):
    f = tmp_path / "DebugConfig.txt"
    f.write_bytes(data)
    checked(f)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, len(VALID)), st.binary(min_size=0, max_size=4)), max_size=6))
def test_mutated_valid_file(tmp_path, edits):
    data = bytearray(VALID)
    for at, chunk in edits:
        data[at:at + len(chunk)] = chunk
    f = tmp_path / "DebugConfig.txt"
    f.write_bytes(bytes(data))
    c = checked(f)
    if c is not None:  # accepted: what it says holds the rules
        assert tuple(c.switches) == KNOWN_SWITCHES
        assert c.path is None or (c.path.startswith("/") and len(c.path.encode()) <= 122)


def cli(*args, timeout=60):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "dumpcmp", "debug-config", "check", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("kind", ["dev_zero", "fifo", "loop", "huge", "dir", "long_line", "dangling"])
def test_real_processes(tmp_path, kind):
    target = tmp_path / "DebugConfig.txt"
    if kind == "dev_zero":
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "loop":
        target.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(target)
    elif kind == "huge":
        with open(target, "wb") as f:
            f.truncate(1 << 30)  # sparse: 1 GiB of NULs, never read whole
    elif kind == "dir":
        target.mkdir()
    elif kind == "long_line":
        target.write_bytes(b"dumpTensor" * 6000)
    else:
        target.symlink_to(tmp_path / "nothing")
    before = sorted(os.listdir(tmp_path))
    r = cli(target)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1 and str(target) in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == before  # nothing written
