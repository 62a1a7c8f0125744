"""Lower-precision versions of an ONNX model that onnxruntime's CPU provider can run.

fp16: every FLOAT tensor of the model (weights, activations) is stored as float16 between ops, and each op computes
in float32 on the float16 values: Cast nodes to float32 in front of its float inputs and a Cast to float16 after
each float output. That is how an NPU computes (fp16 tensors in memory, fp32 accumulation in the cube and vector
units, rounded when the result is stored), it needs no float16 kernel in onnxruntime (the CPU provider lacks many),
and results do not depend on which ops happen to have one. onnxconverter-common's converter was not used: it adds
a dependency, and it keeps whole ops in float32 where kernels are missing, so their outputs would not be rounded.
A node with subgraphs (If/Loop/Scan left after `dumpcmp.onnx.controlflow` inlined the static Ifs) is one op: its body
computes in float32 on the float16 values it reads from the enclosing graph, its outputs rounded like any op's.

Before lowering, as a compiler does: float Constant nodes become weights (`constants_to_initializers`), and a
BatchNormalization after a Conv is folded into the Conv's weights and bias in float32 (`fold_conv_bn`). A weight or
constant whose finite values exceed float16's range is a finding (`Lowered.findings`), not an error.

int8: onnxruntime's static quantizer (QDQ format, int8 activations and weights, MinMax calibration on the samples)
quantizes the inputs of Conv, Gemm and MatMul, as an NPU's int8 model does (AscendQuant in front of the cube ops,
int8 weights); their outputs and every other op stay floating point, then lowered to float16 as above. Scales and
zero points, and weights dequantized from int8, stay float32 so that int8 x scale is exact. The quantizer names what it
adds after the tensors it quantizes (`{x}_quantized`, `{x}_scale`, `{x}_QuantizeLinear`, ...), and a model may
already hold such names; it also copies a bias several ops share as `{b}0`, `{b}1`, ..., which may be other tensors'
names (nmp.onnx of basic-pitch). So it quantizes a copy whose every name is a neutral token (`rename_all`), and the
names come back afterwards, each added name made unique.

Inputs that are sizes rather than data (Resize's roi and scales, Upsample's scales) stay float32: on the device they
are attributes, and a Cast in front of an empty scales tensor makes onnxruntime see scales and sizes both given.
"""

from __future__ import annotations

import contextlib
import logging
import re
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from dumpcmp.errors import DumpcmpError
from dumpcmp.onnx.model import execution_order, subgraph_outer_names, subgraphs
from dumpcmp.support.files import create_temp_folder, discard

QUANTIZED_OP_TYPES = ("Conv", "Gemm", "MatMul")
_FLOAT = 1  # onnx.TensorProto.FLOAT
_FLOAT16 = 10
_SUFFIX_FP32 = "__dumpcmp_fp32"
_SUFFIX_FP16 = "__dumpcmp_fp16"
_SUFFIX_RAW = "__dumpcmp_raw"
_SCRATCH_LOCK = threading.Lock()
_TOKEN = "dcq"
_TOKEN_RE = re.compile(_TOKEN + r"(\d+)t(.*)\Z", re.DOTALL)
SIZE_INPUTS = {"Resize": (1, 2), "Upsample": (1,)}
"""op type -> input positions that are sizes or coordinates, not data: never rounded to float16."""


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
    findings: list[str] = field(default_factory=list)
    """Weights or constants whose finite float32 values do not fit float16 (they become inf on the device)."""


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


FP16_MAX = 65504.0


