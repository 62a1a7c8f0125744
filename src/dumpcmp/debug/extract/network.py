"""The original network's layers, the names users give them, and the layers between start and end layers.

`Network` joins the original model (`dumpcmp.debug.region.OriginalModel`, nodes named as the ground truth names them)
and, optionally, the compiled model's graph JSON, so that a start or an end can be an original node name, a tensor
name or a device op name. `Network.span(starts, ends)` is every layer that is both downstream of a start and upstream
of an end, and its `Region`: its inputs are the activations entering it (weights, initializers and Constant-only
subgraphs travel inside), its outputs the end layers' outputs. `sub_model` cuts that region out as a runnable model
with `dumpcmp.debug.region` (shared with `locate`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from dumpcmp.debug.region import OriginalModel, Region, RegionError, cut_region, reads, to_onnx
from dumpcmp.dumps.naming import sanitize
from dumpcmp.errors import ConfigError, NotFoundError
from dumpcmp.graph.device_ops import NOT_RUN_DEVICE_TYPES, device_ops
from dumpcmp.graph.graph_json import Graph
from dumpcmp.graph.pairing import graph_op_of

__all__ = ["Layer", "LayerSpan", "Network"]


@dataclass
class LayerSpan:
    """The layers from the start layers to the end layers, and the region they make."""

    starts: list[str]
    ends: list[str]
    layers: list[str]
    """The computing nodes, in execution order (nodes that compute only from weights are not layers)."""
    region: Region
    """The layers and the weight-only nodes they read (Constant nodes and what folds from them), in execution
    order; its inputs are the activations entering them (the sub-model's inputs), its outputs the end layers'."""
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Layer:
    """One line of `--list`."""

    position: int
    """Its number among the layers listed (Constant nodes are not listed)."""
    name: str
    op_type: str
    outputs: tuple[str, ...]
    shapes: tuple[tuple[Any, ...] | None, ...]
    device_ops: tuple[str, ...]


class Network:
    """The original model and optionally its compiled graph, for naming layers and cutting regions."""

    def __init__(self, original: OriginalModel, graph: Graph | None = None) -> None:
        self.original = original
        self.path = str(original.path or "model")
        self.graph = graph
        self.device_of: dict[str, list[str]] = {}
        self.originals_of: dict[str, list[str]] = {}
        if graph is not None:
            for op in graph.ops:
                originals = [o for o in graph.original_names(op) if o in original.nodes]
                if not originals and op.name in original.nodes and op.original_op_names is None:
                    originals = [op.name]
                self.originals_of[op.name] = originals
                for o in originals:
                    self.device_of.setdefault(o, []).append(op.name)

    # -- facts -----------------------------------------------------------------------------------------------------
    def device_shapes(self) -> dict[str, tuple[int, ...]]:
        """tensor name -> the original shape the graph JSON gives for it (the device ops' outputs, paired as
        `dumpcmp compare` pairs them): shapes for models whose free dimensions shape inference leaves open."""
        if self.graph is None:
            return {}
        from dumpcmp.graph.pairing import pair_with_ground_truth

        keys = {f"{n.name}.{i}": t for n in self.original.order for i, t in enumerate(n.output) if t}
        keys.update({f"{x}.0": x for x in self.original.graph_inputs})
        ops = device_ops(self.graph)
        return {p.ground_truth_ref: tuple(p.origin_shape) for p in pair_with_ground_truth(ops, keys, self.graph)
                if p.kind == "output" and p.ground_truth_ref is not None and p.origin_shape is not None}

    def layers(self) -> list[Layer]:
        """Every computing node in execution order with its output shapes (from shape inference, else from the
        graph JSON) and device ops."""
        device = self.device_shapes()
        constant = self.original.weight_only_nodes
        out: list[Layer] = []
        for n in self.original.order:
            if n.name in constant and n.op_type == "Constant":
                continue
            outs = tuple(o for o in n.output if o)
            out.append(Layer(len(out), n.name, n.op_type, outs,
                             tuple(self.original.shape(o) or device.get(o) for o in outs),
                             tuple(self.device_of.get(n.name, ()))))
        return out

    # -- names -----------------------------------------------------------------------------------------------------
    def _all_names(self) -> list[str]:
        om = self.original
        names = list(om.nodes) + [t for t in om.producer if t not in om.nodes] + om.graph_inputs
        if self.graph is not None:
            names += [op.name for op in self.graph.ops if op.name not in om.nodes]
        return names

    def resolve(self, name: str, role: str) -> tuple[list[str], str | None]:
        """(node names, the tensor meant when `name` is a tensor) for a start (`role` "start") or an end.

        A node name is that node; a tensor name is, for a start, the nodes reading it, and for an end, the node
        writing it; a device op name is the original nodes it was compiled from (as an end: the last of them,
        whose output the op holds)."""
        om = self.original
        if name in om.nodes:
            return [name], None
        if name in om.producer or name in om.graph_inputs:
            if role == "end":
                if name not in om.producer:
                    raise ConfigError(f"{self.path}: {name!r} is an input of the model, not the output of a layer; "
                                      "an end must be a layer or a tensor a layer writes")
                return [om.producer[name]], name
            readers = [n for n in om.consumers.get(name, []) if n not in om.weight_only_nodes]
            if not readers:
                raise ConfigError(f"{self.path}: no layer reads tensor {name!r}, so no region starts there")
            return readers, name
        if self.graph is not None:
            op = graph_op_of(self.graph, name)
            if op is not None:
                originals = self.originals_of.get(op.name, [])
                if not originals:
                    raise ConfigError(f"{self.path}: device op {op.name!r} ({op.type}) has no original layer (the "
                                      "compiler or the quantizer inserted it); name the layer before or after it")
                originals = sorted(originals, key=om.position.__getitem__)
                # an end op ends where its output comes from: the last layer of a fused chain
                return (originals[-1:] if role == "end" else originals), None
        by_sanitized = {sanitize(n): n for n in om.nodes}
        if sanitize(name) in by_sanitized:
            return [by_sanitized[sanitize(name)]], None
        close = difflib.get_close_matches(name, self._all_names(), n=5, cutoff=0.5)
        hint = f"; closest: {', '.join(close)}" if close else "; `dumpcmp extract MODEL --list` lists the layers"
        where = "layer, tensor or device op" if self.graph is not None else "layer or tensor (no -f graph given)"
        raise NotFoundError(f"{self.path}: no {where} named {name!r}{hint}")

    # -- regions ---------------------------------------------------------------------------------------------------
    def span(self, starts: Sequence[str], ends: Sequence[str]) -> LayerSpan:
        """The layers from the start layers to the end layers (names as `resolve` takes them)."""
        if not starts or not ends:
            raise ConfigError("give at least one --start and one --end")
        om = self.original
        start_nodes: list[str] = []
        end_nodes: list[str] = []
        end_tensors: dict[str, list[str]] = {}
        for s in starts:
            start_nodes += self.resolve(s, "start")[0]
        for e in ends:
            nodes, tensor = self.resolve(e, "end")
            end_nodes += nodes
            for n in nodes:
                if tensor is None:
                    end_tensors[n] = [o for o in om.nodes[n].output if o]
                elif end_tensors.get(n) is None or tensor not in end_tensors[n]:
                    end_tensors.setdefault(n, []).append(tensor)
        down = om.walk(start_nodes, forward=True)
        for e, nodes in zip(ends, (self.resolve(e, "end")[0] for e in ends)):
            missing = [n for n in nodes if n not in down]
            if missing:
                raise ConfigError(f"{self.path}: end {e!r} is not reachable from the start "
                                  f"{', '.join(map(repr, starts))}: no path leads from "
                                  f"{'it' if len(starts) == 1 else 'them'} to {missing[0]!r}")
        up = om.walk(end_nodes, forward=False)
        inside = (down & up) - om.weight_only_nodes
        layers = [n for n in om.nodes if n in inside]
        notes = [f"start {s!r} leads to none of the ends; it adds nothing" for s in dict.fromkeys(start_nodes)
                 if s not in up]
        inputs: list[str] = []
        constants: set[str] = set()
        for name in layers:
            for x in reads(om.nodes[name]):
                if x in om.initializers:
                    continue
                p = om.producer.get(x)
                if p is not None and p in inside:
                    continue
                if p is not None and p in om.weight_only_nodes:
                    constants |= om.walk([p], forward=False) & om.weight_only_nodes
                    continue
                if x not in inputs:
                    inputs.append(x)
        outputs = list(dict.fromkeys(t for n in layers if n in end_tensors for t in end_tensors[n]))
        region = Region(tuple(n for n in om.nodes if n in inside or n in constants), tuple(inputs), tuple(outputs))
        return LayerSpan(list(dict.fromkeys(start_nodes)), list(dict.fromkeys(end_nodes)), layers, region, notes)

    def device_ops(self, span: LayerSpan) -> tuple[list[str], list[str]]:
        """(device ops with any original among the layers, those whose originals all are), in graph order."""
        if self.graph is None:
            return [], []
        inside = set(span.layers)
        touching, within = [], []
        for op in self.graph.ops:
            originals = self.originals_of.get(op.name, [])
            if op.type in NOT_RUN_DEVICE_TYPES or not originals:
                continue
            if any(o in inside for o in originals):
                touching.append(op.name)
                if all(o in inside for o in originals):
                    within.append(op.name)
        return touching, within

    def sub_model(self, span: LayerSpan, arrays: Mapping[str, np.ndarray]) -> Any:
        """The span's region as a model of its own (`dumpcmp.debug.region.cut_region` and `to_onnx`): inputs
        `region.inputs` typed by `arrays` (the data it will run on), outputs `region.outputs`, with every weight and
        Constant it reads; shapes inferred and checked by onnx.checker."""
        import onnx

        region = span.region
        try:
            cut = cut_region(self.original, region.inputs, region.outputs)
            sub = to_onnx(self.original, cut, {x: (a.dtype, a.shape) for x, a in arrays.items()})
        except RegionError as error:
            raise ConfigError(f"{self.path}: cannot cut the region out: {error}") from error
        expected = set(region.nodes)
        if set(cut.nodes) != expected:  # pragma: no cover - the two walks agree by construction
            raise ConfigError(f"{self.path}: the region's nodes and the cut disagree: "
                              f"{sorted(set(cut.nodes) ^ expected)}")
        model = self.original.model
        if sub.ir_version < 4:
            _weights_as_inputs(sub)
        sub.graph.name = f"{model.graph.name or 'model'}_{span.starts[0]}_to_{span.ends[-1]}"
        sub.producer_name = "dumpcmp extract"
        try:
            sub = onnx.shape_inference.infer_shapes(sub, strict_mode=True)
            inferred = {v.name: v.type for v in sub.graph.value_info}
            # a value_info shape inference could not give a shape says nothing: dropped
            kept = [v for v in sub.graph.value_info if _has_shape(v.type)]
            del sub.graph.value_info[:]
            sub.graph.value_info.extend(kept)
            missing = [vi for vi in sub.graph.output if not _has_shape(vi.type)]
            if missing:
                shapes = self._output_types(sub, arrays, [vi.name for vi in missing], inferred)
                for vi in missing:
                    vi.type.CopyFrom(shapes[vi.name])
            onnx.checker.check_model(sub, full_check=True)
        except Exception as error:
            raise ConfigError(f"{self.path}: the cut sub-model does not pass onnx.checker: "
                              f"{type(error).__name__}: {error}") from error
        return sub


    def _output_types(self, sub: Any, arrays: Mapping[str, np.ndarray], names: Sequence[str],
                      inferred: Mapping[str, Any]) -> dict[str, Any]:
        """Types with shapes for outputs shape inference left without one: the original model's declared type,
        else what onnxruntime gives on the region's data (dims the original leaves symbolic stay symbolic)."""
        from onnx import helper

        model = self.original.model
        declared = {v.name: v.type for v in list(model.graph.output) + list(model.graph.value_info)}
        out = {n: declared[n] for n in names if n in declared and _has_shape(declared[n])}
        rest = [n for n in names if n not in out]
        if rest:
            import onnxruntime as ort

            probe = type(sub)()
            probe.CopyFrom(sub)
            del probe.graph.output[:]
            probe.graph.output.extend(helper.ValueInfoProto(name=n) for n in rest)
            session = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
            values = session.run(rest, {x: arrays[x] for x in (i.name for i in sub.graph.input)})
            for n, v in zip(rest, values):
                v = np.asarray(v)
                elem = inferred[n].tensor_type.elem_type if n in inferred else \
                    helper.np_dtype_to_tensor_dtype(v.dtype)
                out[n] = helper.make_tensor_type_proto(elem, list(v.shape))
        return out


def _has_shape(tp: Any) -> bool:
    return tp.HasField("tensor_type") and tp.tensor_type.HasField("shape")


def _weights_as_inputs(model: Any) -> None:
    """List every initializer among the graph inputs too, as IR versions before 4 require (opset-9 exports keep
    their weights so): the sub-model keeps the original's IR version, and tools read it as they read the original."""
    from onnx import helper

    listed = {vi.name for vi in model.graph.input}
    for t in model.graph.initializer:
        if t.name not in listed:
            model.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
            listed.add(t.name)
