"""The ONNX model as every stage reads it: loading (external weights stay beside the model), the inputs that need
data, the names dumpcmp gives nodes, the execution order, the values computed from weights alone, the values'
types from shape inference, and what a node's subgraphs read from the graph around them.

In: an ONNX file or a loaded ModelProto. Out: facts about it (`ModelInput`s, node lists, tensor name sets, TypeProtos);
nothing is written. Needs the `onnx` extra for loading and shape inference; the rest works on any ModelProto.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from dumpcmp.errors import ConfigError, NotFoundError
from dumpcmp.onnx.runner import require_onnx
from dumpcmp.support.lazy_numpy import np

__all__ = ["ModelInput", "check_model", "constant_tensors", "execution_order", "external_files", "load_model",
           "load_model_with_weights", "model_inputs", "name_nodes", "node_name", "subgraph_note",
           "subgraph_outer_names", "subgraphs", "tensor_nbytes", "value_types"]


@dataclass(frozen=True)
class ModelInput:
    """A graph input that needs data: its name, NumPy dtype and shape (ints, or None/str for a free dim)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str | None, ...] | None

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.dtype} of any shape"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype} [{dims}]"


def _iter_tensors(graph: Any) -> Iterator[Any]:
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _iter_tensors(attr.g)
            for g in attr.graphs:
                yield from _iter_tensors(g)


def load_model(path: Path) -> Any:
    """The model at `path` (external weights not read), checked by `check_model`."""
    onnx, _ = require_onnx()
    if not path.is_file():
        raise NotFoundError(f"{path}: no such model file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf's DecodeError and friends
        raise ConfigError(f"{path}: not a readable ONNX model: {error}") from error
    check_model(model, path)
    return model


def check_model(model: Any, path: Path | str = "model") -> None:
    """ConfigError naming the model file and the node, input or weight, for what would otherwise end in a traceback
    or crash onnxruntime itself: names that are not UTF-8 text (protobuf hands them over as bytes), weights stored
    outside the model's folder (an absolute location, one with '..', or a symbolic link: dumpcmp reads no file the
    model names elsewhere), offsets and lengths of external data that are not whole numbers or run past the end of
    their file, a node input that nothing defines (a missing initializer), an empty name where the operator's schema
    has no optional input or output (a Split whose output is named '' makes onnxruntime 1.2x write through a null
    pointer: SIGSEGV), a graph input whose element type is UNDEFINED or has no NumPy type, and a cycle."""
    onnx, _ = require_onnx()

    def text(value: Any, what: str) -> str:
        if isinstance(value, bytes):
            raise ConfigError(f"{path}: {what} is not UTF-8 text: {value!r}")
        return value

    opsets = {o.domain or "ai.onnx": o.version for o in model.opset_import}

    def schema_of(node: Any) -> Any:
        domain = node.domain or "ai.onnx"
        try:
            return onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), "" if domain == "ai.onnx" else domain)
        except Exception:  # a custom operator: onnxruntime judges it
            return None

    def formal(params: Any, index: int) -> Any:
        if index < len(params):
            return params[index]
        last = params[-1] if params else None
        return last if last is not None and last.option == onnx.defs.OpSchema.FormalParameterOption.Variadic \
            else None

    optional = onnx.defs.OpSchema.FormalParameterOption.Optional

    def walk(graph: Any, outer: set[str], where: str) -> None:
        defined = set(outer)
        for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
            text(vi.name, f"{where}the value name {vi.name!r}")
        for t in graph.initializer:
            text(t.name, f"{where}a weight's name")
        defined.update(vi.name for vi in graph.input)
        defined.update(t.name for t in graph.initializer)
        defined.update(t.values.name for t in graph.sparse_initializer)
        for node in graph.node:
            text(node.name, f"{where}the name of a {node.op_type!r} node")
            text(node.op_type, f"{where}the type of node {node.name!r}")
            for x in list(node.input) + list(node.output):
                text(x, f"{where}a value name of node {node.name!r}")
            defined.update(x for x in node.output if x)
        for node in graph.node:
            label = f"{where}node {node_name(node)!r} ({node.op_type})"
            schema = schema_of(node)
            for kind, names, params in (("input", node.input, schema.inputs if schema else None),
                                        ("output", node.output, schema.outputs if schema else None)):
                for i, x in enumerate(names):
                    if x or params is None:
                        continue
                    param = formal(params, i)
                    if param is not None and param.option != optional:
                        raise ConfigError(f"{path}: {label}: its {kind} {i} has an empty name, but that {kind} "
                                          f"({param.name}) is not optional; name it")
            missing = [x for x in node.input if x and x not in defined]
            if missing:
                raise ConfigError(f"{path}: {label} reads {missing[0]!r}, which no graph input, weight "
                                  "(initializer) or node defines")
            for g in subgraphs(node):
                walk(g, defined, f"{label}'s subgraph {g.name!r}: ")

    walk(model.graph, set(), "")
    execution_order(model.graph, path)  # a cycle: named here, with the file, whichever command reads the model
    for tensor in _iter_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {text(e.key, "a key of external data"): text(e.value, "a value of external data")
                for e in tensor.external_data}
        location = info.get("location", "")
        parts = location.replace("\\", "/").split("/")
        if not location or location.startswith("/") or ".." in parts or "\0" in location or ":" in parts[0]:
            raise ConfigError(f"{path}: weight {tensor.name!r} is stored at {location!r}, outside the model's folder "
                              "(dumpcmp reads external data only from files beside the model, by relative names "
                              "without '..')")
        for key in ("offset", "length"):
            if key in info and not (info[key].isascii() and info[key].isdigit()):
                raise ConfigError(f"{path}: weight {tensor.name!r}: its external data {key} {info[key]!r} is not a "
                                  "whole number")
        file = Path(path).parent / location
        if file.is_symlink():
            raise ConfigError(f"{path}: weight {tensor.name!r} is stored in {location!r}, a symbolic link; dumpcmp "
                              "reads external data only from files beside the model")
        if file.is_file():
            size = file.stat().st_size
            offset = int(info.get("offset", "0"))
            end = offset + int(info["length"]) if "length" in info else offset
            if end > size:
                raise ConfigError(f"{path}: weight {tensor.name!r}: its external data runs to byte {end} of "
                                  f"{location!r}, which holds {size} bytes")
    initializers = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in initializers or not vi.type.HasField("tensor_type"):
            continue
        elem = vi.type.tensor_type.elem_type
        try:
            np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
        except Exception:
            kind = "UNDEFINED" if elem == 0 else (onnx.TensorProto.DataType.Name(elem)
                                                  if elem in onnx.TensorProto.DataType.values() else str(elem))
            raise ConfigError(f"{path}: model input {vi.name!r} has element type {kind}, which no data can be "
                              "given for") from None


