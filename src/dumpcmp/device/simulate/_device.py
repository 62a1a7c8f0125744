"""The compiled ("device") graph a model compiler would make of a lowered ONNX model, and its graph JSON.

What the compiler does that is imitated here (spec: fusion-json.md):
- Data op per graph input (not dumped), and for a float input an inserted `trans_Cast_N` (fp32 -> fp16, layout
  as the input) followed, for a 4-D input, by `trans_TransData_N` (NCHW -> NC1HWC0); both carry an empty
  `_datadump_original_op_names` and say in their output_desc which original tensor they hold.
- Conv+BatchNormalization(+Relu) and Conv+Relu chains become one `Conv2D` op named by concatenating the originals'
  names, listing them in `_datadump_original_op_names`; its output is the chain's last op's output (the value of
  that op in the lower-precision run). The fused op's inputs are the Conv's, with the BatchNorm parameters
  folded into its weights and bias in float32 before the cast to float16 (`_lower.fold_conv_bn`), as compiled.
- Quantized models: an activation QuantizeLinear becomes an `AscendQuant` op (int8 output), an activation
  DequantizeLinear an `AscendDequant` op whose output_desc points at the original tensor that was quantized; a
  weight's DequantizeLinear disappears and the consuming op reads the int8 weight (a Const), as on the device.
- Weights and other initializers are `Const` ops (not dumped). Graph outputs go through `trans_TransData_N` (back
  to NCHW/ND, when the producer's layout is a device layout) and `trans_Cast_N` (fp16 -> fp32) into `NetOutput`.
- Layouts: 4-D activations NC1HWC0 (C0 16 for 2- and 4-byte types, 32 for int8), MatMul/Gemm outputs FRACTAL_NZ,
  Conv weights FRACTAL_Z (sub_format = groups), everything else ND (NCHW when 4-D). Each op's inputs are in the
  layout its producer wrote (the compiler would insert more TransData ops where layouts differ; only the graph's
  edges get them here).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from dumpcmp.dumps import layout as L
from dumpcmp.graph.graph_json import (
    ATTR_ORIGIN_FORMAT,
    ATTR_ORIGIN_NAME,
    ATTR_ORIGIN_OUTPUT_INDEX,
    ATTR_ORIGINAL_OP_NAMES,
)
from dumpcmp.device.simulate._lower import Lowered, is_weight_dequantize
from dumpcmp.onnx.model import constant_tensors, execution_order, node_name

#: ONNX op type -> the op type an Ascend model compiler gives it (others keep their ONNX type)
DEVICE_TYPES = {
    "Conv": "Conv2D", "ConvTranspose": "Conv2DTranspose", "Gemm": "MatMulV2", "MatMul": "MatMulV2",
    "BatchNormalization": "BNInference", "Relu": "Relu", "LeakyRelu": "LeakyRelu", "Sigmoid": "Sigmoid",
    "Tanh": "Tanh", "Clip": "ClipByValue", "Add": "Add", "Sub": "Sub", "Mul": "Mul", "Div": "RealDiv",
    "MaxPool": "MaxPoolV3", "AveragePool": "AvgPoolV2", "GlobalAveragePool": "GlobalAveragePool",
    "GlobalMaxPool": "GlobalMaxPool", "Softmax": "SoftmaxV2", "Flatten": "FlattenV2", "Reshape": "Reshape",
    "Transpose": "TransposeD", "Concat": "ConcatD", "ReduceMean": "ReduceMeanD", "ReduceSum": "ReduceSumD",
    "Pad": "PadV3", "Constant": "Const", "QuantizeLinear": "AscendQuant", "DequantizeLinear": "AscendDequant",
}
NOT_DUMPED = frozenset({"data", "const", "netoutput"})
FUSED_TYPE = "Conv2D"

_DT_NAMES = {
    "float16": "DT_FLOAT16", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int8": "DT_INT8", "uint8": "DT_UINT8",
    "int16": "DT_INT16", "uint16": "DT_UINT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint32": "DT_UINT32",
    "uint64": "DT_UINT64", "bool": "DT_BOOL", "bfloat16": "DT_BF16", "complex64": "DT_COMPLEX64",
    "complex128": "DT_COMPLEX128",
}
_ACTIVATION_DTYPES = frozenset({"float16", "float32", "int8", "uint8"})


def dt_name(dtype: Any) -> str | None:
    """The compiler's DT_* name of a NumPy dtype."""
    return None if dtype is None else _DT_NAMES.get(np.dtype(dtype).name, f"DT_{np.dtype(dtype).name.upper()}")


