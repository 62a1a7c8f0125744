"""The original ONNX model as the debugging stages read it, and regions of it cut out as runnable sub-models.

In: an ONNX model (a file, external weights read in, or a ModelProto) and, for a device op's region, the compiler's
graph JSON. Out: `OriginalModel` (nodes by the name dumpcmp gives them, producers, readers, weights, value types),
`Region`s (original nodes between input and output tensors) and their ONNX sub-models. `locate` replays the region of
every device op (`region_of`), `extract` cuts out the region between layers a user names, `bisect` names layers with
the same model.

    >>> model = OriginalModel.load("net.onnx")
    >>> region = region_of(model, load_graph("net.json"), "conv1bn1relu1")
    >>> region.nodes, region.inputs, region.outputs     # ('conv1', 'bn1', 'relu1'), ('input',), ('relu1_out',)
    >>> sub = to_onnx(model, region)                    # an onnx.ModelProto onnxruntime runs on `region.inputs`

A region is found from the pairing (`dumpcmp.graph.pairing`, through the graph JSON: fused ops, inserted Cast/TransData,
quantize/dequantize): the original tensors the device op's outputs hold are the region's outputs, the original
tensors its dumped data inputs hold are where it starts, and the nodes between them, limited to the op's original
nodes (`_datadump_original_op_names`) and Constant nodes, are the region. Weights (initializers) and Constant nodes
travel inside the sub-model, and so do tensors computed from them alone (a Cast of a Constant, a shape computed from
initializers: what a compiler folds into Const data at compile time, `dumpcmp.onnx.model.constant_tensors`), with the
nodes computing them, whichever device op they belong to; its inputs are only the activations that enter the
region. A region with no nodes
(an inserted Cast/TransData, a quantize/dequantize pair) is an identity: its output is its input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from dumpcmp.support.lazy_numpy import np
from dumpcmp.errors import DumpcmpError

__all__ = ["OriginalModel", "Region", "RegionError", "cut_region", "merged_onnx", "original_tensor", "quantize_of",
           "reads", "region_from", "region_of", "to_onnx"]


class RegionError(DumpcmpError):
    """The region of a device op cannot be cut out (the message says why); the op is not replayed."""


@dataclass(frozen=True)
class Region:
    """Original nodes (in execution order) between `inputs` (activation tensors fed from outside) and `outputs`."""

    nodes: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    @property
    def identity(self) -> bool:
        """No node: the outputs are the inputs (an inserted Cast/TransData, a quantize/dequantize pair)."""
        return not self.nodes


class OriginalModel:
    """The original ONNX model, indexed: nodes by the name dumpcmp gives them (`node.name`, else its first
    output, as `dumpcmp golden` names files), the producer of every tensor, initializers, value types."""

    def __init__(self, model: Any, path: str | os.PathLike[str] | None = None) -> None:
        from dumpcmp.onnx.model import constant_tensors, execution_order, name_nodes, node_name, value_types

        self.path = None if path is None else Path(path)
        name_nodes(model)
        self.model = model
        graph = model.graph
        order = execution_order(graph, str(path or "model"))
        self.nodes: dict[str, Any] = {node_name(n): n for n in order}
        self.position = {name: k for k, name in enumerate(self.nodes)}
        self.producer: dict[str, str] = {}
        for name, n in self.nodes.items():
            for t in n.output:
                if t:
                    self.producer[t] = name
        self.initializers: dict[str, Any] = {t.name: t for t in graph.initializer}
        self.graph_inputs = [vi.name for vi in graph.input if vi.name not in self.initializers]
        self.constants: frozenset[str] = frozenset(constant_tensors(graph))
        self._types = value_types(model, {})
        self._sanitized: dict[str, str] | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "OriginalModel":
        """Read an ONNX file (external data too); NotFoundError/ConfigError for a missing or unreadable file."""
        from dumpcmp.onnx.model import load_model_with_weights

        p = Path(path)
        return cls(load_model_with_weights(p), p)

    @property
    def order(self) -> list[Any]:
        """The nodes (NodeProto) in execution order."""
        return list(self.nodes.values())

    @cached_property
    def consumers(self) -> dict[str, list[str]]:
        """tensor -> the nodes reading it (`reads`: inputs and what subgraphs take from the graph), in order."""
        out: dict[str, list[str]] = {}
        for name, n in self.nodes.items():
            for t in reads(n):
                out.setdefault(t, []).append(name)
        return out

    @cached_property
    def weight_only_nodes(self) -> frozenset[str]:
        """Nodes whose value depends on weights only: Constant nodes, nodes without inputs, and nodes all of whose
        reads are initializers or outputs of such nodes (`extract` keeps them out of the layers it names)."""
        const: set[str] = set()
        for name, n in self.nodes.items():
            if all(x in self.initializers or self.producer.get(x) in const for x in reads(n)):
                const.add(name)
        return frozenset(const)

    def walk(self, seeds: Iterable[str], forward: bool) -> set[str]:
        """The nodes reachable from the nodes `seeds` (them included): downstream through their readers when
        `forward`, else upstream through the producers of what they read."""
        seen: set[str] = set()
        stack = list(seeds)
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            node = self.nodes[name]
            if forward:
                nxt: Iterator[str] = (c for o in node.output if o for c in self.consumers.get(o, []))
            else:
                nxt = (self.producer[x] for x in reads(node) if x in self.producer)
            stack.extend(n for n in nxt if n not in seen)
        return seen

    def tensor(self, op_name: str | None, index: int | None) -> str | None:
        """The tensor name of output `index` of original op `op_name` (a graph input's own name for index 0)."""
        if op_name is None or index is None:
            return None
        node = self.nodes.get(op_name)
        if node is None:
            from dumpcmp.dumps.naming import sanitize

            if op_name in self.graph_inputs or op_name in self.initializers:
                return op_name if index == 0 else None
            if self._sanitized is None:
                # names as the runtime writes them (`.`, `/` ... as `_`), built once, on first need
                self._sanitized = {}
                for name in list(self.graph_inputs) + list(self.nodes):
                    self._sanitized.setdefault(sanitize(name), name)
            found = self._sanitized.get(sanitize(op_name))
            if found is None:
                return None
            node = self.nodes.get(found)
            if node is None:
                return found if index == 0 else None
        return node.output[index] if index < len(node.output) and node.output[index] else None

    def is_weight(self, tensor: str) -> bool:
        """An initializer, or the output of a Constant node: travels inside the region."""
        if tensor in self.initializers:
            return True
        p = self.producer.get(tensor)
        return p is not None and self.nodes[p].op_type == "Constant"

    def is_constant(self, tensor: str) -> bool:
        """A weight, or a tensor computed from weights alone (folded at compile time): travels inside the region."""
        return tensor in self.constants or self.is_weight(tensor)

    def value(self, tensor: str) -> np.ndarray:
        """The value of a weight: an initializer's, or a Constant node's `value`."""
        from onnx import numpy_helper

        t = self.initializers.get(tensor)
        if t is None:
            node = self.nodes[self.producer[tensor]]
            t = next(a.t for a in node.attribute if a.name == "value")
        return numpy_helper.to_array(t)

    def dtype(self, tensor: str) -> np.dtype | None:
        """The tensor's element type in the original model (None when shape inference does not know it)."""
        import onnx

        t = self.initializers.get(tensor)
        elem = t.data_type if t is not None else 0
        if not elem:
            tp = self._types.get(tensor)
            if tp is not None and tp.HasField("tensor_type"):
                elem = tp.tensor_type.elem_type
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem)) if elem else None

    def shape(self, tensor: str) -> tuple[int, ...] | None:
        """The tensor's static shape in the original model, None when any dimension is symbolic or unknown."""
        tp = self._types.get(tensor)
        if tp is None or not tp.HasField("tensor_type") or not tp.tensor_type.HasField("shape"):
            return None
        dims = tp.tensor_type.shape.dim
        if not all(d.HasField("dim_value") and d.dim_value > 0 for d in dims):
            return None
        return tuple(int(d.dim_value) for d in dims)