def _const_values(graph: Any) -> dict[str, Any]:
    """name -> TensorProto of every initializer and Constant node value of `graph`."""
    out = {t.name: t for t in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and n.output:
            for attr in n.attribute:
                if attr.name == "value" and attr.HasField("t"):
                    out[n.output[0]] = attr.t
    return out


def fold_conv_bn(model: Any) -> tuple[Any, list[tuple[str, str]]]:
    """`model` with every BatchNormalization that follows a Conv (its only consumer, input 0) folded into the
    Conv's weights and bias in float64, rounded once to float32, as a compiler does before lowering precision.
    The BatchNormalization becomes an Identity of the same name and output, so names and the fused chain stay;
    Constant nodes only the folded parameters used are dropped. Returns the model and the (conv, bn) pairs.
    Nodes must be named (`dumpcmp.onnx.model.name_nodes`)."""
    import onnx
    from onnx import helper, numpy_helper

    graph = model.graph
    consts = _const_values(graph)
    consumers: dict[str, list[tuple[Any, int]]] = {}
    for n in graph.node:
        for i, t in enumerate(n.input):
            if t:
                consumers.setdefault(t, []).append((n, i))
    outputs = {o.name for o in graph.output}
    producer = {o: n for n in graph.node for o in n.output if o}
    plan = []
    for bn in graph.node:
        if bn.op_type != "BatchNormalization" or len(bn.input) < 5 or len([o for o in bn.output if o]) != 1:
            continue
        conv = producer.get(bn.input[0])
        if conv is None or conv.op_type != "Conv" or len(conv.output) != 1 or conv.output[0] in outputs:
            continue
        if len(consumers.get(conv.output[0], [])) != 1 or len(conv.input) < 2:
            continue
        names = [conv.input[1], *(conv.input[2:3] if len(conv.input) > 2 and conv.input[2] else []), *bn.input[1:5]]
        if not all(x in consts and consts[x].data_type in (1, 10, 11) for x in names):
            continue
        plan.append((conv, bn))
    if not plan:
        return model, []
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    by_name = {n.name: n for n in g.node}
    taken = {t.name for t in g.initializer} | {x for n in g.node for x in list(n.input) + list(n.output)}
    pairs = []
    for conv0, bn0 in plan:
        conv, bn = by_name[conv0.name], by_name[bn0.name]
        w = numpy_helper.to_array(consts[conv.input[1]]).astype(np.float64)
        bias = (numpy_helper.to_array(consts[conv.input[2]]).astype(np.float64)
                if len(conv.input) > 2 and conv.input[2] else np.zeros(w.shape[0]))
        gamma, beta, mean, var = (numpy_helper.to_array(consts[x]).astype(np.float64) for x in bn.input[1:5])
        eps = next((a.f for a in bn.attribute if a.name == "epsilon"), 1e-5)
        scale = gamma / np.sqrt(var + eps)
        wf = (w * scale.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
        bf = ((bias - mean) * scale + beta).astype(np.float32)
        names = []
        for base, array in ((conv.name + "_bnfold_w", wf), (conv.name + "_bnfold_b", bf)):
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            taken.add(name)
            g.initializer.append(numpy_helper.from_array(array, name))
            names.append(name)
        del conv.input[1:]
        conv.input.extend(names)
        y = bn.output[0]
        bn.CopyFrom(helper.make_node("Identity", [bn.input[0]], [y], name=bn.name))
        pairs.append((conv.name, bn.name))
    used = {x for n in g.node for x in n.input} | {o.name for o in g.output}
    for n in g.node:
        used |= subgraph_outer_names(n)
    keep = [n for n in g.node if n.op_type != "Constant" or any(o in used for o in n.output)]
    del g.node[:]
    g.node.extend(keep)
    live = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(live)
    inputs = [vi for vi in g.input if vi.name in used or vi.name not in consts]
    del g.input[:]
    g.input.extend(inputs)
    return out, pairs


def constants_to_initializers(model: Any) -> Any:
    """`model` with its float Constant nodes (weights exported as nodes) turned into initializers, as a compiler
    holds them: Const data, never an executed op, and quantized as weights."""
    import onnx

    graph = model.graph
    outputs = {o.name for o in graph.output}
    moved = []
    for n in graph.node:
        t = next((a.t for a in n.attribute if a.name == "value" and a.HasField("t")), None)
        if n.op_type == "Constant" and t is not None and t.data_type == _FLOAT and n.output[0] not in outputs:
            moved.append((n, t))
    if not moved:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    names = {n.output[0] for n, _ in moved}
    keep = [n for n in g.node if not (n.op_type == "Constant" and n.output and n.output[0] in names)]
    for n, t in moved:
        init = g.initializer.add()
        init.CopyFrom(t)
        init.name = n.output[0]
    del g.node[:]
    g.node.extend(keep)
    return out


def overflow_findings(model: Any, names: set[str]) -> list[str]:
    """The weights and constants among `names` whose finite values exceed float16's range."""
    from onnx import numpy_helper

    found = []
    for name, t in _const_values(model.graph).items():
        if name not in names or t.data_type != _FLOAT:
            continue
        a = numpy_helper.to_array(t)
        finite = a[np.isfinite(a)]
        if finite.size and float(np.abs(finite).max()) > FP16_MAX:
            n = int((np.abs(finite) > FP16_MAX).sum())
            found.append(f"weight/constant {name!r} holds {n} value{'s' * (n != 1)} beyond float16's range "
                         f"(max |x| {float(np.abs(finite).max()):.6g} > {FP16_MAX:g}): it becomes inf on the device")
    return found


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
        keep.update(node.input[i] for i in SIZE_INPUTS.get(node.op_type, ()) if i < len(node.input) and node.input[i])
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
    lowered = Lowered(out, precision, rounded=set(rounded), findings=overflow_findings(model, rounded))

    # old-opset models list their weights as graph inputs too: on the device they are weights, not inputs
    weights_as_inputs = [vi for vi in g.input if vi.name in initializers]
    if weights_as_inputs:
        keep_inputs = [vi for vi in g.input if vi.name not in initializers]
        del g.input[:]
        g.input.extend(keep_inputs)
        out.ir_version = max(out.ir_version, 4)
    for t in g.initializer:
        if t.name in rounded:
            array = numpy_helper.to_array(t)
            with np.errstate(over="ignore"):  # a weight beyond fp16 becomes inf, as on the device (a finding)
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
        outer = sorted(t for t in subgraph_outer_names(node) if t in rounded)
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


def rewrite_error(where: str, precision: str, what: str, error: BaseException) -> DumpcmpError:
    """The error for a lower-precision rewrite that failed: dumpcmp's fault, not the user's model."""
    text = str(error).strip().replace("\n", " ")
    text = text if len(text) < 600 else text[:600] + " ..."
    other = "fp16" if precision == "int8" else "int8"
    return DumpcmpError(f"{where}: dumpcmp's {precision} rewrite of this model failed ({what}: {type(error).__name__}: "
                        f"{text}). This is a dumpcmp bug, not a fault of the model when `dumpcmp golden` runs it: "
                        f"please report it with this message (and the model if you can share it); meanwhile try "
                        f"--precision {other}")


def check_runnable(lowered: Lowered, where: str) -> None:
    """Raise `rewrite_error` unless onnxruntime accepts the lowered model (the session every batch creates)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        ort.InferenceSession(lowered.model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as error:
        raise rewrite_error(where, lowered.precision, "onnxruntime refuses the rewritten model", error) from error


def blame_run_failure(error: DumpcmpError, original: Any, samples: Sequence[Mapping[str, np.ndarray]], where: str,
                      precision: str) -> DumpcmpError:
    """The error to report when onnxruntime failed to run the lowered model: `rewrite_error` when the failure came
    from onnxruntime and the original model runs on every sample (the rewrite is at fault), else `error` itself."""
    import onnxruntime as ort

    if not type(error.__cause__).__module__.startswith("onnxruntime"):
        return error  # not onnxruntime's run (a disk full, a bad path): nothing to do with the rewrite
    options = ort.SessionOptions()
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(original.SerializeToString(), options, providers=["CPUExecutionProvider"])
        for sample in samples:
            session.run(None, dict(sample))
    except Exception:
        return error  # the original fails too: the model or its inputs, as the message says
    return rewrite_error(where, precision, "onnxruntime cannot run the rewritten model, though it runs the original",
                         error.__cause__ or error)


def _graph_names(graph: Any, into: set[str]) -> None:
    for vi in (*graph.input, *graph.output, *graph.value_info):
        into.add(vi.name)
    into.update(t.name for t in graph.initializer)
    for n in graph.node:
        into.add(n.name)
        into.update(n.input)
        into.update(n.output)
        for g in subgraphs(n):
            _graph_names(g, into)


def _rename_graph(graph: Any, new: Any) -> None:
    for vi in (*graph.input, *graph.output, *graph.value_info):
        vi.name = new(vi.name)
    for t in graph.initializer:
        t.name = new(t.name)
    for n in graph.node:
        n.name = new(n.name)
        for i, x in enumerate(n.input):
            n.input[i] = new(x)
        for i, x in enumerate(n.output):
            n.output[i] = new(x)
        for g in subgraphs(n):
            _rename_graph(g, new)


def rename_all(model: Any) -> tuple[Any, dict[str, str]]:
    """A copy of `model` whose every tensor and node name (subgraphs too) is a neutral token `dcq{k}t`, and the map
    original -> token. One string always gets one token, so scopes and shadowing stay as they were; the closing `t`
    keeps a name the quantizer derives by appending (`dcq1t2`, `dcq1t_scale`) from being another token."""
    import onnx

    names: set[str] = set()
    _graph_names(model.graph, names)
    names.discard("")
    token = {name: f"{_TOKEN}{k}t" for k, name in enumerate(sorted(names))}
    out = onnx.ModelProto()
    out.CopyFrom(model)
    _rename_graph(out.graph, lambda x: token.get(x, x))
    return out, token


def restore_names(model: Any, token: Mapping[str, str]) -> None:
    """Give `model` (made from `rename_all`'s copy) its original names back, in place. A name derived from a token
    (`dcq3t_scale`) becomes the original's name with that tail, and every name the copy did not have is made unique
    against the original names and each other (`x_scale_1` when the model held an `x_scale` already)."""
    original = {t: name for name, t in token.items()}
    taken = set(token)
    done: dict[str, str] = {"": ""}

    def new(x: str) -> str:
        if x in done:
            return done[x]
        if x in original:
            done[x] = original[x]
            return done[x]
        m = _TOKEN_RE.match(x)
        base = original.get(f"{_TOKEN}{m.group(1)}t", x[: m.end(1) + 1]) + m.group(2) if m else x
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        done[x] = name
        return name

    _rename_graph(model.graph, new)


def quantize_int8(model: Any, samples: Sequence[Mapping[str, np.ndarray]], where: str) -> Any:
    """The QDQ int8 model of `model`, calibrated on `samples` (see the module doc)."""
    import onnx

    try:
        from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    except ImportError as error:  # pragma: no cover - onnxruntime always ships it
        raise DumpcmpError(f"int8 simulation needs onnxruntime.quantization: {error}") from error

    # One scratch folder, made by the safe writer in the temporary directory: named with this host and PID (the next
    # run removes it if this one is killed, SIGKILL or a crash), removed on every way out (an exception, Ctrl-C,
    # SIGTERM), and holding onnxruntime's own scratch folders too (tempfile's folder points into it meanwhile; that
    # folder is one per process, so quantizations in two threads take turns).
    with _SCRATCH_LOCK:
        tmp = create_temp_folder(tempfile.gettempdir(), "simulate-int8")
        previous = tempfile.tempdir
        try:
            tempfile.tempdir = tmp
            src, dst = Path(tmp) / "model.onnx", Path(tmp) / "model.int8.onnx"
            neutral, token = rename_all(model)
            onnx.save(neutral, str(src))
            renamed = [{token.get(k, k): v for k, v in sample.items()} for sample in samples]
            try:
                with _quiet():
                    quantize_static(str(src), str(dst), _Reader(renamed), quant_format=QuantFormat.QDQ,
                                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                                    op_types_to_quantize=list(QUANTIZED_OP_TYPES),
                                    extra_options={"QDQKeepRemovableActivations": True,
                                                   "OpTypesToExcludeOutputQuantization": list(QUANTIZED_OP_TYPES)})
            except DumpcmpError:
                raise
            except Exception as error:
                raise rewrite_error(where, "int8", "onnxruntime's int8 quantizer failed", error) from error
            quantized = onnx.load(str(dst))
            restore_names(quantized, token)
            return quantized
        finally:
            tempfile.tempdir = previous
            discard(tmp)
