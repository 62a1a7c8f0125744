"""The statistics-first loop end to end, through the command line, on a network with a planted fault (a generated one
and a real one): simulate with a `dump_data: stats` acl.json -> compare (statistics) names the faulty layer as the
first error -> --narrow acl.json -> simulate with it (tensors of the region only) -> the tensor compare names the
same layer as the first below the cosine threshold."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli.dispatch import main  # noqa: E402
from dumpcmp.device.acljson import new_acl_json, write_acl_json  # noqa: E402
from dumpcmp.dumps.naming import parse_device_dump_name  # noqa: E402
from dumpcmp.dumps.scan import scan  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402
from helpers.locate_nets import build_net, net_input, plant_fault  # noqa: E402


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def _loop(d, model, faulty, x_path, model_name, gt_extra=(), budget="64M"):
    """The loop's commands; returns (statistics rows, narrowed layers, tensor result rows, stdout of each)."""
    dump = d / "dump"
    dump.mkdir()
    acl = write_acl_json(new_acl_json([model_name], dump_path=str(dump), dump_mode="all", dump_data="stats"),
                         d / "stats.json")
    sim = ["--model-name", model_name, "-i", str(x_path), "--quiet"]
    assert main(["simulate", str(faulty), "--acl-json", str(acl), *sim]) == 0
    index = scan(dump)
    assert index.stats and index.dump_count == 0  # statistics only
    assert main(["golden", str(model), "-i", str(x_path), "-o", str(d / "gt"), "--quiet", *gt_extra]) == 0
    graph = str(dump / "model.json")
    assert main(["compare", "-l", str(dump), "-r", str(d / "gt"), "-f", graph, "-o", str(d / "stats.csv"),
                 "--narrow", str(d / "narrow.json"), "--narrow-budget", budget]) == 0
    import json

    layers = json.loads((d / "narrow.json").read_text())["dump"]["dump_list"][0]["layer"]
    assert main(["simulate", str(faulty), "--acl-json", str(d / "narrow.json"), *sim]) == 0
    index = scan(dump)
    dumped = {parse_device_dump_name(f).op_name for root, _, files in os.walk(dump) for f in files
              if f not in ("statistic.csv", "model.json")}
    assert len(index.groups) == 1 and dumped and dumped <= set(layers)  # tensors of the region only
    assert main(["compare", "-l", str(dump), "-r", str(d / "gt"), "-f", graph, "-o", str(d / "tensors.csv")]) == 0
    return _rows(d / "stats.csv"), layers, _rows(d / "tensors.csv")


def _first_error(stats_rows):
    head = stats_rows[0]
    return next(r for r in stats_rows[1:] if r[head.index("Verdict")] == "error")


def _first_below(tensor_rows, threshold=0.99):
    head = tensor_rows[0]
    cos = head.index("CosineSimilarity")
    for r in tensor_rows[1:]:
        try:
            if float(r[cos]) < threshold:
                return r
        except ValueError:
            continue
    return None


def test_loop_on_a_generated_network(tmp_path, capsys):
    model = build_net(tmp_path / "net.onnx")
    faulty = plant_fault(model, tmp_path / "faulty.onnx", "b1a_w")
    np.save(tmp_path / "x.npy", net_input())
    stats, layers, tensors = _loop(tmp_path, model, faulty, tmp_path / "x.npy", "net", ("--stats",))
    out = capsys.readouterr().out
    assert "ground truth statistics read from" in out and "narrowed to" in out
    head = stats[0]
    first = _first_error(stats)
    assert first[head.index("NPUDump")] == "b1a_convb1a_bn"
    assert first[head.index("GroundTruth")] == "b1a_bn"  # the fusion b1a_conv+b1a_bn, compared at its last original
    # everything before it in execution order passes
    assert all(r[head.index("Verdict")] in ("pass", "*") for r in stats[1:stats.index(first)])
    assert layers[0] == "b1a_convb1a_bn" and len(layers) > 1
    below = _first_below(tensors)
    assert below is not None and below[tensors[0].index("NPUDump")] == "b1a_convb1a_bn"


def _faulty_conv(model_path, nth):
    """The nth Conv node of a model whose weight is an initializer or a Constant node's value."""
    m = onnx.load(str(model_path))
    inits = {t.name for t in m.graph.initializer} | {o for n in m.graph.node if n.op_type == "Constant"
                                                      for o in n.output}
    convs = [n for n in m.graph.node if n.op_type == "Conv" and n.input[1] in inits]
    return convs[nth]


def test_loop_on_a_real_network(tmp_path):
    from dumpcmp.onnx.model import name_nodes
    from helpers.realnets import realnet_or_skip

    path = realnet_or_skip("ocr_cls")
    m = onnx.load(str(path))
    name_nodes(m)
    onnx.save(m, str(tmp_path / "net.onnx"))  # the node names dumpcmp gives, so the fault can be named
    model = tmp_path / "net.onnx"
    conv = _faulty_conv(model, 6)
    faulty = plant_fault(model, tmp_path / "faulty.onnx", conv.input[1], noise=1.0)
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((1, 3, 48, 96)).astype(np.float32))
    stats, layers, tensors = _loop(tmp_path, model, faulty, tmp_path / "x.npy", "net")
    head = stats[0]
    first = _first_error(stats)
    op = first[head.index("NPUDump")]
    assert conv.name in load_graph(tmp_path / "dump" / "model.json").original_names(op), first
    assert layers[0] == op
    below = _first_below(tensors)
    assert below is not None and below[tensors[0].index("NPUDump")] == op
