"""`dumpcmp compare ... --narrow acl.json`: the acl.json dumping full tensors only of the first error's op and its
upstream neighbours up to a byte budget. The graph's producers, the sizes and the written file are checked against
independent references: the graph JSON read as plain JSON, the tensor dump the narrowed acl.json makes simulate
write (its tensors' bytes are what the budget counts), and the file read back as JSON."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli.dispatch import main  # noqa: E402
from dumpcmp.comparison.stats import compare_stats  # noqa: E402
from dumpcmp.debug.narrow import narrow, parse_size  # noqa: E402
from dumpcmp.device.acljson import check_acl_json, new_acl_json, write_acl_json  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.errors import ConfigError  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402
from helpers.locate_nets import build_net, net_input, plant_fault  # noqa: E402

FAULTY = "b1a_w"  # the weights of b1a_conv: the fused op b1a_convb1a_bn is the first to go wrong


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    d = tmp_path_factory.mktemp("narrow")
    model = build_net(d / "net.onnx", attention=False)
    plant_fault(model, d / "faulty.onnx", FAULTY)
    np.save(d / "x.npy", net_input())
    (d / "s").mkdir()
    acl = write_acl_json(new_acl_json(["net"], dump_path=str(d / "s"), dump_mode="all", dump_data="stats"),
                         d / "stats.json")
    assert main(["simulate", str(d / "faulty.onnx"), "--model-name", "net", "-i", str(d / "x.npy"),
                 "--acl-json", str(acl), "--quiet"]) == 0
    assert main(["golden", str(model), "-i", str(d / "x.npy"), "-o", str(d / "gt"), "--quiet"]) == 0
    return d


def _json_producers(path):
    """op name -> producer op names, from the graph JSON read as plain JSON."""
    with open(path) as f:
        doc = json.load(f)
    out = {}
    for g in doc["graph"]:
        for op in g["op"]:
            out[op["name"]] = [i.rpartition(":")[0] for i in op.get("input", []) if i and not i.endswith(":-1")]
    return out


def _result(d):
    (r,) = compare_stats(d / "s", d / "gt", fusion_json=d / "s" / "model.json")
    return r


def test_big_budget_takes_every_dumped_ancestor_small_budget_only_the_first_error(loop):
    result = _result(loop)
    graph = load_graph(loop / "s" / "model.json")
    plan = narrow(result, graph, budget=1 << 40)
    assert plan.first_op == "b1a_convb1a_bn" and plan.layers[0] == "b1a_convb1a_bn"
    producers = _json_producers(loop / "s" / "model.json")
    ancestors, todo = set(), ["b1a_convb1a_bn"]
    while todo:
        for p in producers.get(todo.pop(), []):
            if p not in ancestors:
                ancestors.add(p)
                todo.append(p)
    dumped = set(result.records_by_op())
    assert set(plan.layers[1:]) == ancestors & dumped and not plan.left_out
    # nearest first: the direct producers come before anything further up
    direct = [p for p in producers["b1a_convb1a_bn"] if p in dumped]
    assert set(plan.layers[1:1 + len(direct)]) == set(direct)

    alone = narrow(result, graph, budget=1)
    assert alone.layers == ["b1a_convb1a_bn"] and alone.left_out
    assert any("more than the budget" in n for n in alone.notes)
    two = narrow(result, graph, budget=plan.bytes["b1a_convb1a_bn"] + plan.bytes[plan.layers[1]])
    assert two.layers == plan.layers[:2]


def test_without_a_graph_the_ops_just_before_in_execution_order(loop):
    result = _result(loop)
    order = list(result.records_by_op())
    plan = narrow(result, None, budget=1 << 40)
    at = order.index("b1a_convb1a_bn")
    assert plan.layers == ["b1a_convb1a_bn", *reversed(order[:at])]
    sizes = plan.bytes
    budget = sizes["b1a_convb1a_bn"] + sizes[order[at - 1]] + sizes[order[at - 2]]
    assert narrow(result, None, budget=budget).layers == ["b1a_convb1a_bn", order[at - 1], order[at - 2]]


def test_the_budget_counts_the_bytes_the_narrowed_dump_holds(loop, tmp_path):
    result = _result(loop)
    plan = narrow(result, load_graph(loop / "s" / "model.json"), budget=1 << 40)
    acl = tmp_path / "narrow.json"
    assert main(["compare", "-l", str(loop / "s"), "-r", str(loop / "gt"), "-f", str(loop / "s" / "model.json"),
                 "--narrow", str(acl), "--narrow-budget", str(1 << 40), "--narrow-dump-path", str(tmp_path),
                 "--quiet", "-o", str(tmp_path / "r.csv")]) == 0
    doc = json.loads(acl.read_text())
    assert [p for p in check_acl_json(acl) if p.severity == "error"] == []
    assert doc["dump"]["dump_list"] == [{"model_name": "net", "layer": plan.layers}]
    assert doc["dump"]["dump_mode"] == "all" and doc["dump"]["dump_data"] == "tensor"
    assert doc["dump"]["dump_path"] == str(tmp_path)
    sim = simulate(loop / "faulty.onnx", acl_json=acl, samples=[{"x": net_input()}], model_name="net")
    held = {}
    for f in sim.files:
        d = open_dump(f)
        held[d.op_name] = sum(t.size for t in d.inputs + d.outputs)
    assert held == plan.bytes


def test_cli_rules(loop, tmp_path, capsys):
    base = ["compare", "-l", str(loop / "s"), "-r", str(loop / "gt"), "-f", str(loop / "s" / "model.json"),
            "-o", str(tmp_path / "r.csv"), "--force"]
    acl = tmp_path / "n.json"
    acl.write_text("mine\n")
    assert main(base[:-1] + ["--narrow", str(acl)]) == 2  # an existing file is kept without --force
    assert acl.read_text() == "mine\n" and "exists" in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()  # refused before the run
    assert main(base + ["--narrow", str(acl)]) == 0
    assert json.loads(acl.read_text())["dump"]["dump_list"][0]["layer"][0] == "b1a_convb1a_bn"
    assert "narrowed to" in capsys.readouterr().out
    assert main(base + ["--narrow", str(tmp_path / "x.json"), "--narrow-budget", "lots"]) == 2
    assert "not a size" in capsys.readouterr().err
    assert main(base + ["--narrow", str(tmp_path / "missing" / "x.json")]) == 2
    assert main(base + ["--narrow", str(tmp_path)]) == 2
    # no error: nothing to narrow, nothing written
    clean = tmp_path / "clean"
    clean.mkdir()
    stats = write_acl_json(new_acl_json(["net"], dump_path=str(clean), dump_mode="all", dump_data="stats"),
                           tmp_path / "clean.json")
    simulate(loop / "net.onnx", acl_json=stats, samples=[{"x": net_input()}])
    capsys.readouterr()
    assert main(["compare", "-l", str(clean), "-r", str(loop / "gt"), "-f", str(clean / "model.json"),
                 "--narrow", str(tmp_path / "none.json"), "-o", str(tmp_path / "c.csv")]) == 0
    assert "nothing to narrow" in capsys.readouterr().err and not (tmp_path / "none.json").exists()
    # --narrow on a tensor compare is refused
    tensors = tmp_path / "t"
    simulate(loop / "net.onnx", tensors, samples=[{"x": net_input()}])
    assert main(["compare", "-l", str(tensors), "-r", str(loop / "gt"), "--narrow", str(tmp_path / "t.json")]) == 2
    assert "--narrow needs a statistics compare" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "t.json")


@pytest.mark.parametrize("text,value", [("1", 1), ("512", 512), ("2K", 2048), ("1.5M", 3 << 19), ("1G", 1 << 30),
                                        ("1GiB", 1 << 30), ("3mb", 3 << 20)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "0", "-1", "1X", "nan", "1e400G", "G"])
def test_parse_size_refuses(text):
    with pytest.raises(ConfigError):
        parse_size(text)
