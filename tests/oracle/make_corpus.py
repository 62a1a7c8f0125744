"""The oracle corpus: a small compiled model's device dumps, ground truth and graph JSON, generated from a fixed seed.

Both `regenerate.py` (which runs the original tool, msaccucmp, on it) and `tests/oracle/test_oracle.py` (which runs
dumpcmp on it and checks the result against the original's committed outputs) build it with `build(directory)`, so
only the original's outputs are committed. Whatever changes here changes the expected outputs: regenerate them.

It covers every dtype (fp32, fp16, bf16, int8, int32, bool) and the device layouts (NCHW, NHWC, NC1HWC0, FRACTAL_Z,
FRACTAL_NZ, ND) with shapes that need padding, ops fused one-to-many and many-to-one, compiler-inserted Cast and
TransData, quant/dequant ops named as the compression toolkit names them, an int8 Cast and an int8 weight, all-zero
tensors on either side, NaN/inf, a scalar, ops missing on either side, undumped Data/Const ops, and a second device
dump of the same model (NPU vs NPU).

    python tests/oracle/make_corpus.py OUT_DIR
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from helpers import graphjson as gj  # noqa: E402  (tests/helpers/graphjson.py)

import dumpcmp  # noqa: E402
from dumpcmp import TensorData  # noqa: E402
from dumpcmp.dumps import layout, naming  # noqa: E402

SEED = 11
TIMESTAMP = 1700000000000000
GT_TIMESTAMP = 1700000000000001

# The single-operator runs: (device op, kind, index). Regenerated and tested together with the model-level run.
SINGLE_OPS = [
    ("conv1relu1", "output", 0),   # fused one-to-many, NC1HWC0 with padded channels
    ("conv1relu1", "input", 1),    # FRACTAL_Z weight from a Const
    ("pool1", "output", 0),        # NHWC device vs NCHW ground truth
    ("matmul", "output", 0),       # FRACTAL_NZ with padding
    ("nan_op", "output", 0),       # NaN and inf in the device tensor
    ("zero_gt", "output", 0),      # all-zero ground truth
    ("exact32", "output", 0),      # fp32 with relative differences near 1e-6
    ("greater", "output", 0),      # bool
    ("softmax", "output", 0),      # bf16 device tensor
    ("scalar_op", "output", 0),    # a scalar
    ("conv2_dequant_layer", "output", 0),  # the quantized model's dequant op (run with -q)
]
QUANT_SINGLE_OPS = {"conv2_dequant_layer"}


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b for float32 matrices, the same bits on every CPU: each element is math.fsum of its products (exact in
    float64), rounded to float32. `a @ b` goes through BLAS, whose kernel, and so its summation order and last bits,
    depends on the CPU: on an AVX-512 Xeon, OpenBLAS gave other float32 values than on the AVX2 host, and the
    original's committed outputs no longer matched the corpus."""
    out = np.empty((a.shape[0], b.shape[1]), np.float32)
    for i, j in np.ndindex(out.shape):
        out[i, j] = math.fsum(float(u) * float(v) for u, v in zip(a[i], b[:, j]))
    return out


def single_op_args(paths: dict[str, Path], op: str) -> list[str]:
    """The corpus arguments of a single-op run: -l, -r, -f (and -q for the quantized model's ops), as dumpcmp
    spells them; msaccucmp takes -m, -g, -f, -q."""
    if op in QUANT_SINGLE_OPS:
        return ["-l", str(paths["q_dump"]), "-r", str(paths["q_gt"]), "-f", str(paths["q_graph"]),
                "-q", str(paths["q_rule"])]
    return ["-l", str(paths["dump"]), "-r", str(paths["gt"]), "-f", str(paths["graph"])]

DTYPES = {"float32": "DT_FLOAT", "float16": "DT_FLOAT16", "bfloat16": "DT_BF16", "int8": "DT_INT8",
          "int32": "DT_INT32", "bool": "DT_BOOL"}
DUMP_TYPES = {"DT_FLOAT": "FLOAT", "DT_FLOAT16": "FLOAT16", "DT_BF16": "BF16", "DT_INT8": "INT8",
              "DT_INT32": "INT32", "DT_BOOL": "BOOL"}


