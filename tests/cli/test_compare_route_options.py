"""An option a compare route does not apply is refused (exit 2, one line), never ignored: a gate (--fail-below,
--fail-on, --json) on a statistics compare would otherwise pass in silence, and a CI job would read the
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


def test_the_gates_apply_to_a_sigmastar_compare(tmp_path, capsys, monkeypatch):
    """#39: a SigmaStar compare's rows are the regular rows (comparison/sigmastar.as_comparison): the gates apply."""
    monkeypatch.chdir(tmp_path)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    write_sigmastar_dump(tmp_path / "a.bin", [TensorSpec(name="t", data=x, op_type="Relu")], is_float=True)
    write_sigmastar_dump(tmp_path / "b.bin", [TensorSpec(name="t", data=x[:, ::-1], op_type="Relu")], is_float=True)
    left, right = str(tmp_path / "a.bin"), str(tmp_path / "b.bin")
    assert main(["compare", "-l", left, "-r", left, "--fail-below", "0.99"]) == 0
    assert main(["compare", "-l", left, "-r", right, "--fail-below", "0.99"]) == 1
    assert main(["compare", "-l", left, "-r", right, "--json", "verdict.json"]) == 0
    assert (tmp_path / "verdict.json").is_file()