@dataclass
class Value:
    """Where a device tensor's values come from: `run` a tensor of the lowered model's run, `feed` a model input,
    `init` an initializer of the lowered model, `fp32` a run tensor cast to float32."""

    kind: str
    name: str


@dataclass
class Output:
    """One output of a device op."""

    value: Value
    dtype: np.dtype | None
    shape: tuple[int, ...] | None
    """The framework's (plain) shape."""
    rule: str
    """How the layout is chosen: activation, matmul, plain, 5hd, fz."""
    origin: tuple[str, int] | None = None
    origin_dtype: str | None = None
    groups: int = 1
    layout: str | None = None

    def settle(self, array: np.ndarray | None = None) -> str:
        """The layout, fixed on first use from the known (or first seen) dtype and rank."""
        if self.layout is None or array is not None and self.shape is None:
            if array is not None:
                self.shape = tuple(int(d) for d in array.shape)
                self.dtype = array.dtype
            self.layout = choose_layout(self.rule, self.shape, self.dtype)
        return self.layout


def choose_layout(rule: str, shape: Sequence[int] | None, dtype: Any) -> str:
    rank = None if shape is None else len(shape)
    if rule == "plain":
        return "NCHW" if rank == 4 else "ND"
    if rule == "fz":
        return "FRACTAL_Z" if rank == 4 else "ND"
    if rule == "5hd":
        return "NC1HWC0" if rank == 4 else "ND"
    numeric = dtype is not None and np.dtype(dtype).name in _ACTIVATION_DTYPES
    if rule == "matmul":
        return "FRACTAL_NZ" if numeric and rank is not None and rank >= 2 else "ND"
    return "NC1HWC0" if numeric and rank == 4 else "ND"


def plain_format(layout: str, rank: int) -> str:
    return "NCHW" if layout in ("NC1HWC0", "FRACTAL_Z", "NCHW") or (layout != "FRACTAL_NZ" and rank == 4) else "ND"


def encode(array: np.ndarray, layout_name: str, groups: int = 1) -> np.ndarray:
    """`array` (plain, framework order) in the device layout, C0 by dtype."""
    if layout_name in ("ND", "NCHW"):
        return np.require(array, requirements="C")
    src = "ND" if layout_name == "FRACTAL_NZ" else "NCHW"
    return L.convert(array, src, layout_name, groups=groups)


def device_dims(out: Output) -> list[int] | None:
    if out.shape is None:
        return None
    fmt = out.settle()
    if fmt in ("ND", "NCHW"):
        return list(out.shape)
    c0 = L.default_c0(fmt, out.dtype if out.dtype is not None else np.float16)
    return list(L.device_shape(fmt, plain_format(fmt, len(out.shape)), out.shape, c0=c0, groups=out.groups))


@dataclass
class SimOp:
    """One compiled op. `kind`: data, const, exec (runs on a core, gets a task and may be dumped), netoutput."""

    name: str
    type: str
    kind: str
    originals: list[str] | None
    inputs: list[tuple[str, int] | None] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    id: int = 0
    task_id: int | None = None
    onnx_type: str = ""
    attrs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dumped(self) -> bool:
        return self.kind not in NOT_DUMPED


