"""Static `If` nodes inlined, so that what runs inside them becomes layers of their own.

In: an ONNX model and the input samples it will run on. Out: the model with every `If` whose condition has the same
value on all the samples replaced by the nodes of the branch taken (its initializers moved to the graph, its outputs
renamed to the If's outputs), repeated for Ifs nested in the inlined branches, and a note per If kept (condition
differing between samples, or not computable). `dumpcmp golden` and `dumpcmp simulate` both inline with the same
samples, so the ground truth and the device dumps name the same layers. Loop and Scan bodies run a variable number
of times and are kept as one op (golden says which values inside them are not exposed).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["inline_static_ifs"]

MAX_DEPTH = 8


def _conditions(model: Any, names: Sequence[str], samples: Sequence[Mapping[str, np.ndarray]]) -> list[list[Any]]:
    import onnx
    import onnxruntime as ort

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    for n in names:
        probe.graph.output.add().name = n
    so = ort.SessionOptions()
    so.log_severity_level = 3
    session = ort.InferenceSession(probe.SerializeToString(), so, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    return [session.run(list(names), {k: v for k, v in s.items() if k in wanted}) for s in samples]


def _rename(graph: Any, mapping: Mapping[str, str]) -> None:
    for node in graph.node:
        for i, x in enumerate(node.input):
            if x in mapping:
                node.input[i] = mapping[x]
        for i, x in enumerate(node.output):
            if x in mapping:
                node.output[i] = mapping[x]
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _rename(g, mapping)


def _inline(model: Any, node: Any, branch: Any) -> list[Any]:
    """The nodes that replace `node` (an If) by `branch`; the branch's initializers go to the graph."""
    import onnx
    from onnx import helper

    model.graph.initializer.extend(branch.initializer)
    produced = {o for n in branch.node for o in n.output if o}
    mapping = {out.name: node.output[k] for k, out in enumerate(branch.output)
               if out.name in produced and k < len(node.output)}
    body = onnx.GraphProto()
    body.node.extend(branch.node)
    _rename(body, mapping)
    nodes = list(body.node)
    for k, out in enumerate(branch.output):
        if out.name not in produced and k < len(node.output):  # an outer value or a weight passed through
            nodes.append(helper.make_node("Identity", [out.name], [node.output[k]], name=f"{node.name}_out{k}"))
    return nodes


def inline_static_ifs(model: Any, samples: Sequence[Mapping[str, np.ndarray]]) -> tuple[Any, list[str]]:
    """`model` (a copy) with its static Ifs inlined (module doc), and notes on the Ifs kept."""
    import onnx

    out = onnx.ModelProto()
    out.CopyFrom(model)
    notes: list[str] = []
    kept: set[str] = set()
    for _ in range(MAX_DEPTH):
        ifs = [n for n in out.graph.node if n.op_type == "If" and n.name not in kept]
        if not ifs or not samples:
            break
        try:
            values = _conditions(out, [n.input[0] for n in ifs], samples)
        except Exception as error:  # the probe cannot run: keep every If as one op, and say why
            text = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
            notes += [f"If {n.name!r} kept as one op: its condition could not be computed ({text})" for n in ifs]
            break
        taken: dict[str, bool] = {}
        for k, n in enumerate(ifs):
            seen = {bool(np.asarray(v[k]).reshape(-1)[0]) for v in values}
            if len(seen) == 1:
                taken[n.name] = seen.pop()
            else:
                kept.add(n.name)
                notes.append(f"If {n.name!r} kept as one op: its condition differs between the samples")
        if not taken:
            break
        nodes = []
        for original in out.graph.node:
            n = onnx.NodeProto()
            n.CopyFrom(original)
            if n.op_type == "If" and n.name in taken:
                branch = next(a.g for a in n.attribute if a.name == ("then_branch" if taken[n.name]
                                                                     else "else_branch"))
                nodes += _inline(out, n, branch)
            else:
                nodes.append(n)
        del out.graph.node[:]
        out.graph.node.extend(nodes)
    return out, notes