class Corpus:
    """Collects graph ops, device tensors and ground-truth arrays; writes them at the end."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.ops: list[dict[str, Any]] = []
        self.dumps: dict[str, dict[str, Any]] = {}    # op name -> {"type", "inputs", "outputs"}
        self.truth: dict[str, np.ndarray] = {}         # original op -> its output 0
        self.values: dict[str, np.ndarray] = {}        # "{op}:{index}" -> device output's plain values (for inputs)

    def normal(self, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def op(self, name: str, op_type: str, inputs: list[tuple[str, TensorData, dict[str, Any]]],
           outputs: list[tuple[TensorData, dict[str, Any]]], originals: Any = gj.ABSENT, dumped: bool = True,
           extra_attrs: list[dict[str, Any]] | None = None) -> None:
        graph_op = gj.op(name, op_type, len(self.ops), inputs=[src for src, _, _ in inputs], originals=originals,
                         outputs=[d for _, d in outputs], input_descs=[d for _, _, d in inputs])
        if extra_attrs:
            graph_op["attr"].extend(extra_attrs)
        self.ops.append(graph_op)
        if dumped:
            self.dumps[name] = {"type": op_type, "inputs": [t for _, t, _ in inputs],
                                "outputs": [t for t, _ in outputs]}

    def write(self, out: Path, npu2: bool = True) -> dict[str, Path]:
        dump_dir, gt_dir, npu2_dir = out / "dump", out / "gt", out / "npu2"
        for d in (dump_dir, gt_dir) + ((npu2_dir,) if npu2 else ()):
            d.mkdir(parents=True, exist_ok=True)
        for task, (name, spec) in enumerate(self.dumps.items(), start=1):
            file_name = f"{spec['type']}.{name}.{task}.{TIMESTAMP}"
            dumpcmp.write_dump(dump_dir / file_name, op_name=name, inputs=spec["inputs"],
                               outputs=spec["outputs"], dump_time=TIMESTAMP)
            if npu2:
                dumpcmp.write_dump(npu2_dir / file_name, op_name=name, inputs=[self._other(t) for t in spec["inputs"]],
                                   outputs=[self._other(t) for t in spec["outputs"]], dump_time=TIMESTAMP)
        for key, array in self.truth.items():
            np.save(gt_dir / f"{key}.0.{GT_TIMESTAMP}.npy", array)
        graph = out / "model.json"
        graph.write_text(json.dumps(gj.document(*self.ops, model="oracle_net")), encoding="utf-8")
        return {"dump": dump_dir, "gt": gt_dir, "npu2": npu2_dir, "graph": graph}

    def _other(self, t: TensorData) -> TensorData:
        """The same tensor from a second device run: small, deterministic changes in the stored values."""
        a = np.asarray(t.array)
        if a.dtype == np.bool_:
            b = a.copy()
            b.reshape(-1)[::7] ^= True
        elif np.issubdtype(a.dtype, np.integer):
            b = a.copy()
            b.reshape(-1)[::5] += 1
        else:
            b = (a.astype(np.float32) * np.float32(1.001) + np.float32(0.0005)).astype(a.dtype)
        return TensorData(b, data_type=t.data_type, format=t.format, shape=t.shape,
                          original_shape=t.original_shape, sub_format=t.sub_format, address=t.address)


def _desc(dtype: str, fmt: str, shape: tuple[int, ...], origin_shape: tuple[int, ...] | None,
          origin_name: str | None = None, origin_index: int | None = None,
          origin_format: str | None = None) -> dict[str, Any]:
    return gj.desc(dtype=dtype, layout=fmt, shape=shape, origin_name=origin_name, origin_index=origin_index,
                   origin_format=origin_format, ge_origin_format=origin_format or fmt,
                   origin_shape=origin_shape if origin_shape is not None else shape)


def _device(values: np.ndarray, dtype: str, fmt: str, plain_fmt: str, address: int,
            original_shape: tuple[int, ...] | None = None) -> tuple[TensorData, tuple[int, ...]]:
    """Encode plain values (in `plain_fmt`) into the device layout; returns the tensor and its device shape."""
    np_dtype = {"DT_FLOAT": np.float32, "DT_FLOAT16": np.float16, "DT_BF16": np.float32, "DT_INT8": np.int8,
                "DT_INT32": np.int32, "DT_BOOL": np.bool_}[dtype]
    stored = values.astype(np_dtype)
    if fmt != plain_fmt:
        stored = layout.convert(stored, plain_fmt, fmt)
    # The original shape is in the plain (framework) format, as the compiler records it.
    shape = tuple(stored.shape)
    orig = tuple(values.shape) if original_shape is None else original_shape
    return TensorData(stored, data_type=DUMP_TYPES[dtype], format=fmt, original_shape=orig,
                      address=address), shape


def _helpers(c: Corpus, base: int) -> tuple[Any, Any]:
    """`out(...)` and `inp(...)`: a device tensor with its graph description, addresses counted from `base`."""
    addr = iter(range(base, base + 0x10000000, 0x10000))

    def out(values: np.ndarray, dtype: str, fmt: str, plain_fmt: str, origin: str | None = None, index: int = 0,
            origin_format: str | None = None) -> tuple[TensorData, dict[str, Any]]:
        t, shape = _device(values, dtype, fmt, plain_fmt, next(addr))
        return t, _desc(dtype, fmt, shape, tuple(values.shape), origin, None if origin is None else index,
                        origin_format or plain_fmt)

    def inp(src: str, values: np.ndarray, dtype: str, fmt: str, plain_fmt: str,
            origin_format: str | None = None) -> tuple[str, TensorData, dict[str, Any]]:
        t, shape = _device(values, dtype, fmt, plain_fmt, next(addr))
        return src, t, _desc(dtype, fmt, shape, tuple(values.shape), origin_format=origin_format or plain_fmt)

    return out, inp


def build_corpus(seed: int = SEED) -> Corpus:
    c = Corpus(seed)
    out, inp = _helpers(c, 0x10000000)

    # Undumped Data and Const ops with ground truth.
    x = c.normal((1, 3, 5, 5))
    w = c.normal((20, 3, 3, 3), 0.3)
    c.truth["data"] = x
    c.truth["weight"] = w
    c.op("data", "Data", [], [(TensorData(x), _desc("DT_FLOAT", "NCHW", x.shape, x.shape))], dumped=False)
    c.op("weight", "Const", [], [(TensorData(w), _desc("DT_FLOAT", "NCHW", w.shape, w.shape))], dumped=False)

    # Inserted TransData NCHW fp32 -> NC1HWC0 fp16 (C = 3 padded to 16).
    c.op("trans_data_0", "TransData", [inp("data:0", x, "DT_FLOAT", "NCHW", "NCHW")],
         [out(x, "DT_FLOAT16", "NC1HWC0", "NCHW")], originals=[])

    # Fused conv1 + relu1 (one-to-many): NC1HWC0 input, FRACTAL_Z weight (N = 20, C = 3), output C = 20 -> C1 = 2.
    conv1 = c.normal((1, 20, 5, 5))
    relu1 = np.maximum(conv1, 0)
    c.truth["conv1"] = conv1
    c.truth["relu1"] = relu1
    relu1_dev = relu1 + c.normal(relu1.shape, 0.01)
    c.op("conv1relu1", "Conv2D",
         [inp("trans_data_0:0", x + c.normal(x.shape, 0.002), "DT_FLOAT16", "NC1HWC0", "NCHW"),
          inp("weight:0", w, "DT_FLOAT16", "FRACTAL_Z", "NCHW")],
         [out(relu1_dev, "DT_FLOAT16", "NC1HWC0", "NCHW", origin="relu1")], originals=["conv1", "relu1"])

    # NHWC device output vs NCHW ground truth.
    pool1 = relu1[:, :, ::2, ::2].copy()
    c.truth["pool1"] = pool1
    c.op("pool1", "MaxPool", [inp("conv1relu1:0", relu1_dev, "DT_FLOAT16", "NC1HWC0", "NCHW")],
         [out(pool1 + c.normal(pool1.shape, 0.01), "DT_FLOAT16", "NHWC", "NCHW", origin="pool1")])

    # FRACTAL_NZ matmul (M = 18, K = 20, N = 33: padding on both axes), with a second Data input.
    a = c.normal((18, 20))
    b = c.normal((20, 33), 0.2)
    mm = _matmul(a, b)
    c.truth["data2"] = a
    c.truth["matmul"] = mm
    c.op("data2", "Data", [], [(TensorData(a), _desc("DT_FLOAT", "ND", a.shape, a.shape))], dumped=False)
    mm_dev = mm + c.normal(mm.shape, 0.003)
    c.op("matmul", "MatMulV2", [inp("data2:0", a, "DT_FLOAT16", "FRACTAL_NZ", "ND")],
         [out(mm_dev, "DT_FLOAT16", "FRACTAL_NZ", "ND", origin="matmul")])

    # Inserted Cast fp16 -> fp32 (ND), then a bf16 softmax.
    c.op("cast_fp32", "Cast", [inp("matmul:0", mm_dev, "DT_FLOAT16", "ND", "ND")],
         [out(mm_dev, "DT_FLOAT", "ND", "ND")], originals=[])
    sm = np.exp(mm) / np.exp(mm).sum(axis=1, keepdims=True)
    c.truth["softmax"] = sm.astype(np.float32)
    c.op("softmax", "SoftmaxV2", [inp("cast_fp32:0", mm_dev, "DT_FLOAT", "ND", "ND")],
         [out(sm * (1 + c.normal(sm.shape, 0.004)), "DT_BF16", "ND", "ND", origin="softmax")])

    # int32 and bool outputs.
    am = np.argmax(sm, axis=1).astype(np.int32)
    c.truth["argmax"] = am
    am_dev = am.copy()
    am_dev[3] += 1
    c.op("argmax", "ArgMaxV2", [inp("softmax:0", sm, "DT_BF16", "ND", "ND")],
         [out(am_dev, "DT_INT32", "ND", "ND", origin="argmax")])
    gt_mask = sm > 0.05
    c.truth["greater"] = gt_mask
    dev_mask = gt_mask.copy()
    dev_mask[0, :4] = ~dev_mask[0, :4]
    c.op("greater", "Greater", [inp("softmax:0", sm, "DT_BF16", "ND", "ND")],
         [out(dev_mask, "DT_BOOL", "ND", "ND", origin="greater")])

    # Many-to-one: two compiled ops stand for one original op "fc".
    fc_in = c.normal((4, 16))
    fc = c.normal((4, 16))
    c.truth["fc_in"] = fc_in
    c.truth["fc"] = fc
    c.op("fc_in", "Data", [], [(TensorData(fc_in), _desc("DT_FLOAT", "ND", fc_in.shape, fc_in.shape))],
         dumped=False)
    c.op("fc_part1", "MatMulV2", [inp("fc_in:0", fc_in, "DT_FLOAT16", "ND", "ND")],
         [out(fc * 0.5, "DT_FLOAT16", "ND", "ND")], originals=["fc"])
    c.op("fc_part2", "Add", [inp("fc_part1:0", fc * 0.5, "DT_FLOAT16", "ND", "ND")],
         [out(fc + c.normal(fc.shape, 0.01), "DT_FLOAT16", "ND", "ND", origin="fc")], originals=["fc"])

    # An int8 Cast the compiler did not insert (its own original) and an int8 weight used by a plain op.
    i8 = c.rng.integers(-100, 100, (2, 3, 4, 4)).astype(np.int8)
    c.truth["cast_int8"] = i8
    i8_dev = i8.copy()
    i8_dev.reshape(-1)[::9] += 1
    c.op("cast_int8", "Cast", [inp("data:0", x.reshape(-1)[:75].reshape(1, 3, 5, 5), "DT_FLOAT", "NCHW", "NCHW")],
         [out(i8_dev, "DT_INT8", "NCHW", "NCHW", origin="cast_int8")])
    iw = c.rng.integers(-50, 50, (8, 3, 1, 1)).astype(np.int8)
    c.truth["int8_weight"] = iw
    c.op("int8_weight", "Const", [], [(TensorData(iw), _desc("DT_INT8", "NCHW", iw.shape, iw.shape))],
         dumped=False)
    c.truth["int8_conv"] = c.normal((2, 8, 4, 4))
    c.op("int8_conv", "Conv2D", [inp("cast_int8:0", i8, "DT_INT8", "NCHW", "NCHW"),
                                 inp("int8_weight:0", iw, "DT_INT8", "NCHW", "NCHW")],
         [out(c.truth["int8_conv"] + c.normal((2, 8, 4, 4), 0.05), "DT_FLOAT16", "NCHW", "NCHW",
              origin="int8_conv")])

    # All-zero tensors: device side, ground truth, both.
    z = c.normal((2, 40))
    c.truth["zero_dev"] = z
    c.op("zero_dev", "Relu", [], [out(np.zeros_like(z), "DT_FLOAT16", "ND", "ND", origin="zero_dev")])
    c.truth["zero_gt"] = np.zeros((2, 40), np.float32)
    c.op("zero_gt", "Relu", [], [out(c.normal((2, 40), 0.1), "DT_FLOAT16", "ND", "ND", origin="zero_gt")])
    c.truth["zero_both"] = np.zeros((3, 7), np.float32)
    c.op("zero_both", "Relu", [], [out(np.zeros((3, 7), np.float32), "DT_FLOAT", "ND", "ND",
                                       origin="zero_both")])

    # NaN and inf in the device tensor (NCHW fp16).
    n = c.normal((1, 2, 3, 3), 10)
    c.truth["nan_op"] = n
    n_dev = n + c.normal(n.shape, 0.1)
    n_dev[0, 0, 0, 0] = np.inf
    n_dev[0, 1, 2, 1] = np.nan
    n_dev[0, 1, 0, 2] = -np.inf
    c.op("nan_op", "Mul", [], [out(n_dev, "DT_FLOAT16", "NCHW", "NCHW", origin="nan_op")])

    # A scalar, a dumped op without ground truth, a graph op without a dump.
    c.truth["scalar_op"] = np.array(2.5, np.float32)
    c.op("scalar_op", "ReduceSum", [], [out(np.array(2.4990234, np.float32), "DT_FLOAT", "ND", "ND",
                                            origin="scalar_op")])
    c.op("no_truth", "Relu", [inp("matmul:0", mm_dev, "DT_FLOAT16", "ND", "ND")],
         [out(c.normal((5, 6)), "DT_FLOAT16", "ND", "ND", origin="no_truth")])
    c.truth["no_dump"] = c.normal((4, 4))
    c.op("no_dump", "Relu", [inp("matmul:0", mm_dev, "DT_FLOAT16", "ND", "ND")],
         [out(c.truth["no_dump"], "DT_FLOAT16", "ND", "ND", origin="no_dump")], dumped=False)

    # fp32 vs fp32 with relative differences near 1e-6 (where float32 per-element terms show), NCHW and ND.
    e = c.normal((1, 4, 6, 5)) + np.float32(3.0)
    c.truth["exact32"] = e
    e_dev = (e.astype(np.float64) * (1 + c.rng.uniform(-2e-6, 2e-6, e.shape))).astype(np.float32)
    c.op("exact32", "Add", [inp("pool1:0", pool1, "DT_FLOAT16", "NHWC", "NCHW")],
         [out(e_dev, "DT_FLOAT", "NCHW", "NCHW", origin="exact32")])
    f = c.normal((7, 9)) * np.float32(100)
    c.truth["exact_nd"] = f
    f_dev = (f.astype(np.float64) * (1 + c.rng.uniform(-1e-6, 1e-6, f.shape))).astype(np.float32)
    c.op("exact_nd", "Mul", [inp("exact32:0", e_dev, "DT_FLOAT", "NCHW", "NCHW")],
         [out(f_dev, "DT_FLOAT", "ND", "ND", origin="exact_nd")])

    # Every dtype in every device layout: one output each, against an fp32 (bool: bool) ground truth.
    for dtype, layout_name in [(d, f) for d in DTYPES.values() for f in MATRIX_LAYOUTS]:
        name = f"m_{dtype[3:].lower()}_{layout_name.lower()}"
        plain, shape = ("ND", (18, 20)) if layout_name in ("FRACTAL_NZ", "ND") else ("NCHW", (20, 3, 3, 3))
        if dtype == "DT_BOOL":
            truth = c.rng.random(shape) < 0.5
            dev = truth.copy()
            dev.reshape(-1)[::11] ^= True
        elif dtype in ("DT_INT8", "DT_INT32"):
            truth = c.rng.integers(-100, 100, shape).astype(np.float32)
            dev = truth + (c.rng.random(shape) < 0.1)
        else:
            truth = c.normal(shape)
            dev = truth + c.normal(shape, 0.01)
        c.truth[name] = truth
        c.op(name, "Abs", [], [out(dev, dtype, layout_name, plain, origin=name)])
    return c


MATRIX_LAYOUTS = ("NCHW", "NHWC", "NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ", "ND")


def build_quant_corpus(seed: int = SEED + 1) -> Corpus:
    """A quantized model: AscendQuant (int8 NC1HWC0, C0 = 32) -> a conv inside the quant/dequant pair (int32) ->
    AscendDequant (fp16) -> a Relu, named as the compression toolkit names them; the original tool needs the quant
    fusion rule file (-q) for it."""
    c = Corpus(seed)
    out, inp = _helpers(c, 0x30000000)
    q_in = c.normal((1, 8, 4, 4))
    c.truth["q_in"] = q_in
    c.truth["conv2"] = c.normal((1, 8, 4, 4))
    c.truth["relu_q"] = np.maximum(c.truth["conv2"], 0)
    c.op("q_in", "Data", [], [(TensorData(q_in), _desc("DT_FLOAT", "NCHW", q_in.shape, q_in.shape))], dumped=False)
    q = np.clip(np.round(q_in * 40), -128, 127)
    c.op("conv2_quant_layer", "AscendQuant", [inp("q_in:0", q_in, "DT_FLOAT16", "NC1HWC0", "NCHW")],
         [out(q, "DT_INT8", "NC1HWC0", "NCHW")], originals=["conv2_quant_layer"])
    qw = np.clip(np.round(c.normal((8, 8, 1, 1)) * 40), -128, 127).astype(np.int8)
    c.truth["conv2_weight"] = qw
    c.op("conv2_weight", "Const", [], [(TensorData(qw), _desc("DT_INT8", "NCHW", qw.shape, qw.shape))],
         dumped=False)
    acc = c.rng.integers(-3000, 3000, (1, 8, 4, 4)).astype(np.int32)
    c.op("conv2", "Conv2D", [inp("conv2_quant_layer:0", q, "DT_INT8", "NC1HWC0", "NCHW"),
                             inp("conv2_weight:0", qw, "DT_INT8", "NCHW", "NCHW")],
         [out(acc, "DT_INT32", "NC1HWC0", "NCHW")], originals=["conv2"])
    deq = c.truth["conv2"] + c.normal((1, 8, 4, 4), 0.02)
    c.op("conv2_dequant_layer", "AscendDequant", [inp("conv2:0", acc, "DT_INT32", "NC1HWC0", "NCHW")],
         [out(deq, "DT_FLOAT16", "NC1HWC0", "NCHW", origin="conv2")], originals=["conv2_dequant_layer"])
    relu = np.maximum(deq, 0)
    c.op("relu_q", "Relu", [inp("conv2_dequant_layer:0", deq, "DT_FLOAT16", "NC1HWC0", "NCHW")],
         [out(relu, "DT_FLOAT16", "NC1HWC0", "NCHW", origin="relu_q")], originals=["relu_q"])
    return c


def quant_rule(c: Corpus) -> dict[str, Any]:
    """The quant fusion rule file (-q): the quantized model's ops, each its own original (an identity mapping)."""
    names = []
    for op in c.ops:
        for a in op["attr"]:
            if a["key"] == "_datadump_original_op_names":
                names += [n for n in a["value"]["list"].get("s", []) if n not in names]
    ops = [gj.op(name, "Layer", n, outputs=[gj.desc(dtype="DT_FLOAT", layout="NCHW", shape=(1, 8, 4, 4),
                                                     origin_shape=(1, 8, 4, 4))]) for n, name in enumerate(names)]
    return gj.document(*ops, model="oracle_quant_rule")