def external_files(model: Any, model_dir: Path, model_path: Path) -> list[str]:
    onnx, _ = require_onnx()
    locations: list[str] = []
    for tensor in _iter_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if location not in locations:
            if not (model_dir / location).is_file():
                raise NotFoundError(f"{model_path}: weight {tensor.name!r} is stored in {location!r}, which is not "
                                    f"in {model_dir}; keep the external data files beside the model")
            locations.append(location)
    return locations


def load_model_with_weights(path: Path) -> Any:
    """The model with its external weights read in (for stages that compute with them: replay, lowering)."""
    model = load_model(path)
    if external_files(model, path.parent, path):
        import onnx.external_data_helper as ext

        ext.load_external_data_for_model(model, str(path.parent))
    return model


def model_inputs(model: Any) -> list[ModelInput]:
    """The graph inputs that need data (initializers listed as inputs by old IR versions are left out)."""
    onnx, _ = require_onnx()
    initializers = {t.name for t in model.graph.initializer}
    result = []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        tt = vi.type
        if not tt.HasField("tensor_type"):
            raise ConfigError(f"model input {vi.name!r} is not a tensor ({tt.WhichOneof('value')}); dumpcmp "
                              "feeds tensors only")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.tensor_type.elem_type))
        shape: tuple[int | str | None, ...] | None = None
        if tt.tensor_type.HasField("shape"):
            dims: list[int | str | None] = []
            for d in tt.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value >= 0:
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
            shape = tuple(dims)
        result.append(ModelInput(vi.name, dtype, shape))
    return result


def node_name(node: Any) -> str:
    """The name dumpcmp gives a node: its own, else its first output (the ground truth's file names use it)."""
    return node.name or next((o for o in node.output if o), f"{node.op_type}_unnamed")


def name_nodes(model: Any) -> None:
    """Give every unnamed node the name the ground truth uses for it, so that names survive the quantizer."""
    for node in model.graph.node:
        if not node.name:
            node.name = node_name(node)


def subgraphs(node: Any) -> list[Any]:
    """The graphs a node's attributes hold (If branches, Loop and Scan bodies)."""
    return [g for attr in node.attribute for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)]


