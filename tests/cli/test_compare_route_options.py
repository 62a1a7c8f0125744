"""An option a compare route does not apply is refused (exit 2, one line), never ignored: a gate (--fail-below,
--fail-on, --json) on a statistics or SigmaStar compare would otherwise pass in silence, and a CI job would read the
exit code 0 as a passed gate."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.dumps.sigmastar import TensorSpec, write_sigmastar_dump
from helpers.statsfile import record_of, write_stats

RUN = ("20260101000000", "0", "net", "1", "0")
TS = 1700000000000000
GATES = [["--fail-below", "0.99"], ["--fail-on", "any"], ["--json", "verdict.json"]]


@pytest.fixture
def stats_tree(tmp_path):
    gt = tmp_path / "gt"
    gt.mkdir()
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    np.save(gt / f"a.0.{TS}.npy", x)
    write_stats(tmp_path.joinpath("s", *RUN) / "statistic.csv", [record_of("a", "output", 0, x * 4, timestamp=TS)])
    return tmp_path


@pytest.mark.parametrize("gate", GATES)
def test_a_gate_on_a_statistics_compare_is_refused(stats_tree, capsys, gate, monkeypatch):
    monkeypatch.chdir(stats_tree)
    code = main(["compare", "-l", str(stats_tree / "s"), "-r", str(stats_tree / "gt"), *gate])
    err = capsys.readouterr().err
    assert code == 2 and f"{gate[0]} is not available for a statistics compare" in err
    assert not (stats_tree / "verdict.json").exists()
    assert main(["compare", "-l", str(stats_tree / "s"), "-r", str(stats_tree / "gt")]) == 0  # without it: runs


@pytest.mark.parametrize("gate", GATES)
def test_a_gate_on_a_sigmastar_compare_is_refused(tmp_path, capsys, gate, monkeypatch):
    monkeypatch.chdir(tmp_path)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    for name in ("a.bin", "b.bin"):
        write_sigmastar_dump(tmp_path / name, [TensorSpec(name="t", data=x, op_type="Relu")], is_float=True)
    code = main(["compare", "-l", str(tmp_path / "a.bin"), "-r", str(tmp_path / "b.bin"), *gate])
    assert code == 2 and f"{gate[0]} is not available when -l is a SigmaStar dump" in capsys.readouterr().err
    assert not (tmp_path / "verdict.json").exists()