def build(directory: str | Path, seed: int = SEED) -> dict[str, Path]:
    """Write the corpus under `directory` (dump/, gt/, npu2/, model.json, and the quantized model in quant/: dump/,
    gt/, model.json, quant_rule.json); returns those paths (the quantized ones as q_dump, q_gt, q_graph, q_rule)."""
    directory = Path(directory)
    paths = build_corpus(seed).write(directory)
    qc = build_quant_corpus(seed + 1)
    q = qc.write(directory / "quant", npu2=False)
    rule = directory / "quant" / "quant_rule.json"
    rule.write_text(json.dumps(quant_rule(qc)), encoding="utf-8")
    paths.update(q_dump=q["dump"], q_gt=q["gt"], q_graph=q["graph"], q_rule=rule)
    paths["custom"] = write_custom_scripts(directory / "custom")
    paths["file_compare"] = write_file_compare(directory / "file_compare")
    paths["ffts_dump"], paths["ffts_npu2"], paths["ffts_gt"], paths["ffts_graph"] = write_ffts(directory / "ffts",
                                                                                             seed + 2)
    paths["hashed_dump"], paths["hashed_gt"] = write_hashed(paths, directory / "hashed")
    (paths["cf_dump"], paths["cf_npu2"], paths["cf_graph"],
     paths["cf_close"]) = write_close_fusion(directory / "close_fusion", seed + 3)
    return paths