class DeviceGraph:
    """The device ops of a lowered model, in execution order (see the module doc)."""

    def __init__(self, original: Any, lowered: Lowered, low_types: Mapping[str, Any],
                 feeds: Mapping[str, np.ndarray], model_name: str) -> None:
        self.original = original
        self.lowered = lowered
        self.model_name = model_name
        self.ops: list[SimOp] = []
        self.by_name: dict[str, SimOp] = {}
        self._types = low_types
        self._feeds = feeds
        g = lowered.model.graph
        self._inits = {t.name: t for t in g.initializer}
        self._init_set = set(self._inits)
        self._fp16_input = {h: x for x, h in lowered.input_fp16.items()}
        self._producer: dict[str, tuple[Any, int]] = {}
        for n in g.node:
            for k, t in enumerate(n.output):
                if t:
                    self._producer[t] = (n, k)
        self._renamed: dict[str, str] = {}  # raw output -> the rounded tensor holding its device value
        for n in g.node:
            if n.name in lowered.inserted and n.op_type == "Cast" and n.input and n.input[0].endswith("__dumpcmp_raw"):
                self._renamed[n.input[0]] = n.output[0]
        self._names = {node_name(n) for n in original.graph.node} | {t.name for t in original.graph.initializer} | \
            {vi.name for vi in original.graph.input}
        self._used_names: set[str] = set()
        self._trans = 0
        self._task = 0
        self._node_op: dict[str, SimOp] = {}
        self._chain_end: dict[str, tuple[str, int]] = {}
        self._const: dict[str, tuple[str, int]] = {}
        self._orig_outputs = {node_name(n): list(n.output) for n in original.graph.node}
        consts = constant_tensors(original.graph)
        # nodes computed from the weights alone: the compiler folds them into Const data, never run or dumped
        self._folded = {node_name(n) for n in original.graph.node
                        if any(o for o in n.output) and all(o in consts for o in n.output if o)}
        self._orig_elem = self._original_elem_types()
        self.fused: list[list[str]] = []
        self._build()

    # -- helpers ---------------------------------------------------------------------------------------------
    def _original_elem_types(self) -> dict[str, str]:
        import onnx

        out: dict[str, str] = {}
        g = self.original.graph
        for vi in list(g.input) + list(g.output) + list(g.value_info):
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type:
                out[vi.name] = dt_name(onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)) or ""
        return out

    def _unique(self, base: str) -> str:
        name, k = base, 0
        while name in self._used_names or (name != base and name in self._names):
            k += 1
            name = f"{base}_{k}"
        self._used_names.add(name)
        return name

    def _trans_name(self, kind: str) -> str:
        while True:
            name = f"trans_{kind}_{self._trans}"
            self._trans += 1
            if name not in self._names and name not in self._used_names:
                self._used_names.add(name)
                return name

    def _add(self, op: SimOp) -> SimOp:
        op.id = len(self.ops)
        if op.kind == "exec":
            op.task_id = self._task
            self._task += 1
        self.ops.append(op)
        self.by_name[op.name] = op
        return op

    def _dtype_shape(self, tensor: str) -> tuple[np.dtype | None, tuple[int, ...] | None]:
        import onnx

        if tensor in self._feeds:
            a = self._feeds[tensor]
            return a.dtype, tuple(int(d) for d in a.shape)
        if tensor in self._inits:
            t = self._inits[tensor]
            return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.data_type)), tuple(int(d) for d in t.dims)
        tp = self._types.get(tensor)
        if tp is None or not tp.HasField("tensor_type"):
            return None, None
        tt = tp.tensor_type
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)) if tt.elem_type else None
        shape = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shape = tuple(int(d.dim_value) for d in tt.shape.dim)
        return dtype, shape

    def _origin_dtype(self, origin: tuple[str, int] | None) -> str | None:
        if origin is None:
            return None
        name, k = origin
        outs = self._orig_outputs.get(name)
        tensor = outs[k] if outs is not None and k < len(outs) else name
        return self._orig_elem.get(tensor)

    def _const_ref(self, tensor: str) -> tuple[str, int]:
        if tensor not in self._const:
            dtype, shape = self._dtype_shape(tensor)
            op = self._add(SimOp(self._unique(tensor), "Const", "const", None,
                                 outputs=[Output(Value("init", tensor), dtype, shape, "plain")]))
            self._const[tensor] = (op.name, 0)
        return self._const[tensor]

    def resolve(self, tensor: str) -> tuple[str, int]:
        """The device op output that holds lowered tensor `tensor`."""
        seen = 0
        while True:
            seen += 1
            if seen > 100000:  # pragma: no cover - a cycle would be a bug in the lowering
                raise RuntimeError(f"cannot resolve {tensor!r}")
            if tensor in self._fp16_input:
                return self._chain_end[self._fp16_input[tensor]]
            if tensor in self._chain_end:
                return self._chain_end[tensor]
            if tensor in self._inits:
                return self._const_ref(tensor)
            node, k = self._producer[tensor]
            if node.name in self.lowered.inserted or is_weight_dequantize(node, self._init_set):
                tensor = node.input[0]
                continue
            op = self._node_op.get(node.name)
            if op is None:
                raise RuntimeError(f"tensor {tensor!r} of {node.name!r} is read before its op exists")
            return op.name, k

    def value_name(self, tensor: str) -> str:
        return self._renamed.get(tensor, tensor)

    # -- building ----------------------------------------------------------------------------------------------
    def _plan_fusion(self) -> dict[str, list[str]]:
        """Conv+BN(+Relu) and Conv+Relu chains of the original graph: member name -> chain of names."""
        g = self.original.graph
        graph_outputs = {o.name for o in g.output}
        consumers: dict[str, list[tuple[Any, int]]] = {}
        for n in g.node:
            for i, t in enumerate(n.input):
                if t:
                    consumers.setdefault(t, []).append((n, i))

        def single_next(n: Any) -> Any:
            outs = [o for o in n.output if o]
            if len(outs) != 1 or outs[0] in graph_outputs:
                return None
            users = consumers.get(outs[0], [])
            if len(users) != 1 or users[0][1] != 0:
                return None
            return users[0][0]

        groups: dict[str, list[str]] = {}
        for n in execution_order(g):
            if n.op_type != "Conv":
                continue
            chain = [n]
            nxt = single_next(n)
            if nxt is not None and nxt.op_type == "BatchNormalization":
                chain.append(nxt)
                after = single_next(nxt)
                if after is not None and after.op_type == "Relu":
                    chain.append(after)
            elif nxt is not None and nxt.op_type == "Relu":
                chain.append(nxt)
            if len(chain) > 1:
                names = [node_name(m) for m in chain]
                for m in names:
                    groups[m] = names
        return groups

    def _absorbed(self, groups: dict[str, list[str]], nodes: Mapping[str, Any]) -> set[str]:
        """Quantize/dequantize nodes between the members of a fused chain in the lowered graph (the fused op
        computes through them); a chain whose members are joined by anything else is not fused."""
        absorbed: set[str] = set()
        inits = set(self._inits)
        for chain in {tuple(c) for c in groups.values()}:
            inside: set[str] = set()
            ok = all(m in nodes for m in chain)
            for a, b in zip(chain, chain[1:]):
                if not ok:
                    break
                tensor = nodes[b].input[0]
                while True:
                    node, _ = self._producer.get(tensor, (None, 0))
                    if node is None:
                        ok = False
                        break
                    if node.name == a:
                        break
                    if node.name in self.lowered.inserted or is_weight_dequantize(node, inits):
                        tensor = node.input[0]
                        continue
                    if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                        inside.add(node.name)
                        tensor = node.input[0]
                        continue
                    ok = False
                    break
            if ok:
                absorbed |= inside
            else:
                for m in chain:
                    groups.pop(m, None)
        return absorbed

    def _build(self) -> None:
        original = self.original.graph
        low = self.lowered.model.graph
        init_names = {t.name for t in original.initializer}
        for vi in original.input:
            if vi.name in init_names:
                continue
            x = vi.name
            dtype, shape = self._dtype_shape(x)
            data = self._add(SimOp(self._unique(x), "Data", "data", None,
                                   outputs=[Output(Value("feed", x), dtype, shape, "plain",
                                                   origin_dtype=self._orig_elem.get(x))]))
            self._chain_end[x] = (data.name, 0)
            if x in self.lowered.input_fp16:
                h = self.lowered.input_fp16[x]
                origin = (x, 0)
                cast = self._add(SimOp(self._trans_name("Cast"), "Cast", "exec", [], [(data.name, 0)],
                                       [Output(Value("run", h), np.dtype(np.float16), shape, "plain", origin,
                                               self._orig_elem.get(x))]))
                self._chain_end[x] = (cast.name, 0)
                if shape is not None and len(shape) == 4:
                    td = self._add(SimOp(self._trans_name("TransData"), "TransData", "exec", [], [(cast.name, 0)],
                                         [Output(Value("run", h), np.dtype(np.float16), shape, "5hd", origin,
                                                 self._orig_elem.get(x))]))
                    self._chain_end[x] = (td.name, 0)

        low_nodes = execution_order(low)
        by_name = {n.name: n for n in low_nodes}
        groups = self._plan_fusion()
        absorbed = self._absorbed(groups, by_name)
        inits = set(self._inits)
        for node in low_nodes:
            if node.name in self.lowered.inserted or node.name in absorbed or is_weight_dequantize(node, inits):
                continue
            chain = groups.get(node.name)
            if chain is not None and node.name != chain[-1]:
                continue
            first = by_name[chain[0]] if chain else node
            if chain:
                name = self._unique("".join(chain))
                op_type, originals = FUSED_TYPE, list(chain)
                self.fused.append(list(chain))
            else:
                name = self._unique(node.name)
                op_type, originals = DEVICE_TYPES.get(node.op_type, node.op_type), [node.name]
            kind = "const" if node.op_type == "Constant" or node.name in self._folded else "exec"
            if kind == "const" and not chain:
                op_type = "Const"  # folded into Const data: its "no dump file" row says so, as the compiled graph does
            attrs: list[dict[str, Any]] = []
            data_inputs = list(first.input)
            if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
                # AscendQuant/AscendDequant take the scale and offset as attributes, not as inputs
                data_inputs = data_inputs[:1]
                attrs = self._quant_attrs(node)
            inputs = [self.resolve(t) if t else None for t in data_inputs]
            rule = "matmul" if first.op_type in ("MatMul", "Gemm") else "activation"
            outputs = []
            for k, t in enumerate(node.output):
                value = self.value_name(t) if t else ""
                dtype, shape = self._dtype_shape(value) if value else (None, None)
                if node.op_type == "QuantizeLinear":
                    origin = None
                elif node.op_type == "DequantizeLinear":
                    origin = self._dequantized_origin(node)
                else:
                    origin = (node.name, k)
                outputs.append(Output(Value("run", value), dtype, shape, "plain" if kind == "const" else rule,
                                      origin, self._origin_dtype(origin)))
            op = self._add(SimOp(name, op_type, kind, originals, inputs, outputs, onnx_type=first.op_type,
                                 attrs=attrs))
            for m in chain or [node.name]:
                self._node_op[m] = op
            if first.op_type == "Conv" and len(inputs) > 1 and inputs[1] is not None:
                weight = self.by_name[inputs[1][0]]
                if weight.kind == "const":
                    out = weight.outputs[0]
                    out.rule = "fz"
                    out.groups = next((int(a.i) for a in first.attribute if a.name == "group"), 1)
                    out.layout = None
        self._outputs()

    def _quant_attrs(self, node: Any) -> list[dict[str, Any]]:
        from onnx import numpy_helper

        values = []
        for t in node.input[1:3]:
            init = self._inits.get(t)
            values.append(None if init is None else numpy_helper.to_array(init))
        attrs = []
        scale = values[0] if values else None
        offset = values[1] if len(values) > 1 else None
        if scale is not None and scale.size == 1:
            key = "scale" if node.op_type == "QuantizeLinear" else "deq_scale"
            attrs.append({"key": key, "value": {"f": float(scale.reshape(-1)[0])}})
        if offset is not None and offset.size == 1:
            attrs.append(_attr_i("offset", int(offset.reshape(-1)[0])))
        return attrs

    def _dequantized_origin(self, node: Any) -> tuple[str, int] | None:
        producer = self._producer.get(node.input[0])
        if producer is None:
            return None
        q = producer[0]
        if q.op_type != "QuantizeLinear":
            return None
        p_name, k = self.resolve(q.input[0])
        return self.by_name[p_name].outputs[k].origin

    def _outputs(self) -> None:
        refs: list[tuple[str, int] | None] = []
        for vi in self.original.graph.output:
            try:
                ref = self.resolve(vi.name)
            except KeyError:
                refs.append(None)
                continue
            op = self.by_name[ref[0]]
            out = op.outputs[ref[1]]
            if out.settle() not in ("ND", "NCHW"):
                td = self._add(SimOp(self._trans_name("TransData"), "TransData", "exec", [], [ref],
                                     [Output(out.value, out.dtype, out.shape, "plain", out.origin, out.origin_dtype)]))
                ref = (td.name, 0)
            if out.dtype is not None and out.dtype == np.float16 and self._orig_elem.get(vi.name) == "DT_FLOAT":
                cast = self._add(SimOp(self._trans_name("Cast"), "Cast", "exec", [], [ref],
                                       [Output(Value("fp32", out.value.name), np.dtype(np.float32), out.shape,
                                               "plain", out.origin, out.origin_dtype)]))
                ref = (cast.name, 0)
            refs.append(ref)
        self._add(SimOp(self._unique("Node_Output"), "NetOutput", "netoutput", [], refs))

    # -- queries ---------------------------------------------------------------------------------------------
    def input_outputs(self, op: SimOp) -> list[Output | None]:
        """The producer output each input of `op` reads (None for an absent optional input)."""
        return [None if ref is None else self.by_name[ref[0]].outputs[ref[1]] for ref in op.inputs]

    # -- JSON --------------------------------------------------------------------------------------------------
    def to_json(self, precision: str) -> dict[str, Any]:
        graph_inputs = [f"{op.name}:0" for op in self.ops if op.kind == "data"]
        return {
            "name": self.model_name,
            "version": 2,
            "attr": [_attr_s("framework_type", "Onnx"), _attr_s("soc_version", "dumpcmp-simulated"),
                     _attr_s("dumpcmp_precision", precision)],
            "graph": [{"name": f"{self.model_name}_NPU_0", "input": graph_inputs, "attr": [],
                       "op": [self._op_json(op) for op in self.ops]}],
        }

    def _op_json(self, op: SimOp) -> dict[str, Any]:
        attrs: list[dict[str, Any]] = []
        if op.originals is not None:
            attrs.append(_attr_list_s(ATTR_ORIGINAL_OP_NAMES, op.originals))
        if op.onnx_type:
            attrs.append(_attr_s("_onnx_op_type", op.onnx_type))
        attrs.extend(op.attrs)
        if op.kind == "data":
            inputs = [""]
            input_desc = [_desc(op.outputs[0], origin=False)]
        else:
            inputs = ["" if ref is None else f"{ref[0]}:{ref[1]}" for ref in op.inputs]
            input_desc = [{} if out is None else _desc(out, origin=False) for out in self.input_outputs(op)]
        result: dict[str, Any] = {"name": op.name, "type": op.type, "id": op.id, "input": inputs, "attr": attrs,
                                  "input_desc": input_desc, "output_desc": [_desc(o) for o in op.outputs]}
        return result

    def json_text(self, precision: str) -> str:
        """The graph JSON, as `simulate` writes it."""
        return json.dumps(self.to_json(precision), indent=1) + "\n"


