"""Chains of compiler-inserted Cast/TransData ops (issue #33: `extract --list` was quadratic on them): the walk back
past them is remembered along the chain, and what each tensor pairs with is what a walk from that op alone gives.

The reference is the pairing of one device op at a time against a graph parsed afresh (nothing remembered from
other walks), over random small graphs with loops, duplicate names, two-input TransData and missing producers."""

from __future__ import annotations

import random

import pytest

from helpers import graphjson as gj

from dumpcmp.graph.device_ops import device_ops, dumped_device_op
from dumpcmp.graph.graph_json import parse_graph
from dumpcmp.graph.pairing import pair_with_ground_truth


def chain_document(casts: int) -> dict:
    ops = [gj.op("x", "Data", 0), gj.op("conv", "Conv2D", 1, inputs=["x:0"], originals=["conv"])]
    prev = "conv"
    for c in range(casts):
        ops.append(gj.op(f"cast_{c}", "Cast", len(ops), inputs=[f"{prev}:0"], originals=[]))
        prev = f"cast_{c}"
    ops.append(gj.op("relu", "Relu", len(ops), inputs=[f"{prev}:0"], originals=["relu"]))
    return gj.document(*ops)


def test_every_cast_of_a_long_chain_holds_the_tensor_before_the_chain():
    graph = parse_graph(chain_document(3000))
    gt = {"conv.0": "conv0", "relu.0": "relu0"}
    rows = pair_with_ground_truth(device_ops(graph), gt, graph)
    casts = [r for r in rows if r.npu_op.startswith("cast_")]
    assert len(casts) == 3000
    assert {(r.ground_truth_key, r.ground_truth_ref) for r in casts} == {("conv.0", "conv0")}
    relu_in = pair_with_ground_truth([dumped_device_op(graph["relu"])], gt, graph)[0]
    assert (relu_in.kind, relu_in.ground_truth_key) == ("input", "conv.0")


def random_document(rng: random.Random) -> dict:
    n = rng.randint(3, 14)
    names = [f"op{i}" for i in range(n)]
    for i in range(n):  # some names used twice
        if rng.random() < 0.15:
            names[i] = rng.choice(names)
    ops = [gj.op("x", "Data", 0)]
    for i, name in enumerate(names):
        kind = rng.choice(["Cast", "Cast", "TransData", "Relu", "Conv2D"])
        n_in = 2 if kind == "TransData" and rng.random() < 0.3 else 1
        inputs = []
        for _ in range(n_in):
            source = rng.choice(["x"] + names + ["missing"])  # later ops too: loops
            inputs.append(f"{source}:{rng.randint(0, 1)}")
        if kind in ("Cast", "TransData"):
            originals = rng.choice([[], [], ["orig_" + name], gj.ABSENT])
        else:
            originals = rng.choice([[name], ["orig_" + name], ["a", name], gj.ABSENT])
        outputs = [gj.desc(origin_name=rng.choice([None, None, "o" + name]))
                   for _ in range(rng.randint(1, 2))]
        ops.append(gj.op(name, kind, i + 1, inputs=inputs, originals=originals, outputs=outputs))
    return gj.document(*ops)


@pytest.mark.parametrize("seed", range(40))
def test_pairing_a_whole_graph_matches_pairing_each_op_alone(seed):
    rng = random.Random(seed)
    for _ in range(10):
        document = random_document(rng)
        graph = parse_graph(document)
        gt = {f"{name}.{i}": name for op in document["graph"][0]["op"]
              for name in (op["name"], "orig_" + op["name"], "o" + op["name"]) for i in range(2)}
        # one device op per name (as a dump tree holds them); ops of the same name stay in the graph as producers
        names = dict.fromkeys(op.name for op in graph.ops if op.type != "Data")
        ops = [dumped_device_op(graph[name]) for name in names]
        together = [r for r in pair_with_ground_truth(ops, gt, graph) if r.npu_op is not None]
        alone = []
        for dev in ops:
            fresh = parse_graph(document)
            alone += [r for r in pair_with_ground_truth([dev], gt, fresh) if r.npu_op is not None]
        key = lambda r: (r.npu_op, r.kind, r.index)  # noqa: E731
        assert sorted(together, key=key) == sorted(alone, key=key)