CF_TIME = 1700000000000200


def write_close_fusion(directory: str | Path, seed: int) -> tuple[Path, Path, Path, Path]:
    """A fused model's device dump (left) against the same model compiled without fusion (right), with both graph
    JSONs (`-f` fused, `-cf` unfused): conv1+relu1 fused (float16 against float32), pool1+add1 fused into one op
    (NC1HWC0 on both sides), mul1 with two outputs whose unfused op lists them in the other order, an unfused op
    named unlike its original (Conv_1 for conv1), and a fused op whose original the unfused graph does not know."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, 4, 3, 3)).astype(np.float32)
    conv = rng.normal(size=(1, 4, 3, 3)).astype(np.float32)
    relu = np.maximum(conv, 0)
    pool = relu * 0.5
    add5 = rng.normal(size=(1, 1, 3, 3, 16)).astype(np.float16)
    mul = (rng.normal(size=(2, 6)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32))
    ghost = np.abs(mul[0])

    def noisy(a: np.ndarray, k: float) -> np.ndarray:
        return (a + np.asarray(k * np.sin(np.arange(a.size))).reshape(a.shape)).astype(a.dtype)

    addresses = iter(range(0x20000000, 0x30000000, 0x10000))  # the original prints NaN for the unfused side's

    def nchw(a: np.ndarray) -> TensorData:
        return TensorData(a, format="NCHW", address=next(addresses))

    def nc1hwc0(a: np.ndarray) -> TensorData:
        return TensorData(a, format="NC1HWC0", original_shape=(1, 4, 3, 3), address=next(addresses))

    def nd(a: np.ndarray) -> TensorData:
        return TensorData(a, address=next(addresses))

    root = Path(directory)
    left, right = root / "fused", root / "unfused"
    left.mkdir(parents=True)
    right.mkdir(parents=True)
    dumpcmp.write_dump(left / f"Conv2D.conv1relu1.1.{CF_TIME}", op_name="conv1relu1", inputs=[nchw(x)],
                       outputs=[nchw(noisy(relu, 0.01).astype(np.float16))])
    dumpcmp.write_dump(left / f"Add.pool1add1.2.{CF_TIME + 1}", op_name="pool1add1",
                       inputs=[nchw(noisy(relu, 0.01).astype(np.float16)), nchw(x)],
                       outputs=[nc1hwc0(noisy(add5, 0.02))])
    dumpcmp.write_dump(left / f"Mul.mul1.3.{CF_TIME + 2}", op_name="mul1", inputs=[nc1hwc0(noisy(add5, 0.02))],
                       outputs=[nd(noisy(mul[0], 0.001)), nd(noisy(mul[1], 0.003))])
    dumpcmp.write_dump(left / f"Abs.ghost1.4.{CF_TIME + 3}", op_name="ghost1", inputs=[nd(mul[0])],
                       outputs=[nd(ghost)])
    dumpcmp.write_dump(right / f"Conv2D.Conv_1.1.{CF_TIME}", op_name="Conv_1", inputs=[nchw(x)],
                       outputs=[nchw(conv)])
    dumpcmp.write_dump(right / f"Relu.relu1.2.{CF_TIME + 1}", op_name="relu1", inputs=[nchw(conv)],
                       outputs=[nchw(relu)])
    dumpcmp.write_dump(right / f"MaxPool.pool1.3.{CF_TIME + 2}", op_name="pool1", inputs=[nchw(relu)],
                       outputs=[nchw(pool)])
    dumpcmp.write_dump(right / f"Add.add1.4.{CF_TIME + 3}", op_name="add1", inputs=[nchw(pool), nchw(x)],
                       outputs=[nc1hwc0(add5)])
    # the unfused Mul lists the original's output 1 first
    dumpcmp.write_dump(right / f"Mul.mul1.5.{CF_TIME + 4}", op_name="mul1", inputs=[nc1hwc0(add5)],
                       outputs=[nd(mul[1]), nd(mul[0])])

    def d(a: np.ndarray, fmt: str, origin: str, index: int) -> dict[str, Any]:
        dtype = "DT_FLOAT16" if a.dtype == np.float16 else "DT_FLOAT"
        return gj.desc(dtype, fmt, a.shape, origin_name=origin, origin_index=index, ge_origin_format="NCHW"
                       if a.ndim >= 4 else "ND", origin_shape=(1, 4, 3, 3) if a.ndim >= 4 else a.shape)

    data = gj.op("data", "Data", 0, originals=["data"], outputs=[d(x, "NCHW", "data", 0)])
    fused = [data,
             gj.op("conv1relu1", "Conv2D", 1, inputs=["data:0"], originals=["conv1", "relu1"],
                   outputs=[d(relu.astype(np.float16), "NCHW", "relu1", 0)]),
             gj.op("pool1add1", "Add", 2, inputs=["conv1relu1:0", "data:0"], originals=["pool1", "add1"],
                   outputs=[d(add5, "NC1HWC0", "add1", 0)]),
             gj.op("mul1", "Mul", 3, inputs=["pool1add1:0"], originals=["mul1"],
                   outputs=[d(mul[0], "ND", "mul1", 0), d(mul[1], "ND", "mul1", 1)]),
             gj.op("ghost1", "Abs", 4, inputs=["mul1:0"], originals=["ghost"], outputs=[d(ghost, "ND", "ghost", 0)])]
    unfused = [data,
               gj.op("Conv_1", "Conv2D", 1, inputs=["data:0"], originals=["conv1"], outputs=[d(conv, "NCHW", "conv1",
                                                                                             0)]),
               gj.op("relu1", "Relu", 2, inputs=["Conv_1:0"], originals=["relu1"], outputs=[d(relu, "NCHW", "relu1",
                                                                                              0)]),
               gj.op("pool1", "MaxPool", 3, inputs=["relu1:0"], originals=["pool1"],
                     outputs=[d(pool, "NCHW", "pool1", 0)]),
               gj.op("add1", "Add", 4, inputs=["pool1:0", "data:0"], originals=["add1"],
                     outputs=[d(add5, "NC1HWC0", "add1", 0)]),
               gj.op("mul1", "Mul", 5, inputs=["add1:0"], originals=["mul1"],
                     outputs=[d(mul[1], "ND", "mul1", 1), d(mul[0], "ND", "mul1", 0)])]
    graphs = []
    for name, ops in (("fused.json", fused), ("unfused.json", unfused)):
        graphs.append(root / name)
        graphs[-1].write_text(json.dumps(gj.document(*ops, model=name[:-5])), encoding="utf-8")
    return left, right, graphs[0], graphs[1]


def write_hashed(paths: dict[str, Path], directory: Path) -> tuple[Path, Path]:
    """dump/ and gt/ again with every third file (by name), and the files the all-zero messages name, under a
    hashed name, as the runtime writes an over-long one: digits only for a device dump, `{digits}.npy` for a
    ground-truth file (the key msaccucmp looks up), each with its `{hash},{name}` row in the folder's mapping.csv."""
    out = []
    for side, suffix in (("dump", ""), ("gt", ".npy")):
        folder = directory / side
        folder.mkdir(parents=True)
        rows = []
        for n, src in enumerate(sorted(paths[side].iterdir())):
            name = src.name
            if n % 3 == 0 or name.startswith(("Relu.zero_dev.", "zero_gt.")):  # these two name a file in a message
                name = naming.hashed_name(src.name) + suffix
                rows.append(naming.mapping_row(name, src.name))
            shutil.copyfile(src, folder / name)
        (folder / naming.MAPPING_FILE).write_text("".join(rows), encoding="utf-8")
        out.append(folder)
    return out[0], out[1]


