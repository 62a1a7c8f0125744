"""#39's writers under SIGINT/SIGTERM in real processes (helpers/signal_sweep.py): `simulate --target sigmastar`
publishes its folder whole (float/, fixed/, tensor_min_max.txt) or not at all, and `debug-config new` its file whole
or not at all; no temporaries left, one line, exit 128 + signal."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from helpers.signal_sweep import interrupt, temporaries, timed_run  # noqa: E402
from helpers.sigmastar_net import build_net  # noqa: E402



def test_simulate_sigmastar_whole_or_nothing(tmp_path):
    model = build_net(tmp_path / "net.onnx")
    np.save(tmp_path / "x.npy", np.ones((1, 3, 6, 6), np.float32))
    args = ["simulate", "--target", "sigmastar", str(model), "-i", str(tmp_path / "x.npy"), "--quiet"]
    total = timed_run(args + ["-o", str(tmp_path / "warm")])
    outcomes: dict[str, int] = {}
    for k in range(14):
        sig = (signal.SIGINT, signal.SIGTERM)[k % 2]
        out = tmp_path / f"o{k}"
        kind, where = interrupt(args + ["-o", str(out)], sig, total * (0.3 + 0.75 * k / 13))
        outcomes[kind] = outcomes.get(kind, 0) + 1
        if out.exists():
            assert sorted(os.listdir(out)) == ["fixed", "float", "tensor_min_max.txt"], where
            assert os.listdir(out / "fixed") == ["sigma_outtensor_dump.bin"], where
        assert not temporaries(tmp_path), where
    assert sum(outcomes.values()) == 14, outcomes


def test_debug_config_new_whole_or_nothing(tmp_path):
    args = ["debug-config", "new", "--path", "/data/dump"]
    total = timed_run(args + ["-o", str(tmp_path / "warm.txt")])
    expected = (tmp_path / "warm.txt").read_text()
    for k in range(8):
        out = tmp_path / f"c{k}.txt"
        _, where = interrupt(args + ["-o", str(out)], (signal.SIGINT, signal.SIGTERM)[k % 2],
                             total * (0.4 + 0.7 * k / 7))
        assert not out.exists() or out.read_text() == expected, where
        assert not temporaries(tmp_path), where
