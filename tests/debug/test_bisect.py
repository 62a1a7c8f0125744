"""`dumpcmp bisect` with `dumpcmp simulate` as the device: a planted fault (one op's weights perturbed in the device's
copy of the model) found in ⌈log2 n⌉ + 1 runs each dumping one layer through an interruption (a failing command's
exit code and output passed on, the bisect resumed from its log), a healthy network ended after one run."""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.debug.bisect import bisect  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402

SIMULATE = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 -i x={{x}} " \
           "--acl-json {acl_json} -o {dump}"


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    from helpers.locate_nets import build_net, net_input, plant_fault

    base = tmp_path_factory.mktemp("bisect")
    model = build_net(base / "net.onnx", attention=False)
    m = onnx.load(str(model))  # ending at the logits: a final softmax can hide the error (saturated class)
    assert m.graph.node[-1].op_type == "Softmax"
    del m.graph.node[-1]
    m.graph.output[0].name = "logits"
    onnx.save(m, model)
    x = net_input()
    np.save(base / "x.npy", x)
    dump_golden(model, {"x": x}, base / "gt")
    (base / "device").mkdir()
    faulty = plant_fault(model, base / "device" / "net.onnx", "b1a_w", noise=3.0)  # the device's copy
    command = SIMULATE.replace("{x}", shlex.quote(str(base / "x.npy")))
    return {"base": base, "model": model, "faulty": faulty, "gt": base / "gt", "command": command}


def test_planted_fault_found_in_log2_rounds_through_an_interruption(net, tmp_path, capsys):
    # the device fails at round 3 (exit 7): the bisect stops with that code and output; run again, it resumes
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
    first = captured.out
    flag.write_text("")
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "resuming after round 2" in printed and "round 1:" not in printed

    state = [json.loads(line) for line in (out / "bisect.jsonl").read_text().splitlines()]
    candidates, rounds = state[0]["candidates"], state[1:]
    assert [r["number"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert candidates == ["stem_convstem_bnstem_relu", "b0a_convb0a_bn", "b0_sig", "b0_silu", "b0b_convb0b_bnb0b_relu",
                          "b0_add", "b1a_convb1a_bn", "b1_sig", "b1_silu", "b1b_convb1b_bnb1b_relu", "b1_add", "gap",
                          "flatten", "fc"]
    assert "first layer below the threshold 0.99: b1a_convb1a_bn (b1a_conv, b1a_bn)" in printed
    assert "the layer before it, b0_add, is above" in printed
    assert "locate on b0_add, b1a_convb1a_bn replayed on their own device inputs (one more run, dump_mode all): " \
           "the error starts at b1a_convb1a_bn" in printed
    assert len(rounds) <= math.ceil(math.log2(len(candidates))) + 1
    for r in rounds:  # every round dumped one layer, and only it
        assert len(r["layers"]) == 1
        acl = json.loads((Path(r["folder"]) / "acl.json").read_text())["dump"]
        assert acl["dump_list"][0]["layer"] == r["layers"]
        dumped = [p.name.split(".")[1] for p in Path(r["folder"], "dump").rglob("*.*.*.*") if p.is_file()]
        assert dumped == r["layers"]
        assert f"round {r['number']}: dumped 1 layer: {r['layers'][0]}" in first + printed
    log = (out / "bisect.log").read_text()
    assert len(re.findall(r"  round \d+: dumped", log)) == len(rounds)
    assert "first layer below" in log and "resuming after round 2" in log


def test_healthy_network_ends_with_no_layer_below(net, tmp_path):
    lines: list[str] = []
    r = bisect(net["model"], net["command"], net["gt"], tmp_path / "ok", echo=lines.append)
    assert r.layer is None and r.runs == 1
    assert lines[-1].startswith("no layer below the threshold 0.99: the last layer fc has cosine")


def test_several_layers_a_round_and_bad_options(net, tmp_path):
    r = bisect(net["model"], net["command"], net["gt"], tmp_path / "k", device_model=net["faulty"], per_round=3,
               echo=lambda s: None, with_locate=False)
    assert r.layer == "b1a_convb1a_bn" and r.runs <= 3
    assert all(len(x.layers) <= 3 for x in r.rounds)
    # --last: the search ends at b0_add, where the fault has not arrived yet
    r = bisect(net["model"], net["command"], net["gt"], tmp_path / "last", device_model=net["faulty"],
               last="b0_add", echo=lambda s: None, with_locate=False)
    assert r.layer is None and r.candidates[-1] == "b0_add"
    from dumpcmp.errors import ConfigError

    with pytest.raises(ConfigError, match="must use {acl_json}"):
        bisect(net["model"], "true", net["gt"], tmp_path / "x")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("")
    with pytest.raises(ConfigError, match="holds no bisect to resume"):
        bisect(net["model"], net["command"], net["gt"], tmp_path / "full")


def test_a_device_run_past_its_timeout_stops_with_124(net, tmp_path):
    from dumpcmp.debug.bisect import RunFailed

    with pytest.raises(RunFailed) as failed:
        bisect(net["model"], "echo started; sleep 5 # {acl_json}", net["gt"], tmp_path / "t", timeout=0.5,
               echo=lambda s: None)
    assert failed.value.returncode == 124 and "started" in failed.value.output
    assert "killed after 0.5 s" in (tmp_path / "t" / "round_01" / "run.log").read_text()


def test_locate_replays_the_int8_unit_around_the_layer(tmp_path):
    from dumpcmp.debug.bisect import BisectJob
    from dumpcmp.cli.demo import build_model
    from dumpcmp.device.simulate import simulate

    model = build_model(tmp_path / "demo_net.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sim = simulate(model, tmp_path / "d", precision="int8", samples=[{"input": x}], layers=["prob"])
    job = object.__new__(BisectJob)
    job.last_graph = sim.json_path
    # fc reads the int8 tensor of a quantize op: the unit is fed flatten's float output
    assert job.around("fc", "flat_out_DequantizeLinear") == ["flatten", "flat_out_QuantizeLinear",
                                                            "flat_out_DequantizeLinear", "fc"]
    assert job.around("relu3", "add1") == ["add1", "relu3"]