# FFTS+ sliced dumps (device vs device, both sides sliced alike): an auto-mode op (threads cut along axis 1
# unevenly, thread 2 of 3 missing), a manual-mode op (X_lxslice{N}, cut along
# axis 0, slice 2 of 3 missing), a manual op of two fp16 outputs (one cut, one not), an auto op without a cut axis
# (the last slice is compared) and a plain op; a ground truth of the merged values with a graph JSON whose ops take
# an undumped Data op's output.
FFTS_TIME = 1700000000000100


def _ffts_attr(mode: int, count: int, cuts: list[list[int]], slices: Any = None) -> list[tuple[str, str]]:
    facts: dict[str, Any] = {"threadMode": mode, "slice_instance_num": count, "outputCutList": cuts}
    if slices is not None:
        facts["output_tensor_slice"] = slices
    return [("_sgt_json_info", json.dumps(facts))]


def _dims(shape: tuple[int, ...], axis: int = -1, lo: int = 0, hi: int = 0) -> list[dict[str, int]]:
    return [{"lower": lo, "higher": hi} if d == axis else {"lower": 0, "higher": n} for d, n in enumerate(shape)]


def write_ffts(directory: str | Path, seed: int) -> tuple[Path, Path, Path, Path]:
    """The FFTS+ corpus: two device dump folders (left, right), a ground-truth folder and its graph JSON."""
    rng = np.random.default_rng(seed)
    conv = rng.normal(size=(2, 8, 3, 3)).astype(np.float32)
    relu = np.abs(rng.normal(size=(3, 4, 5))).astype(np.float32)
    two = rng.normal(size=(4, 6)).astype(np.float16), rng.normal(size=(3, 3)).astype(np.float16)
    whole = rng.normal(size=(5, 7)).astype(np.float32)
    x = rng.normal(size=(2, 8, 3, 3)).astype(np.float32)
    out = []
    for side, noise in (("left", 0.003), ("right", 0.0)):
        d = Path(directory) / side
        d.mkdir(parents=True, exist_ok=True)

        def put(name: str, op: str, inputs: list[np.ndarray], outputs: list[np.ndarray], attrs: Any) -> None:
            shift = [o + np.asarray(noise * np.cos(np.arange(o.size))).reshape(o.shape).astype(o.dtype)
                     for o in outputs]
            dumpcmp.write_dump(d / name, op_name=op, inputs=inputs, outputs=shift, dump_time=FFTS_TIME, attrs=attrs)

        # auto: channels 0-3 on thread 0, 4-5 on thread 1, 6-7 on thread 2 (missing)
        bounds = [(0, 4), (4, 6), (6, 8)]
        table = [[_dims(conv.shape, 1, lo, hi)] for lo, hi in bounds]
        for t, (lo, hi) in enumerate(bounds[:2]):
            stored = np.ascontiguousarray(conv[:, lo:hi])
            put(f"Conv2D.conv_auto.11.{FFTS_TIME}.4.3.{t}.0", "conv_auto", [x[:, lo:hi]], [stored],
                _ffts_attr(1, 3, [[1, 3, 1, 1]], table))
        # manual: one row of 3 per slice, slice 2 missing
        for k in range(2):
            put(f"Relu.relu_manual_lxslice{k}.12.{FFTS_TIME}.4.4.{k}.0", f"relu_manual_lxslice{k}", [relu[k:k + 1]],
                [relu[k:k + 1] * 2], _ffts_attr(0, 3, [[3, 1, 1]]))
        # manual, two outputs: the first cut along axis 0 in halves, the second not cut
        for k in range(2):
            put(f"Split.split_two_lxslice{k}.13.{FFTS_TIME}.4.5.{k}.0", f"split_two_lxslice{k}",
                [two[0][2 * k:2 * k + 2]], [two[0][2 * k:2 * k + 2], two[1]], _ffts_attr(0, 2, [[2, 1], [1, 1]]))
        # auto without a cut axis: the last slice is the op
        for t in range(2):
            put(f"Add.add_nocut.14.{FFTS_TIME}.4.6.{t}.0", "add_nocut", [whole], [whole + t],
                _ffts_attr(1, 2, [[1, 1]]))
        put(f"Mul.mul_plain.15.{FFTS_TIME}", "mul_plain", [whole], [whole * 3], [])
        out.append(d)
    gt = Path(directory) / "gt"
    gt.mkdir(parents=True, exist_ok=True)
    truth = {"add_nocut": ("Add", [whole + 1]), "conv_auto": ("Conv2D", [conv[:, :6]]),
             "mul_plain": ("Mul", [whole * 3]), "relu_manual": ("Relu", [relu[:2] * 2]),
             "split_two": ("Split", [two[0], two[1]])}
    ops = [gj.op("data0", "Data", 0, outputs=[gj.desc("DT_FLOAT", "ND", (1,), ge_origin_format="ND",
                                                      origin_shape=(1,))])]
    for k, (name, (op_type, arrays)) in enumerate(truth.items(), start=1):
        for i, a in enumerate(arrays):
            np.save(gt / f"{name}.{i}.{GT_TIMESTAMP}.npy", a.astype(np.float32))
        descs = [gj.desc("DT_FLOAT" if a.dtype == np.float32 else "DT_FLOAT16", "ND", a.shape, origin_name=name,
                         origin_index=i, ge_origin_format="ND", origin_shape=a.shape) for i, a in enumerate(arrays)]
        ops.append(gj.op(name, op_type, k, inputs=["data0:0"], originals=[name], outputs=descs))
    graph = Path(directory) / "model.json"
    graph.write_text(json.dumps(gj.document(*ops, model="ffts_net")), encoding="utf-8")
    return out[0], out[1], gt, graph


