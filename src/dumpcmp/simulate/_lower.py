"""Lower-precision versions of an ONNX model that onnxruntime's CPU provider can run.

fp16: every FLOAT tensor of the model (weights, activations) is stored as float16 between ops, and each op computes
in float32 on the float16 values: Cast nodes to float32 in front of its float inputs and a Cast to float16 after
each float output. That is how an NPU computes (fp16 tensors in memory, fp32 accumulation in the cube and vector
units, rounded when the result is stored), it needs no float16 kernel in onnxruntime (the CPU provider lacks many),
and results do not depend on which ops happen to have one. onnxconverter-common's converter was not used: it adds
a dependency, and it keeps whole ops in float32 where kernels are missing, so their outputs would not be rounded.

int8: onnxruntime's static quantizer (QDQ format, int8 activations and weights, MinMax calibration on the samples)
quantizes the inputs of Conv, Gemm and MatMul, as an NPU's int8 model does (AscendQuant in front of the cube ops,
int8 weights); their outputs and every other op stay floating point, then lowered to float16 as above. Scales and
zero points, and weights dequantized from int8, stay float32 so that int8 x scale is exact.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..errors import ConfigError, DumpcmpError

QUANTIZED_OP_TYPES = ("Conv", "Gemm", "MatMul")
_FLOAT = 1  # onnx.TensorProto.FLOAT
_FLOAT16 = 10
_SUFFIX_FP32 = "__dumpcmp_fp32"
_SUFFIX_FP16 = "__dumpcmp_fp16"
_SUFFIX_RAW = "__dumpcmp_raw"


@dataclass
class Lowered:
    """A runnable lower-precision model and how its tensors relate to the original's."""

    model: Any
    precision: str
    inserted: set[str] = field(default_factory=set)
    """Names of the Cast nodes the lowering added: no device op stands for them."""
    input_fp16: dict[str, str] = field(default_factory=dict)
    """graph input -> the tensor holding its float16 copy (the device's input Cast)."""
    rounded: set[str] = field(default_factory=set)
    """Original tensor names whose values are float16 in the lowered model."""


def node_name(node: Any) -> str:
    """The name dumpcmp gives a node: its own, else its first output (the ground truth uses the same rule)."""
    return node.name or next((o for o in node.output if o), f"{node.op_type}_unnamed")


def name_nodes(model: Any) -> None:
    """Give every unnamed node the name the ground truth uses for it, so that names survive the quantizer."""
    for node in model.graph.node:
        if not node.name:
            node.name = node_name(node)


def check_supported(model: Any, where: str) -> None:
    """Nothing is refused any more: a node with subgraphs (If/Loop/Scan) is lowered as one op (see
    `_rename_outer`); kept as the hook for a model simulate cannot lower."""


def subgraphs(node: Any) -> list[Any]:
    return [g for attr in node.attribute for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)]


def _rename_outer(graph: Any, mapping: Mapping[str, str], defined: frozenset[str] = frozenset()) -> None:
    """Point the uses of outer-scope names in `graph` (a subgraph) at `mapping`'s names, unless shadowed."""
    local = set(defined) | {i.name for i in graph.input} | {t.name for t in graph.initializer}
    for n in graph.node:
        for i, x in enumerate(n.input):
            if x in mapping and x not in local:
                n.input[i] = mapping[x]
        for g in subgraphs(n):
            _rename_outer(g, mapping, frozenset(local))
        local.update(n.output)
    for o in graph.output:
        if o.name in mapping and o.name not in local:
            # a subgraph output that is an outer value as it is: pass the float32 view through an Identity
            ident = graph.node.add()
            ident.op_type, ident.name = "Identity", o.name + "__dumpcmp_outer"
            ident.input.append(mapping[o.name])
            ident.output.append(o.name + "__dumpcmp_outer")
            o.name = o.name + "__dumpcmp_outer"


