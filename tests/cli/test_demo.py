"""The demo end to end: the README's first command must work and find the layer it was built to break."""

from __future__ import annotations

import csv

import pytest

pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.cli.demo import run_demo  # noqa: E402


def test_demo_finds_the_quantization_victim(tmp_path, capsys):
    result = run_demo(tmp_path / "demo", quiet=True)
    assert result.worst == "fc:output:0"
    with open(result.result_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    by_tensor = {r["TensorIndex"]: r for r in rows}
    assert float(by_tensor["fc:output:0"]["CosineSimilarity"]) < 0.99
    assert float(by_tensor["conv1bn1relu1:output:0"]["CosineSimilarity"]) > 0.999
    # the column names every original op the fused op stands for, as the original tool's does
    assert by_tensor["conv1bn1relu1:output:0"]["GroundTruth"] == "conv1,bn1,relu1"
    assert (result.detail_dir / "fc_output_0_summary.txt").read_text().startswith("TotalCount:10\n")
    assert result.seconds < 60
    # the unmatched rows are the original tool's rows for what is never dumped (input, weights, output node) and
    # the weight inputs of the quantized layers: counted apart, none of them a missing layer
    from dumpcmp.comparison.compare import compare

    res = compare(result.dumps, result.ground_truth, fusion_json=result.graph_json)
    assert sum(res.never_dumped().values()) == res.counts()["unmatched"] > 0
    assert res.never_dumped()["layer inputs read from a Const"] == 8 and "; 0 other" in res.summary()


def test_demo_cli_never_overwrites(tmp_path, capsys):
    out = tmp_path / "demo"
    assert main(["demo", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "first below cosine 0.99" in text and "dumpcmp compare -l" in text
    assert main(["demo", "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    (out / "mine.txt").write_text("user data")
    assert main(["demo", "-o", str(out), "--force"]) == 2
    assert (out / "mine.txt").read_text() == "user data"
    (out / "mine.txt").unlink()
    assert main(["demo", "-o", str(out), "--force", "--precision", "fp16"]) == 0
    # a folder of the user's that happens to hold names the demo uses is never cleared
    mine = tmp_path / "project"
    (mine / "dump").mkdir(parents=True)
    (mine / "dump" / "precious.bin").write_bytes(b"x")
    assert main(["demo", "-o", str(mine), "--force"]) == 2
    assert (mine / "dump" / "precious.bin").read_bytes() == b"x"