# The custom algorithm run (`compare -c DIR -alg ... -a ...`): plug-ins written into the corpus as text. One takes
# options, one raises on large tensors, two return what is not two strings, one takes two arguments (left out with a
# warning), a file whose name does not fit (left out), and a name that exists nowhere in the selection.
CUSTOM_ALG_SELECTION = "0,MeanDiff,Raiser,NotString,NoneRet,BadArgs,Nope,1"
CUSTOM_ALG_OPTIONS = "MeanDiff:scale=2;Raiser:limit=100"
CUSTOM_ALGS = {
    "alg_MeanDiff.py": (
        "import numpy as np\n\n\n"
        "def compare(my_output, ground_truth, args):\n"
        "    value = float(np.mean(np.abs(my_output.astype(np.float64) - ground_truth))) * float(args.scale)\n"
        "    return '%.4f' % value, '%s:%d:%s' % (my_output.dtype, my_output.size, args.shape_type.name)\n"),
    "alg_Raiser.py": (
        "def compare(my_output, ground_truth, args):\n"
        "    if my_output.size > int(args.limit):\n"
        "        raise ValueError('%d elements, more than %s' % (my_output.size, args.limit))\n"
        "    return str(my_output.size), ''\n"),
    "alg_NotString.py": (
        "def compare(my_output, ground_truth, args):\n"
        "    return float(my_output.size), ''\n"),
    "alg_NoneRet.py": (
        "def compare(my_output, ground_truth, args):\n"
        "    return None\n"),
    "alg_BadArgs.py": (
        "def compare(my_output, ground_truth):\n"
        "    return '1', ''\n"),
    "badname.py": "def compare(a, b, c):\n    return '1', ''\n",
}