def _attr_s(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"s": value}}


def _attr_i(key: str, value: int) -> dict[str, Any]:
    return {"key": key, "value": {"i": int(value)}}


def _attr_list_s(key: str, values: Sequence[str]) -> dict[str, Any]:
    inner: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
    if values:
        inner = {"s": list(values), "val_type": "VT_LIST_STRING"}
    return {"key": key, "value": {"list": inner}}


def _attr_list_i(key: str, values: Sequence[int]) -> dict[str, Any]:
    inner: dict[str, Any] = {"val_type": "VT_LIST_INT"}
    if values:
        inner = {"i": [int(v) for v in values], "val_type": "VT_LIST_INT"}
    return {"key": key, "value": {"list": inner}}


def _desc(out: Output, origin: bool = True) -> dict[str, Any]:
    fmt = out.settle()
    desc: dict[str, Any] = {"dtype": dt_name(out.dtype) or "DT_UNDEFINED", "layout": fmt}
    dims = device_dims(out)
    if dims is not None:
        desc["shape"] = {"dim": dims}
    attrs: list[dict[str, Any]] = []
    if out.shape is not None:
        plain = plain_format(fmt, len(out.shape))
        attrs.append(_attr_s("origin_format", plain))
        attrs.append(_attr_list_i("origin_shape", out.shape))
    if out.origin_dtype:
        attrs.append(_attr_s("origin_data_type", out.origin_dtype))
    if origin and out.origin is not None:
        attrs.append(_attr_s(ATTR_ORIGIN_NAME, out.origin[0]))
        attrs.append(_attr_i(ATTR_ORIGIN_OUTPUT_INDEX, out.origin[1]))
        if out.shape is not None:
            attrs.append(_attr_s(ATTR_ORIGIN_FORMAT, plain_format(fmt, len(out.shape))))
        if out.origin_dtype:
            attrs.append(_attr_s("_datadump_origin_data_type", out.origin_dtype))
    desc["attr"] = attrs
    return desc

