"""A statistics dump has no tensors: custom algorithms (`-c DIR -alg Name`) and the gates are refused there (exit 2,
one line, nothing written), by `compare` and by `report`, never ignored."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.cli import main

from helpers.custom_metrics import SUMSQ, plugins
from helpers.statsfile import record_of, write_stats


@pytest.fixture
def dumps(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    a = np.arange(16, dtype=np.float32).reshape(2, 8)
    np.save(gt / "conv1.0.1700000000000000.npy", a)
    write_stats(tmp_path.joinpath("s", "20260101000000", "0", "net", "1", "0") / "statistic.csv",
                [record_of("conv1", "output", 0, a, timestamp=1700000000000000, op_type="Op")], columns="atb")
    plugins(tmp_path / "c", {"alg_SumSq.py": SUMSQ})
    return tmp_path


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize(("flags", "words"), [
    (["-c", "{c}", "-alg", "0,SumSq"], "custom algorithms (-c DIR -alg Name) read tensors"),
    (["--fail-below", "0.9"], "--fail-below is not available"),
    (["--fail-above", "RootMeanSquareError=1"], "--fail-above is not available"),
    (["--fail-on", "any"], "--fail-on is not available"),
    (["--json", "{out}.json"], "--json is not available"),
])
def test_refused_on_a_statistics_dump(dumps, capsys, command, flags, words):
    out = dumps / ("r.html" if command == "report" else "r.csv")
    flags = [f.replace("{c}", str(dumps / "c")).replace("{out}", str(dumps / "x")) for f in flags]
    assert main([command, "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(out), "--quiet", *flags]) == 2
    assert words in capsys.readouterr().err
    assert not out.exists() and not (dumps / "x.json").exists()
    # without them, the same command writes its file
    assert main([command, "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(out), "--quiet"]) == 0