def write_custom_scripts(directory: str | Path) -> Path:
    """The `-c DIR` folder of the custom algorithm run: DIR/algorithm/alg_*.py."""
    folder = Path(directory) / "algorithm"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in CUSTOM_ALGS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return Path(directory)


def convert_dump(paths: dict[str, Path]) -> Path:
    """The device dump the convert run converts (a fused conv: NC1HWC0 and FRACTAL_Z tensors)."""
    return next(p for p in sorted(Path(paths["dump"]).iterdir()) if ".conv1relu1." in p.name)


# `-c DIR` of the convert runs: DIR/format_convert/convert_{FROM}_to_{TO}.py; one that differs visibly from the
# built-in (twice the values, still padded as the original's own converters return them: it then cuts them to the
# original shape) and one that raises
CONVERTERS = {
    "convert_NC1HWC0_to_NCHW.py": (
        "def convert(shape_from, shape_to, array):\n"
        "    n, c1, h, w, c0 = shape_from\n"
        "    return array.reshape(n, c1, h, w, c0).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w) * 2\n"),
    "convert_FRACTAL_Z_to_NCHW.py": (
        "def convert(shape_from, shape_to, array):\n"
        "    raise ValueError('this converter always fails')\n"),
}


def write_converters(directory: str | Path) -> Path:
    """The `-c DIR` folder of the convert runs (DIR/format_convert/*.py)."""
    folder = Path(directory) / "format_convert"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in CONVERTERS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return Path(directory)


def convert_runs(paths: dict[str, Path]) -> dict[str, list[str]]:
    """The original's `convert -d ... -f ...` runs (name -> its arguments but -out), kept as expected/convert_runs/
    {name}/; writes the converters' folder beside the dump folder. Runs whose name ends in "_fails" convert some
    tensors and fail on others."""
    dump = Path(paths["dump"])
    conv, pool = str(convert_dump(paths)), str(dump / "MaxPool.pool1.3.1700000000000000")
    matmul = str(dump / "MatMulV2.matmul.4.1700000000000000")
    custom = str(write_converters(dump.parent / "format_custom"))
    return {
        "nchw": ["-d", conv, "-f", "NCHW"],                           # NC1HWC0 and FRACTAL_Z to NCHW
        "nd_fractal_nz": ["-d", matmul, "-f", "ND"],                  # FRACTAL_NZ to ND, cropped by the dump
        "nd_shape_o0": ["-d", matmul, "-f", "ND", "-s", "18,33", "-o", "0"],
        "fractal_z": ["-d", str(dump / "Abs.m_float_fractal_z.24.1700000000000000"), "-f", "NCHW"],
        "nz_float16": ["-d", str(dump / "Abs.m_float16_fractal_nz.31.1700000000000000"), "-f", "ND"],
        "nz_as_nchw": ["-d", str(dump / "Abs.m_float_fractal_nz.25.1700000000000000"), "-f", "NCHW", "-t", "bin"],
        "bin_bf16": ["-d", str(dump / "Abs.m_bf16_nc1hwc0.35.1700000000000000"), "-f", "NCHW", "-t", "bin"],
        "o0": ["-d", conv, "-f", "NCHW", "-o", "0"],
        "i0": ["-d", conv, "-f", "NCHW", "-i", "0"],
        "i1": ["-d", conv, "-f", "NCHW", "-i", "1"],
        "bin": ["-d", conv, "-f", "NCHW", "-t", "bin"],
        "msnpy": ["-d", conv, "-f", "NCHW", "-t", "msnpy"],
        "bin_stored": ["-d", conv, "-t", "bin"],                      # no -f: the stored layout
        "msnpy_stored": ["-d", conv, "-t", "msnpy"],
        "list": ["-d", f"{conv},{pool}", "-f", "NCHW"],
        "list_stored": ["-d", f"{conv},{pool}"],
        "custom_fails": ["-d", conv, "-f", "NCHW", "-c", custom],     # input 1 (FRACTAL_Z) fails, the rest written
        "shape_fails": ["-d", matmul, "-f", "ND", "-s", "18,33"],     # -s does not fit input 0: output 0 written
    }


