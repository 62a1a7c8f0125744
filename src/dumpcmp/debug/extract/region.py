"""The original network's layers, the names users give them, and the region between start and end layers.

`Network` wraps a loaded ONNX model (nodes named as the ground truth names them) and, optionally, the compiled
model's graph JSON, so that a start or an end can be an original node name, a tensor name or a device op name.
`Network.region(starts, ends)` is every node that is both downstream of a start and upstream of an end; its inputs
are the activations entering it (weights, initializers and Constant-only subgraphs travel inside), its outputs the
end layers' outputs. `sub_model` cuts that region out as a runnable model with `dumpcmp.debug.locate.regions` (shared
with `locate`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from dumpcmp.errors import ConfigError, NotFoundError
from dumpcmp.graph.graph_json import Graph
from dumpcmp.dumps.naming import sanitize

NOT_RUN_DEVICE_TYPES = frozenset({"Data", "Const", "Constant", "NetOutput"})


@dataclass
class Region:
    """What lies between the start and the end layers."""

    starts: list[str]
    ends: list[str]
    nodes: list[Any]
    """The region's computing nodes (NodeProto), in execution order."""
    constants: list[Any]
    """Nodes that compute only from weights (Constant nodes and what folds from them) the region reads."""
    inputs: list[str]
    """Activations entering the region: the sub-model's inputs."""
    outputs: list[str]
    """The end layers' outputs: the sub-model's outputs."""
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return [n.name for n in self.nodes]


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
    """An ONNX model (`dumpcmp.debug.locate.regions.OriginalModel`) and optionally its compiled graph, for naming layers
    and cutting regions."""

    def __init__(self, original: Any, graph: Graph | None = None) -> None:
        self.original = original
        self.model = original.model
        self.path = str(original.path or "model")
        self.graph = graph
        self.nodes = original.nodes
        self.order = list(original.nodes.values())
        self.position = original.position
        self.initializers = set(original.initializers)
        self.graph_inputs = list(original.graph_inputs)
        self.producer: dict[str, Any] = {t: self.nodes[n] for t, n in original.producer.items()}
        self.consumers: dict[str, list[Any]] = {}
        for n in self.order:
            for name in _reads(n):
                self.consumers.setdefault(name, []).append(n)
        self.constant = self._constant_nodes()
        self.device_of: dict[str, list[str]] = {}
        self.originals_of: dict[str, list[str]] = {}
        if graph is not None:
            for op in graph.ops:
                originals = [o for o in graph.original_names(op) if o in self.nodes]
                if not originals and op.name in self.nodes and op.original_op_names is None:
                    originals = [op.name]
                self.originals_of[op.name] = originals
                for o in originals:
                    self.device_of.setdefault(o, []).append(op.name)

    # -- facts -----------------------------------------------------------------------------------------------------
    def _constant_nodes(self) -> set[str]:
        """Nodes whose value depends on weights only (Constant nodes and anything computed from them alone)."""
        const: set[str] = set()
        for n in self.order:
            reads = _reads(n)
            if all(x in self.initializers or (x in self.producer and self.producer[x].name in const) for x in reads):
                const.add(n.name)
        return const

    def shape(self, tensor: str) -> tuple[int, ...] | None:
        """The static shape shape inference gives (None when unknown or symbolic)."""
        return self.original.shape(tensor)

    def dtype(self, tensor: str) -> np.dtype | None:
        return self.original.dtype(tensor)

    def device_shapes(self) -> dict[str, tuple[int, ...]]:
        """tensor name -> the original shape the graph JSON gives for it (the device ops' outputs, paired as
        `dumpcmp compare` pairs them): shapes for models whose free dimensions shape inference leaves open."""
        if self.graph is None:
            return {}
        from dumpcmp.graph.pairing import DeviceOp, pair_with_ground_truth

        keys = {f"{n.name}.{i}": t for n in self.order for i, t in enumerate(n.output) if t}
        keys.update({f"{x}.0": x for x in self.graph_inputs})
        ops = [DeviceOp(op.name, op.type, 0, max(len(op.output_desc), 1), order=op.position)
               for op in self.graph.ops if op.type not in NOT_RUN_DEVICE_TYPES]
        return {p.ground_truth_ref: tuple(p.origin_shape) for p in pair_with_ground_truth(ops, keys, self.graph)
                if p.kind == "output" and p.ground_truth_ref is not None and p.origin_shape is not None}

    def layers(self) -> list[Layer]:
        """Every computing node in execution order with its output shapes (from shape inference, else from the
        graph JSON) and device ops."""
        device = self.device_shapes()
        out: list[Layer] = []
        for n in self.order:
            if n.name in self.constant and n.op_type == "Constant":
                continue
            outs = tuple(o for o in n.output if o)
            out.append(Layer(len(out), n.name, n.op_type, outs, tuple(self.shape(o) or device.get(o) for o in outs),
                             tuple(self.device_of.get(n.name, ()))))
        return out

    # -- names -----------------------------------------------------------------------------------------------------
    def _all_names(self) -> list[str]:
        names = list(self.nodes) + [t for t in self.producer if t not in self.nodes] + self.graph_inputs
        if self.graph is not None:
            names += [op.name for op in self.graph.ops if op.name not in self.nodes]
        return names

    def resolve(self, name: str, role: str) -> tuple[list[str], str | None]:
        """(node names, the tensor meant when `name` is a tensor) for a start (`role` "start") or an end.

        A node name is that node; a tensor name is, for a start, the nodes reading it, and for an end, the node
        writing it; a device op name is the original nodes it was compiled from (as an end: the last of them,
        whose output the op holds)."""
        if name in self.nodes:
            return [name], None
        if name in self.producer or name in self.graph_inputs:
            if role == "end":
                if name not in self.producer:
                    raise ConfigError(f"{self.path}: {name!r} is an input of the model, not the output of a layer; "
                                      "an end must be a layer or a tensor a layer writes")
                return [self.producer[name].name], name
            readers = [n.name for n in self.consumers.get(name, []) if n.name not in self.constant]
            if not readers:
                raise ConfigError(f"{self.path}: no layer reads tensor {name!r}, so no region starts there")
            return readers, name
        if self.graph is not None:
            op = self.graph.get(name) or next((o for o in self.graph.ops if sanitize(o.name) == sanitize(name)),
                                              None)
            if op is not None:
                originals = self.originals_of.get(op.name, [])
                if not originals:
                    raise ConfigError(f"{self.path}: device op {op.name!r} ({op.type}) has no original layer (the "
                                      "compiler or the quantizer inserted it); name the layer before or after it")
                originals = sorted(originals, key=self.position.__getitem__)
                # an end op ends where its output comes from: the last layer of a fused chain
                return (originals[-1:] if role == "end" else originals), None
        by_sanitized = {sanitize(n): n for n in self.nodes}
        if sanitize(name) in by_sanitized:
            return [by_sanitized[sanitize(name)]], None
        close = difflib.get_close_matches(name, self._all_names(), n=5, cutoff=0.5)
        hint = f"; closest: {', '.join(close)}" if close else "; `dumpcmp extract MODEL --list` lists the layers"
        where = "layer, tensor or device op" if self.graph is not None else "layer or tensor (no -f graph given)"
        raise NotFoundError(f"{self.path}: no {where} named {name!r}{hint}")

    # -- regions ---------------------------------------------------------------------------------------------------
    def _walk(self, seeds: Iterable[str], forward: bool) -> set[str]:
        seen: set[str] = set()
        stack = list(seeds)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            node = self.nodes[name]
            if forward:
                nxt = [c.name for o in node.output if o for c in self.consumers.get(o, [])]
            else:
                nxt = [self.producer[x].name for x in _reads(node) if x in self.producer]
            stack.extend(n for n in nxt if n not in seen)
        return seen

    def region(self, starts: Sequence[str], ends: Sequence[str]) -> Region:
        """The region from the start layers to the end layers (names as `resolve` takes them)."""
        if not starts or not ends:
            raise ConfigError("give at least one --start and one --end")
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
                    end_tensors[n] = [o for o in self.nodes[n].output if o]
                elif end_tensors.get(n) is None or tensor not in end_tensors[n]:
                    end_tensors.setdefault(n, []).append(tensor)
        down = self._walk(start_nodes, forward=True)
        for e, nodes in zip(ends, (self.resolve(e, "end")[0] for e in ends)):
            missing = [n for n in nodes if n not in down]
            if missing:
                raise ConfigError(f"{self.path}: end {e!r} is not reachable from the start "
                                  f"{', '.join(map(repr, starts))}: no path leads from "
                                  f"{'it' if len(starts) == 1 else 'them'} to {missing[0]!r}")
        up = self._walk(end_nodes, forward=False)
        inside = (down & up) - self.constant
        nodes = [n for n in self.order if n.name in inside]
        notes = [f"start {s!r} leads to none of the ends; it adds nothing" for s in dict.fromkeys(start_nodes)
                 if s not in up]
        inputs: list[str] = []
        constants: set[str] = set()
        for n in nodes:
            for x in _reads(n):
                if x in self.initializers:
                    continue
                p = self.producer.get(x)
                if p is not None and p.name in inside:
                    continue
                if p is not None and p.name in self.constant:
                    constants |= self._walk([p.name], forward=False) & self.constant
                    continue
                if x not in inputs:
                    inputs.append(x)
        outputs = list(dict.fromkeys(t for n in nodes if n.name in end_tensors for t in end_tensors[n.name]))
        return Region(list(dict.fromkeys(start_nodes)), list(dict.fromkeys(end_nodes)), nodes,
                      [n for n in self.order if n.name in constants], inputs, outputs, notes)

    def device_ops(self, region: Region) -> tuple[list[str], list[str]]:
        """(device ops with any original in the region, those whose originals all lie in it), in graph order."""
        if self.graph is None:
            return [], []
        inside = set(region.names)
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

    def sub_model(self, region: Region, arrays: Mapping[str, np.ndarray]) -> Any:
        """The region as a model of its own (`dumpcmp.debug.locate.regions.cut_region` and `to_onnx`): inputs
        `region.inputs` typed by `arrays` (the data it will run on), outputs `region.outputs`, with every weight and
        Constant it reads; shapes inferred and checked by onnx.checker."""
        import onnx

        from dumpcmp.debug.locate.regions import RegionError, cut_region, to_onnx

        try:
            cut = cut_region(self.original, region.inputs, region.outputs)
            sub = to_onnx(self.original, cut, {x: (a.dtype, a.shape) for x, a in arrays.items()})
        except RegionError as error:
            raise ConfigError(f"{self.path}: cannot cut the region out: {error}") from error
        expected = {n.name for n in region.nodes + region.constants}
        if set(cut.nodes) != expected:  # pragma: no cover - the two walks agree by construction
            raise ConfigError(f"{self.path}: the region's nodes and the cut disagree: "
                              f"{sorted(set(cut.nodes) ^ expected)}")
        sub.graph.name = f"{self.model.graph.name or 'model'}_{region.starts[0]}_to_{region.ends[-1]}"
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

        declared = {v.name: v.type for v in list(self.model.graph.output) + list(self.model.graph.value_info)}
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


def _reads(node: Any) -> list[str]:
    """The tensors a node reads: its inputs and what its subgraphs take from the enclosing graph."""
    from dumpcmp.onnx.model import subgraph_outer_names

    names = [x for x in node.input if x]
    names += sorted(subgraph_outer_names(node) - set(names))
    return names
