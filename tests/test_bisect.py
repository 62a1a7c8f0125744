"""`dumpcmp bisect` with `dumpcmp simulate` as the device: a planted fault (one op's weights perturbed in the device's
copy of the model) found in ⌈log2 n⌉ + 1 runs each dumping one layer, a healthy network ended after one run, the
rounds logged, an interrupted bisect resumed from its log, a failing command's exit code and output passed on."""

from __future__ import annotations

import json
import math
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import numpy_helper  # noqa: E402

from dumpcmp.bisect import bisect  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.demo import build_model  # noqa: E402
from dumpcmp.golden import dump_golden  # noqa: E402

SIMULATE = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 -i input={{x}} " \
           "--acl-json {acl_json} -o {dump}"


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    base = tmp_path_factory.mktemp("bisect")
    model = build_model(base / "demo_net.onnx")
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(base / "x.npy", x)
    dump_golden(model, {"input": x}, base / "gt")
    m = onnx.load(str(model))  # the device's copy: conv3's weights replaced
    for t in m.graph.initializer:
        if t.name == "conv3_w":
            w = np.random.default_rng(9).standard_normal(numpy_helper.to_array(t).shape).astype(np.float32)
            t.CopyFrom(numpy_helper.from_array(w * 0.2, t.name))
    (base / "device").mkdir()
    onnx.save(m, base / "device" / "demo_net.onnx")
    command = SIMULATE.replace("{x}", shlex.quote(str(base / "x.npy")))
    return {"base": base, "model": model, "faulty": base / "device" / "demo_net.onnx", "gt": base / "gt",
            "command": command}


def test_planted_fault_found_in_log2_rounds(net, tmp_path, capsys):
    out = tmp_path / "b"
    code = main(["bisect", str(net["model"]), "--run", net["command"], "-r", str(net["gt"]), "-o", str(out),
                 "--device-model", str(net["faulty"])])
    assert code == 0
    printed = capsys.readouterr().out
    state = [json.loads(line) for line in (out / "bisect.jsonl").read_text().splitlines()]
    candidates, rounds = state[0]["candidates"], state[1:]
    assert candidates == ["conv1bn1relu1", "pool1", "conv2bn2relu2", "conv3bn3", "add1", "relu3", "gap", "flatten",
                          "fc", "prob"]
    assert "first layer below the threshold 0.99: conv3bn3 (conv3, bn3)" in printed
    assert "the layer before it, conv2bn2relu2, is above" in printed
    assert len(rounds) <= math.ceil(math.log2(len(candidates))) + 1
    for r in rounds:  # every round dumped one layer, and only it
        assert len(r["layers"]) == 1
        acl = json.loads((Path(r["folder"]) / "acl.json").read_text())["dump"]
        assert acl["dump_list"][0]["layer"] == r["layers"]
        dumped = [p.name.split(".")[1] for p in Path(r["folder"], "dump").rglob("*.*.*.*") if p.is_file()]
        assert dumped == r["layers"]
        assert f"round {r['number']}: dumped 1 layer: {r['layers'][0]}" in printed
    log = (out / "bisect.log").read_text()
    assert log.count(" round ") == len(rounds) and "first layer below" in log


def test_healthy_network_ends_with_no_layer_below(net, tmp_path):
    lines: list[str] = []
    r = bisect(net["model"], net["command"], net["gt"], tmp_path / "ok", echo=lines.append)
    assert r.layer is None and r.runs == 1
    assert lines[-1].startswith("no layer below the threshold 0.99: the last layer prob has cosine")


def test_interrupted_bisect_resumes_and_failing_command_passes_its_code(net, tmp_path, capsys):
    out = tmp_path / "b"
    flag = tmp_path / "go"
    failing = f"if [ {{round}} -ge 3 ] && [ ! -e {shlex.quote(str(flag))} ]; then echo device lost >&2; exit 7; fi; " \
              + net["command"]
    args = ["bisect", str(net["model"]), "--run", failing, "-r", str(net["gt"]), "-o", str(out), "--device-model",
            str(net["faulty"])]
    assert main(args) == 7
    captured = capsys.readouterr()
    assert "the device run failed with exit code 7" in captured.err and "device lost" in captured.err
    assert len((out / "bisect.jsonl").read_text().splitlines()) == 1 + 2  # header and two rounds
    flag.write_text("")
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "resuming after round 2" in printed and "round 1:" not in printed
    assert "first layer below the threshold 0.99: conv3bn3" in printed
    rounds = (out / "bisect.jsonl").read_text().splitlines()[1:]
    assert [json.loads(r)["number"] for r in rounds] == list(range(1, len(rounds) + 1))


def test_several_layers_a_round_and_bad_options(net, tmp_path):
    r = bisect(net["model"], net["command"], net["gt"], tmp_path / "k", device_model=net["faulty"], per_round=3,
               echo=lambda s: None)
    assert r.layer == "conv3bn3" and r.runs <= 3
    assert all(len(x.layers) <= 3 for x in r.rounds)
    from dumpcmp.errors import ConfigError

    with pytest.raises(ConfigError, match="must use {acl_json}"):
        bisect(net["model"], "true", net["gt"], tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("")
    with pytest.raises(ConfigError, match="holds no bisect to resume"):
        bisect(net["model"], net["command"], net["gt"], tmp_path / "full")