def cut_region(model: OriginalModel, inputs: Iterable[str], outputs: Sequence[str],
               allowed: Iterable[str] | None = None) -> Region:
    """The nodes computing `outputs` from `inputs` (plus weights, Constant nodes and the nodes computing tensors
    from weights alone), walking back from the outputs. `allowed`: the original node names the region may hold
    (the device op's originals; compile-time constants are always allowed); a walk that needs any other node, or a
    graph input not given, raises RegionError saying which tensor is missing."""
    fed = set(inputs)
    allow = None if allowed is None else set(allowed)
    chosen: set[str] = set()
    used_inputs: set[str] = set()
    stack = [t for t in outputs]
    seen: set[str] = set()
    while stack:
        t = stack.pop()
        if t in seen or not t:
            continue
        seen.add(t)
        if t in fed:
            used_inputs.add(t)
            continue
        if t in model.initializers:
            continue
        p = model.producer.get(t)
        if p is None:
            raise RegionError(f"tensor {t!r} is a model input the device op's dump does not hold")
        node = model.nodes[p]
        if allow is not None and p not in allow and t not in model.constants:
            raise RegionError(f"tensor {t!r} (output of {p}, not an op this device op stands for) is not among "
                              f"its dumped inputs")
        for attr in node.attribute:
            if attr.HasField("g") or len(attr.graphs):
                raise RegionError(f"node {p} ({node.op_type}) holds a subgraph: control flow is not replayed")
        chosen.add(p)
        stack.extend(x for x in node.input if x)
    nodes = tuple(sorted(chosen, key=model.position.__getitem__))
    ins = tuple(t for t in dict.fromkeys(inputs) if t in used_inputs)
    return Region(nodes, ins, tuple(outputs))


