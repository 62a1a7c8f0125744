"""One result file per run keeps the user's name with a short run suffix (issue #34: `-o fp16.csv` on two runs wrote
`fp16_time_..___device_0___model_...csv`)."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.dumps.naming import run_path, run_suffix

RUNS = ["time 20261126225916 / device 0 / model net / model_id 1 / iteration 0",
        "time 20261126225916 / device 0 / model net / model_id 1 / iteration 1"]


def test_suffix_holds_only_what_tells_the_runs_apart():
    assert [run_suffix(r, RUNS) for r in RUNS] == ["it0", "it1"]
    assert run_path("out/fp16.csv", RUNS[1], RUNS).as_posix() == "out/fp16_it1.csv"
    times = [RUNS[0], RUNS[0].replace("20261126225916", "20261126230001")]
    assert [run_suffix(r, times) for r in times] == ["t20261126225916", "t20261126230001"]
    mixed = [RUNS[0], RUNS[1].replace("device 0", "device 3")]
    assert [run_suffix(r, mixed) for r in mixed] == ["dev0_it0", "dev3_it1"]
    models = [RUNS[0], RUNS[0].replace("model net", "model det/v2")]
    assert [run_suffix(r, models) for r in models] == ["net", "det_v2"]
    # alone, every field (short); a run that is not fields (a flat folder) kept whole, made safe
    assert run_suffix(RUNS[0]) == "t20261126225916_dev0_net_id1_it0"
    assert run_suffix("folder a/b c") == "folder_a_b_c"
    # two names that become one file name stay two files
    clash = [RUNS[0].replace("model net", "model a/b"), RUNS[0].replace("model net", "model a_b")]
    assert [run_suffix(r, clash) for r in clash] == ["a_b_1", "a_b_2"]


def test_compare_on_two_iterations_writes_the_users_name_with_a_short_suffix(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    from dumpcmp.cli import main
    from dumpcmp.cli.demo import build_model

    model = build_model(tmp_path / "net.onnx")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    rng = np.random.default_rng(0)
    for k in range(2):
        np.save(inputs / f"{k}.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    assert main(["golden", str(model), "-i", str(inputs), "-o", str(tmp_path / "gt"), "--quiet"]) == 0
    assert main(["simulate", str(model), "--precision", "fp16", "-i", str(inputs), "-o", str(tmp_path / "dump"),
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["compare", "-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "-f",
                 str(tmp_path / "dump" / "model.json"), "-o", str(tmp_path / "fp16.csv"),
                 "--html", str(tmp_path / "fp16.html")]) == 0
    out = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("fp16*")) == ["fp16_it0.csv", "fp16_it0.html", "fp16_it1.csv",
                                                                "fp16_it1.html"]
    # the summary maps each run to its file: the run's line, then its result
    lines = out.splitlines()
    for k in range(2):
        at = next(i for i, line in enumerate(lines) if line.startswith("  result: ") and f"fp16_it{k}.csv" in line)
        run_line = next(line for line in reversed(lines[:at]) if line.startswith("time "))
        assert f"iteration {k}" in run_line
    assert main(["locate", str(model), "-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "-f",
                 str(tmp_path / "dump" / "model.json"), "-o", str(tmp_path / "loc"), "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "loc").iterdir()) == ["locate_it0.csv", "locate_it1.csv"]
