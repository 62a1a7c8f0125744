"""dumpcmp locate on a PyTorch audio front end (openWakeWord's mel spectrogram, tests/helpers/realnets.py
"melspec": STFT as two Conv1d, power, mel MatMul, Clip(min=1e-10) -> Log). In float16 the Clip's 1e-10 is 0, so
on a stretch of silence the device's Log holds -inf (a later Clip hides it in the output). Simulated as the device
in fp16 with the default output-only dump, locate must replay every op and name the Clip as the origin."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

from dumpcmp.cli import main  # noqa: E402


def test_locate_names_the_clip_whose_epsilon_float16_flushes_to_zero(tmp_path: Path) -> None:
    import onnx

    model = realnets.realnet_or_skip("melspec")
    nodes = {n.name: n for n in onnx.load(model).graph.node}
    assert nodes["Clip_16"].op_type == "Clip" and nodes["Log_17"].input[0] == nodes["Clip_16"].output[0]
    t = np.arange(1760) / 16000
    x = (0.1 * np.sin(2 * np.pi * 440 * t) + 0.01 * np.random.default_rng(0).standard_normal(1760)).astype(np.float32)
    x[:700] = 0  # silence: whole STFT frames of zeros
    np.save(tmp_path / "a.npy", x[None])
    gt, dump = tmp_path / "gt", tmp_path / "dump"
    assert main(["golden", str(model), "-i", f"input={tmp_path / 'a.npy'}", "-o", str(gt)]) == 0
    assert main(["simulate", str(model), "--precision", "fp16", "-i", f"input={tmp_path / 'a.npy'}",
                 "-o", str(dump)]) == 0
    assert not any(".input." in p.name for p in dump.rglob("*"))  # the default: outputs only
    assert main(["locate", str(model), "-l", str(dump), "-r", str(gt), "-f", str(dump / "model.json"),
                 "-o", str(tmp_path / "loc"), "--json", str(tmp_path / "loc.json")]) == 0
    data = json.loads((tmp_path / "loc.json").read_text())[0]
    rows = {r["op"]: r for r in data["rows"]}
    assert data["counts"]["not replayed"] == 0
    assert data["origin"] == "Clip_16", data["statement"]
    assert [r["op"] for r in data["rows"] if r["verdict"] in ("origin", "adds")] == ["Clip_16"]
    assert "round to 0 in float16" in data["statement"] and "Log_17 (Log) downstream turns it into" in data["statement"]
    # by NumPy: the ground truth's Clip output holds 1e-10 where the silent frames are; the device's Log is -inf there
    truth = np.load(next(gt.glob("Clip_16.0.*.npy")))
    flushed = int((truth == np.float32(1e-10)).sum())
    assert flushed > 0 and f"{flushed} of {truth.size} values" in data["statement"]
    assert rows["Log_17"]["verdict"] == "inherited"
