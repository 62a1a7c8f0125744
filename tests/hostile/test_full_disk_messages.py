"""A write that fails (full disk, quota, file-size limit) is one line naming the file and the reason, exit code 2, no
traceback, nothing left behind (issue #33: ENOSPC messages lacked the file name). Real processes under a file-size
limit (RLIMIT_FSIZE, SIGXFSZ ignored: every write past the limit fails with EFBIG, as a full disk fails with
ENOSPC)."""

from __future__ import annotations

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp
from dumpcmp.errors import DumpcmpError
from dumpcmp.support import files

sys.path.insert(0, str(Path(__file__).parents[1] / "comparison"))
from test_compare import Model  # noqa: E402


def test_a_full_disk_names_the_file(tmp_path):
    target = tmp_path / "out.csv"

    def full(f):
        f.write(b"x")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(DumpcmpError, match=r"out\.csv: cannot write the table: No space left on device"):
        files.atomic_write(target, full, what="table")
    assert os.listdir(tmp_path) == []


def limited():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))


@pytest.mark.parametrize("args, name", [
    (["-o", "{out}/table.csv"], "table.csv"),
    (["-d", "conv1bn1relu1", "-o", "{out}/detail"], "detail"),
])
def test_cli_under_a_file_size_limit(tmp_path, rng, args, name):
    model = Model(tmp_path, rng)
    out = tmp_path / "o"
    out.mkdir()
    cmd = [sys.executable, "-m", "dumpcmp", "compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f",
           str(model.graph), "--quiet", *[a.format(out=out) for a in args]]
    env = {**os.environ, "PYTHONPATH": str(Path(dumpcmp.__file__).parents[1])}
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=limited, timeout=300)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out / name) in lines[0] and "File too large" in lines[0], p.stderr
    assert os.listdir(out) in ([], [name]) and not any(files.is_temp_name(n) for n in os.listdir(out))
    if os.listdir(out):
        assert os.listdir(out / name) == []
