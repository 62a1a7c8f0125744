"""Random pairing cases for differential tests of `pair_with_ground_truth` (issue #35): a graph JSON document with
fused ops, inserted Cast/TransData ops (and chains of them), quant/dequant pairs, L1 fusion groups, explicit origins,
names the runtime sanitises, duplicate names across graphs, absent and control inputs; a device op list with ops
the graph lacks, duplicate dumps and counts that differ from the graph's; ground truth with missing, extra and
sanitised keys. `case(seed)` gives (document, quant document or None, device ops, ground truth); `digest(pairs)`
hashes every field of every row."""

from __future__ import annotations

import hashlib
import random
from typing import Any

from helpers import graphjson as gj

_TYPES = ["Conv2D", "Relu", "Add", "Cast", "TransData", "AscendQuant", "AscendDequant", "Const", "MatMul"]
_NAME_PARTS = ["conv", "a/b", "x.y", "re lu", "bn", "fc", "pool", "c_quant_layer", "d_dequant_layer", "w.weight_quant"]


def _name(rng: random.Random, k: int) -> str:
    if rng.random() < 0.1:
        return f"trans_Cast_{k}"
    return f"{rng.choice(_NAME_PARTS)}{k}" if rng.random() < 0.9 else rng.choice(_NAME_PARTS) + "1"


def case(seed: int) -> tuple[dict[str, Any], dict[str, Any] | None, list[tuple[Any, ...]], dict[str, str]]:
    """(graph document, quant fusion document or None, device ops as DeviceOp arguments, ground truth)."""
    rng = random.Random(seed)
    n_ops = rng.randint(1, 14)
    graphs: list[list[dict[str, Any]]] = [[] for _ in range(rng.choice([1, 1, 1, 2]))]
    made: list[tuple[str, int]] = []  # (name, outputs)
    originals_pool = [f"orig{n}" for n in range(8)] + ["o/x", "o.y", "c_quant_layer9"]
    for k in range(n_ops):
        name = _name(rng, k)
        op_type = rng.choice(_TYPES)
        n_out = rng.choice([0, 1, 1, 1, 2])
        outputs = []
        for j in range(n_out):
            explicit = rng.random() < 0.35
            outputs.append(gj.desc(
                dtype=rng.choice(["DT_FLOAT16", "DT_INT8", "DT_FLOAT"]),
                origin_name=rng.choice(originals_pool) if explicit else None,
                origin_index=rng.choice([None, 0, 1]) if explicit else None,
                origin_shape=rng.choice([None, (1, 16, 4, 4), (2, 3)]),
            ))
        inputs = []
        for _ in range(rng.choice([0, 1, 1, 2, 3])):
            r = rng.random()
            if made and r < 0.75:
                producer, outs = rng.choice(made)
                inputs.append(f"{producer}:{rng.randint(0, max(outs, 1))}")
            elif r < 0.85:
                inputs.append("")
            elif r < 0.93 and made:
                inputs.append(f"^{rng.choice(made)[0]}")
            else:
                inputs.append(f"missing{k}:0")
        r = rng.random()
        if r < 0.3:
            originals: Any = gj.ABSENT
        elif r < 0.45:
            originals = []
        else:
            originals = rng.sample(originals_pool, rng.randint(1, 3))
            if rng.random() < 0.2:
                name = "".join(originals).replace("/", "_") + str(k)
        input_descs = [gj.desc(origin_shape=rng.choice([None, (5, 6)])) for _ in inputs] if rng.random() < 0.5 \
            else None
        op = gj.op(name, op_type, rng.choice([k, k, n_ops - k, None]), inputs=inputs, originals=originals,
                   outputs=outputs, input_descs=input_descs, l1=rng.choice([None, None, None, "1", "2"]),
                   multiop=rng.choice([None, None, True, False]))
        rng.choice(graphs).append(op)
        made.append((name, n_out))
    document = {"name": "model", "version": 2,
                "graph": [{"name": f"g{n}", "op": ops} for n, ops in enumerate(graphs)]}
    quant = None
    if rng.random() < 0.2:
        quant = gj.document(*[gj.op(o, "Conv2D", n, originals=rng.choice([gj.ABSENT, [], [f"q{n}"]]))
                              for n, o in enumerate(rng.sample(originals_pool, 3))])
    device: list[tuple[Any, ...]] = []
    names = [n for n, _ in made] + [f"extra{n}" for n in range(rng.randint(0, 2))]
    for order, name in enumerate(rng.sample(names, rng.randint(0, len(names)))):
        shown = name.replace("/", "_").replace(".", "_").replace(" ", "_") if rng.random() < 0.7 else name
        op_type = rng.choice(_TYPES)
        counts = (rng.randint(0, 3), rng.randint(0, 2))
        device.append((shown, op_type, *counts, rng.choice([order, float(order), (order, "t"), None, "x"])))
        if rng.random() < 0.1:
            device.append((shown, op_type, *counts, rng.choice([order + 1, (order, 9), "y"])))
    rng.shuffle(device)
    keys = [f"{o}.{j}" for o in originals_pool + names for j in range(2)]
    truth = {}
    for key in rng.sample(keys, rng.randint(0, len(keys) // 2)):
        shown = key.replace("/", "_").replace(" ", "_") if rng.random() < 0.6 else key
        truth[shown] = f"ref:{shown}"
    if rng.random() < 0.1:
        truth["noindex"] = "ref:noindex"
    return document, quant, device, truth


def digest(pairs: list[Any]) -> str:
    h = hashlib.sha256()
    for p in pairs:
        h.update(repr((p.npu_op, p.op_type, p.kind, p.index, p.tensor_index, p.ground_truth_op, p.ground_truth_ops,
                       p.ground_truth_key, p.npu_ref, p.ground_truth_ref, str(p.relation), p.origin_shape,
                       p.origin_format, p.origin_data_type, p.graph_op, p.skip_reason, p.note)).encode())
    return h.hexdigest()


def device_pair_case(seed: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(left, right) device ops as DeviceOp arguments (name, type, inputs, outputs, order, ref) for
    `pair_device_to_device`: the right a shuffled subset of the left, some with another type or input count, plus
    ops of its own."""
    _, _, device, _ = case(seed)
    rng = random.Random(seed)
    left = [(a, b, c, d, o, f"l{k}") for k, (a, b, c, d, o) in enumerate(device)]
    right = [(a, b if rng.random() < 0.9 else "Other", c + rng.choice([0, 0, 1, -1]), d, o, f"r{k}")
             for k, (a, b, c, d, o) in enumerate(rng.sample(device, rng.randint(0, len(device))))]
    right += [(f"new{k}", "Relu", 1, 1, k, None) for k in range(rng.randint(0, 2))]
    rng.shuffle(right)
    return left, right