def region_of(model: OriginalModel, graph: Any, device_op: str) -> Region:
    """The region of compiled op `device_op` of `graph` (a `dumpcmp.graph.graph_json.Graph`): outputs and data
    inputs mapped to original tensors by the pairing rules, limited to the op's original nodes. RegionError when it
    has none."""
    from dumpcmp.graph.device_ops import dumped_device_op
    from dumpcmp.graph.pairing import pair_with_ground_truth

    op = graph.get(device_op)
    if op is None:
        raise RegionError(f"{device_op}: not an op of the graph JSON")
    quantize = quantize_of(graph, op)
    source = quantize if quantize is not None else op

    def pairs_of(o: Any) -> list[Any]:
        return [p for p in pair_with_ground_truth([dumped_device_op(o)], {}, graph) if p.npu_op == o.name]

    pairs = pairs_of(op)
    ins = [original_tensor(model, p) for p in pairs_of(source) if p.kind == "input"]
    outs = [original_tensor(model, p) for p in pairs if p.kind == "output"]
    return region_from(model, () if quantize is not None else graph.original_names(op), ins, outs, device_op)


def quantize_of(graph: Any, op: Any) -> Any:
    """The quantize op (AscendQuant) feeding dequantize op `op` (AscendDequant), or None: the pair is replayed as
    one identity unit, fed the float tensor before quantization."""
    from dumpcmp.graph.pairing import DEQUANTIZE_TYPES, QUANTIZE_TYPES

    if op.type not in DEQUANTIZE_TYPES:
        return None
    up = graph.producer(op, 0)
    return up[0] if up is not None and up[0].type in QUANTIZE_TYPES else None