def _elem_types(model: Any, types: Mapping[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, tp in types.items():
        if tp is not None and tp.HasField("tensor_type") and tp.tensor_type.elem_type:
            out[name] = int(tp.tensor_type.elem_type)
    for vi in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
            out.setdefault(vi.name, int(vi.type.tensor_type.elem_type))
    for t in model.graph.initializer:
        out[t.name] = int(t.data_type)
    for node in model.graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    out.setdefault(node.output[0], int(attr.t.data_type))
    return out


def is_weight_dequantize(node: Any, initializers: set[str]) -> bool:
    """A DequantizeLinear of a stored weight: on the device the op reads the int8 weight itself."""
    return node.op_type == "DequantizeLinear" and bool(node.input) and node.input[0] in initializers


def lower_fp16(model: Any, types: Mapping[str, Any], precision: str = "fp16") -> Lowered:
    """The fp16 version of `model` (see the module doc); `types` from shape inference (name -> TypeProto).

    The original's tensor names keep naming the same values, now float16: a node's float output is renamed
    `{t}__dumpcmp_raw` (its float32 result) and a Cast to float16 writes `{t}`. Graph inputs stay float32 and get
    a float16 copy `{x}__dumpcmp_fp16`.
    """
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    elem = _elem_types(model, types)
    keep: set[str] = set()
    for node in graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            keep.update(x for x in node.input[1:] if x)
        if is_weight_dequantize(node, initializers):
            keep.update(x for x in node.output if x)
    rounded = {name for name, t in elem.items() if t == _FLOAT and name not in keep}

    taken = {x for n in graph.node for x in list(n.input) + list(n.output)} | initializers | \
        {vi.name for vi in graph.input} | {n.name for n in graph.node}

    def fresh(base: str) -> str:
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    del g.node[:]
    del g.value_info[:]
    lowered = Lowered(out, precision, rounded=set(rounded))

    for t in g.initializer:
        if t.name in rounded:
            array = numpy_helper.to_array(t)
            t.CopyFrom(numpy_helper.from_array(array.astype(np.float16), t.name))

    fp16_name: dict[str, str] = {t: t for t in rounded}
    view32: dict[str, str] = {}
    graph_inputs = [vi.name for vi in graph.input if vi.name not in initializers]
    for x in graph_inputs:
        if x in rounded:
            h = fresh(x + _SUFFIX_FP16)
            cast = fresh(f"{x}_to_fp16")
            g.node.append(helper.make_node("Cast", [x], [h], name=cast, to=_FLOAT16))
            lowered.inserted.add(cast)
            lowered.input_fp16[x] = h
            fp16_name[x] = h

    from ..golden import _subgraph_outer_names, execution_order

    def fp32_view(t: str) -> str:
        h = fp16_name[t]
        if h not in view32:
            v = fresh(h + _SUFFIX_FP32)
            cast = fresh(f"{h}_to_fp32")
            g.node.append(helper.make_node("Cast", [h], [v], name=cast, to=_FLOAT))
            lowered.inserted.add(cast)
            view32[h] = v
        return view32[h]

    for node in execution_order(graph):
        new = onnx.NodeProto()
        new.CopyFrom(node)
        for i, t in enumerate(node.input):
            if t and t in rounded:
                new.input[i] = fp32_view(t)
        outer = sorted(t for t in _subgraph_outer_names(node) if t in rounded)
        if outer:
            # control flow runs as one op: its body computes in float32 on the float16 values it reads
            mapping = {t: fp32_view(t) for t in outer}
            for sub in subgraphs(new):
                _rename_outer(sub, mapping)
        posts = []
        for j, t in enumerate(node.output):
            if t and t in rounded:
                raw = fresh(t + _SUFFIX_RAW)
                new.output[j] = raw
                cast = fresh(f"{t}_to_fp16")
                posts.append(helper.make_node("Cast", [raw], [t], name=cast, to=_FLOAT16))
                lowered.inserted.add(cast)
        g.node.append(new)
        g.node.extend(posts)

    del g.output[:]
    for vi in graph.output:
        o = g.output.add()
        o.name = fp16_name.get(vi.name, vi.name)
    return lowered


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over the samples."""

    def __init__(self, samples: Sequence[Mapping[str, np.ndarray]]) -> None:
        self._it: Iterator[Mapping[str, np.ndarray]] = iter(samples)

    def get_next(self) -> dict[str, np.ndarray] | None:
        item = next(self._it, None)
        return None if item is None else dict(item)

    def rewind(self) -> None:  # pragma: no cover - only some calibrators call it
        pass


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    # The quantizer logs advice through the root logger (which would install a handler on first use) and emits
    # deprecation warnings about its own internals; neither is the user's business here.
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def quantize_int8(model: Any, samples: Sequence[Mapping[str, np.ndarray]], where: str) -> Any:
    """The QDQ int8 model of `model`, calibrated on `samples` (see the module doc)."""
    import onnx

    try:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    except ImportError as error:  # pragma: no cover - onnxruntime always ships it
        raise DumpcmpError(f"int8 simulation needs onnxruntime.quantization: {error}") from error

    with tempfile.TemporaryDirectory(prefix="dumpcmp-simulate-") as tmp:
        src, dst = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
        onnx.save(model, str(src))
        try:
            with _quiet():
                quantize_static(str(src), str(dst), _Reader(samples), quant_format=QuantFormat.QDQ,
                                activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                op_types_to_quantize=list(QUANTIZED_OP_TYPES),
                                extra_options={"QDQKeepRemovableActivations": True,
                                               "OpTypesToExcludeOutputQuantization": list(QUANTIZED_OP_TYPES)})
        except DumpcmpError:
            raise
        except Exception as error:
            text = str(error).strip().replace("\n", " ")[:600]
            raise DumpcmpError(f"{where}: onnxruntime's int8 quantizer failed: {type(error).__name__}: {text}") \
                from error
        return onnx.load(str(dst))