def subgraph_outer_names(node: Any) -> set[str]:
    """Names a node's subgraphs use from the enclosing scope: implicit inputs for the execution order."""
    used: set[str] = set()

    def walk(graph: Any) -> set[str]:
        defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
        needed: set[str] = set()
        for n in graph.node:
            needed.update(x for x in n.input if x and x not in defined)
            for g in subgraphs(n):
                needed.update(x for x in walk(g) if x not in defined)
            defined.update(n.output)
        needed.update(o.name for o in graph.output if o.name not in defined)
        return needed

    for g in subgraphs(node):
        used |= walk(g)
    return used


def subgraph_note(node: Any) -> str:
    """For a node with subgraphs (If/Loop/Scan): which values inside them are not exposed, precisely."""
    parts = []
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            inner = [o for n in g.node for o in n.output if o]
            if inner:
                shown = ", ".join(inner[:8]) + (f", ... ({len(inner)} in all)" if len(inner) > 8 else "")
                parts.append(f"{attr.name}: {shown}")
    if not parts:
        return ""
    return ("outputs inside its subgraphs are not exposed (onnxruntime fetches graph-level values only; the "
            f"{node.op_type}'s own outputs are): " + "; ".join(parts))


def constant_tensors(graph: Any) -> set[str]:
    """Tensors whose values come from the weights alone: initializers, Constant nodes, and the outputs of nodes
    (without subgraphs) all of whose inputs are such tensors. A compiler folds them; they are no layer's output."""
    const = {t.name for t in graph.initializer}
    for node in execution_order(graph):
        ins = [x for x in node.input if x]
        if node.op_type == "Constant" or (ins and all(x in const for x in ins) and not any(
                attr.HasField("g") or len(attr.graphs) for attr in node.attribute)
                and not node.op_type.startswith("Random")):
            const.update(o for o in node.output if o)
    return const


def execution_order(graph: Any, model_path: Path | str = "model") -> list[Any]:
    """The graph's nodes in topological order; the graph's own order when it already is one (Kahn's algorithm
    always taking the earliest ready node reproduces a sorted order exactly)."""
    nodes = list(graph.node)
    producer = {out: i for i, n in enumerate(nodes) for out in n.output if out}
    deps: list[set[int]] = []
    for i, n in enumerate(nodes):
        names = {x for x in n.input if x} | subgraph_outer_names(n)
        deps.append({producer[x] for x in names if x in producer and producer[x] != i})
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        stuck = [nodes[i].name or nodes[i].output[0] for i in range(len(nodes)) if waiting[i] > 0][:5]
        raise ConfigError(f"{model_path}: the graph has a cycle; nodes never ready: {', '.join(stuck)}")
    return [nodes[i] for i in order]


def value_types(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """name -> TypeProto from ONNX shape inference run with the actual input shapes. Large weights are left out
    of the copy that is inferred (shape inference needs their shapes, not their values)."""
    onnx, _ = require_onnx()
    skeleton = onnx.ModelProto()
    skeleton.ir_version = model.ir_version
    skeleton.opset_import.extend(model.opset_import)
    skeleton.functions.extend(model.functions)
    g = skeleton.graph
    src = model.graph
    g.name = src.name
    g.node.extend(src.node)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    for vi in src.input:
        new = g.input.add()
        new.CopyFrom(vi)
        if vi.name in feeds and new.type.HasField("tensor_type"):
            shape = new.type.tensor_type.shape
            shape.Clear()
            for d in feeds[vi.name].shape:
                shape.dim.add().dim_value = int(d)
    for t in src.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.raw_data) > 65536:
            stub = g.initializer.add()
            stub.name, stub.data_type = t.name, t.data_type
            stub.dims.extend(t.dims)
            stub.data_location = onnx.TensorProto.EXTERNAL
            entry = stub.external_data.add()
            entry.key, entry.value = "location", "dumpcmp-shape-inference-stub"
        else:
            g.initializer.add().CopyFrom(t)
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton, strict_mode=False, data_prop=True)
    except Exception:  # inference is only an estimate for batching; the run itself is what counts
        return {}
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        types[vi.name] = vi.type
    return types


def tensor_nbytes(type_proto: Any) -> int | None:
    onnx, _ = require_onnx()
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape") or tt.elem_type == 0:
        return None
    n = 1
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        n *= int(d.dim_value)
    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)).itemsize
    except Exception:
        return None
    return n * max(itemsize, 1)