def original_tensor(model: OriginalModel, pair: Any) -> str | None:
    """The original tensor name a `dumpcmp.graph.pairing.TensorPair` points at (None: no original counterpart)."""
    key = pair.ground_truth_key
    if pair.ground_truth_op is None or key is None:
        return None
    tail = key.rpartition(".")[2]
    return model.tensor(pair.ground_truth_op, int(tail)) if tail.isdigit() else None


def region_from(model: OriginalModel, originals: Sequence[str], inputs: Sequence[str | None],
                outputs: Sequence[str | None], where: str) -> Region:
    """The region of a device op (named `where` in messages) compiled from the original nodes `originals`, from the
    original tensors its data inputs hold to those its outputs hold (None: no original counterpart). Weights among
    the inputs travel inside; RegionError when no output holds an original tensor or no original node is known."""
    outs = [t for t in outputs if t is not None]
    if not outs:
        raise RegionError(f"{where}: none of its outputs holds an original tensor")
    fed = [t for t in inputs if t is not None and not model.is_constant(t)]
    known = [n for n in originals if n in model.nodes]
    if not known and not set(outs) <= set(fed):
        raise RegionError(f"{where}: no original node ({', '.join(originals) or 'inserted by the compiler'})")
    return cut_region(model, fed, outs, known)


def reads(node: Any) -> list[str]:
    """The tensors a node reads: its inputs and what its subgraphs take from the enclosing graph."""
    from dumpcmp.onnx.model import subgraph_outer_names

    names = [x for x in node.input if x]
    names += sorted(subgraph_outer_names(node) - set(names))
    return names


def _value_info(name: str, dtype: np.dtype | None, shape: Sequence[int] | None) -> Any:
    from onnx import helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype)) if dtype is not None else 1
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


def merged_onnx(model: OriginalModel, regions: Sequence[Region], prefixes: Sequence[str],
                types: Mapping[str, tuple[np.dtype | None, Sequence[int] | None]] | None = None) -> Any:
    """One ONNX model holding every region side by side, each region's activations renamed `{prefix}{name}`
    (weights shared, unrenamed): inputs `{prefix}{input}`, outputs `{prefix}{output}`. `types` gives the inputs'
    (dtype, shape) by original name (default: the original model's)."""
    import onnx
    from onnx import helper

    nodes, inputs, outputs = [], [], []
    weights: dict[str, Any] = {}
    for region, prefix in zip(regions, prefixes):
        local = {t for name in region.nodes for t in model.nodes[name].output if t} | set(region.inputs)

        def rename(t: str) -> str:
            return prefix + t if t in local else t

        for name in region.nodes:
            n = model.nodes[name]
            copy = onnx.NodeProto()
            copy.CopyFrom(n)
            copy.name = prefix + name
            copy.input[:] = [rename(t) if t else "" for t in n.input]
            copy.output[:] = [rename(t) if t else "" for t in n.output]
            nodes.append(copy)
            for t in n.input:
                if t in model.initializers:
                    weights[t] = model.initializers[t]
        for t in region.inputs:
            dtype, shape = (types or {}).get(t, (model.dtype(t), model.shape(t)))
            inputs.append(_value_info(prefix + t, dtype, shape))
        outputs += [helper.ValueInfoProto(name=rename(t)) for t in region.outputs]
    graph = helper.make_graph(nodes, "dumpcmp_locate", inputs, outputs, initializer=list(weights.values()))
    out = helper.make_model(graph, opset_imports=list(model.model.opset_import))
    out.ir_version = model.model.ir_version
    out.functions.extend(model.model.functions)
    return out


def to_onnx(model: OriginalModel, region: Region,
            types: Mapping[str, tuple[np.dtype | None, Sequence[int] | None]] | None = None) -> Any:
    """The region as a runnable ONNX model: inputs `region.inputs`, outputs `region.outputs`, weights inside."""
    if region.identity:
        raise RegionError("an identity region has no node to run: its outputs are its inputs")
    return merged_onnx(model, [region], [""], types)