# file_compare runs: name -> (my output, ground truth) arrays, written as corpus/file_compare/{name}_{my,golden}.npy
def file_compare_cases(seed: int = SEED) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    noisy = a + rng.standard_normal(a.shape).astype(np.float32) * np.float32(0.01)
    with_nan = a.copy()
    with_nan[0, 1, 2] = np.nan
    return {
        "fp32_fp16": (a, noisy.astype(np.float16)),
        "zero_golden": (a, np.zeros_like(a)),
        "zero_mine": (np.zeros_like(a), a),
        "scalar": (np.array([[2.5]], np.float32), np.array([[2.0]], np.float32)),
        "zero_d": (np.array(1.5, np.float32), np.array(1.25, np.float32)),
        "bool": (rng.random(24) > 0.5, rng.random(24) > 0.5),
        "bool_float": (rng.random(24) > 0.5, rng.random(24).astype(np.float32)),
        "int32_fp64": (rng.integers(-50, 50, (5, 7)).astype(np.int32), rng.standard_normal((5, 7)) * 30),
        "nan": (with_nan, noisy),
    }


def write_file_compare(directory: str | Path) -> Path:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    for name, (mine, golden) in file_compare_cases().items():
        np.save(folder / f"{name}_my.npy", mine)
        np.save(folder / f"{name}_golden.npy", golden)
    return folder


# overflow runs (`msaccucmp overflow -d DIR -out OUT -n N`): name -> N, on the folder write_overflow() makes
OVERFLOW_RUNS = {"overflow_n2": 2, "overflow_n5": 5}


def write_overflow(directory: str | Path, seed: int = SEED) -> Path:
    """A `"dump_debug": "on"` dump folder: OpDebug files in both record layouts (current AIC, AIV with FFTS+ context
    and thread ids, SDMA whose op has no dump; old layout with two statuses set) and the overflowing ops' dumps:
    float16 with inf and NaN, float32, int32 (a float64 mean), NC1HWC0, FFTS+ slices of which one matches, two dumps
    of one task (the older is reported), a 0-d tensor, dumps in a subfolder, a hashed name resolved through
    mapping.csv."""
    from dumpcmp.dumps.opdebug import old_opdebug_bytes, opdebug_bytes

    rng = np.random.default_rng(seed)
    folder = Path(directory)
    sub = folder / "0" / "graph_1"
    sub.mkdir(parents=True, exist_ok=True)

    def debug(where: Path, name: str, record: bytes) -> None:
        dumpcmp.write_dump(where / name, op_name="Node_OpDebug",
                           outputs=[TensorData(np.frombuffer(record, np.uint8), data_type="UINT8")])

    t = TIMESTAMP
    with np.errstate(over="ignore"):  # the overflow is the point
        big = (rng.standard_normal((2, 8)) * 30000).astype(np.float16)
        big[0, 0] = np.inf
        other = (rng.standard_normal((2, 8)) * 40000).astype(np.float16)
        tripled = (big.astype(np.float32) * 3).astype(np.float16)
    nan = rng.standard_normal((3, 5)).astype(np.float16)
    nan[1, 2] = np.nan
    dumpcmp.write_dump(sub / f"Add.add_1.11.2.{t + 10}", op_name="model/add_1", inputs=[big, other],
                       outputs=[tripled])
    dumpcmp.write_dump(sub / f"Add.add_1.11.2.{t + 90}", op_name="model/add_1_later",
                       inputs=[big], outputs=[big])
    debug(sub, f"Opdebug.Node_OpDebug.11.2.{t + 20}", opdebug_bytes("AIC", status=0x8, task_id=11, stream_id=2,
                                                                     pc_start=0x12C0000, para_base=0x8000))
    values = rng.standard_normal((1, 1, 2, 2, 16)).astype(np.float16) * np.float16(500)
    for thread in (0, 1, 2):
        dumpcmp.write_dump(sub / f"Conv2D.conv_2.12.2.{t + 30 + thread}.4.3.{thread}.0", op_name="model/conv_2",
                           inputs=[TensorData(values + np.float16(thread), format="NC1HWC0")],
                           outputs=[TensorData(nan + np.float16(thread), format="ND"),
                                    rng.integers(-9, 9, (4, 3)).astype(np.int32)])
    debug(sub, f"Opdebug.Node_OpDebug.12.2.{t + 40}", opdebug_bytes("AIV", status=0x20, task_id=12, stream_id=2,
                                                                     context_id=3, thread_id=1))
    debug(folder, f"Opdebug.Node_OpDebug.13.2.{t + 50}", opdebug_bytes("SDMA", status=1, task_id=13, stream_id=2))
    hashed = "1234567890123"
    dumpcmp.write_dump(sub / hashed, op_name="model/mul_3",
                       inputs=[rng.standard_normal((4, 4)).astype(np.float32) * np.float32(1e30),
                               np.array(-2.5e-5, np.float32)],  # a 0-d tensor: the original reports shape (1,)
                       outputs=[np.full((2, 2), np.float32(3.4e38))])
    (sub / "mapping.csv").write_text(f"{hashed},Mul.mul_3.14.5.{t + 55}\n", encoding="utf-8")
    debug(sub, f"Opdebug.Node_OpDebug.14.5.{t + 60}", old_opdebug_bytes({"DHA Atomic Add": 3, "AI Core": 0x10},
                                                                        task_id=14, stream_id=5))
    return folder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUT_DIR")
    for key, path in build(sys.argv[1]).items():
        print(f"{key}: {path}")
