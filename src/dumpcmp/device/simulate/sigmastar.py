"""`dumpcmp simulate --target sigmastar`: what SigmaStar's SDK would dump for an ONNX model, without the SDK. In: an
ONNX model and one input sample. Out: a folder with `float/sigma_outtensor_dump.bin` (the SigmaStar float model,
which equals the original: isFloat 1), `fixed/sigma_outtensor_dump.bin` (a fixed-point model: every float
activation quantised per tensor, as the dump of a fixed model with `dequantFixed` holds it, or its integers) and
`tensor_min_max.txt` (the calibration), published whole through support/files.py.

The fixed model is RUN quantised, not quantised after the fact: a copy of the ONNX graph gets, after every float32
activation (graph inputs and node outputs), the nodes q = clip(round(x / s) + z, qmin, qmax), x' = (q - z) * s, and
every consumer reads x'; onnxruntime runs that copy, so the rounding error of each layer feeds the next ones and
accumulates as on the device. Scale and zero point come from min/max calibration on the given sample (the range
widened to include 0, so that 0 is exact), per tensor:

    s = (max - min) / (qmax - qmin)        z = round(qmin - min / s)       (q, z in [qmin, qmax])

`quant_level` picks the widths: "int16" every activation 16-bit (SGS_S16; the SDK's `ALL_INT16` conv config),
"int8" every activation 8-bit (SGS_S8), "mixed" (default, the SDK's default) 8-bit for the inputs of Conv,
ConvTranspose, Gemm and MatMul and 16-bit for the others. The SDK's calibrator option `--quant_level L1..L5`
chooses statistics methods (min/max, KL histograms, per-channel kernels), not widths; the calibration here is plain
min/max, like its L1.

`fault` plants an error for tests and demonstrations: Gaussian noise of `fault_scale` times the tensor's RMS
(seeded) added to one activation of the fixed model, before its quantisation; every later layer inherits it.

Tensors dumped: every float32 node output in node order (`op_out[k] {ONNX op type}`, k the node's index), 4-D
tensors in NHWC as the SigmaStar model holds them, named by their ONNX tensor names as `dumpcmp golden --format
sigmastar` names them; integer tensors (shapes, indices) and the outputs of Constant nodes (weights) are neither
quantised nor dumped.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dumpcmp.dumps.sigmastar import TensorSpec, one_line, write_sigmastar_dump
from dumpcmp.errors import ConfigError, NotFoundError
from dumpcmp.support.lazy_numpy import np

__all__ = ["DUMP_NAME", "QUANT_LEVELS", "SigmaSimulation", "quant_params", "simulate_sigmastar",
           "simulate_sigmastar_from_sources"]

DUMP_NAME = "sigma_outtensor_dump.bin"
MIN_MAX_NAME = "tensor_min_max.txt"
QUANT_LEVELS = ("mixed", "int16", "int8")
#: ops whose activation inputs the SDK quantises to 8 bits by default (its convolution input buffers)
EIGHT_BIT_INPUTS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul"})


@dataclass
class SigmaSimulation:
    """The result of `simulate_sigmastar`: the published folder and its files."""

    out_dir: Path
    float_dump: Path
    fixed_dump: Path
    min_max: Path
    quant_level: str
    tensors: list[str]
    """The dumped tensors, in order."""
    bits: dict[str, int]
    """Width of every quantised tensor."""
    notes: list[str] = field(default_factory=list)


def quant_params(lo: float, hi: float, bits: int) -> tuple[float, int]:
    """(scale, zero point) of a `bits`-wide signed per-tensor quantisation of [lo, hi] (widened to include 0)."""
    qmin, qmax = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = float(np.float32((hi - lo) / (qmax - qmin)))
    if not scale > 0:  # a tensor of zeros: any scale represents it
        scale = 1.0
    zero = int(round(qmin - lo / scale))
    return scale, min(max(zero, qmin), qmax)


def _bits(level: str, consumers: Sequence[str]) -> int:
    if level == "int16":
        return 16
    if level == "int8":
        return 8
    return 8 if any(t in EIGHT_BIT_INPUTS for t in consumers) else 16


def _suffix(model: Any) -> str:
    """`::sgs`, lengthened until no name of the model holds it (the added tensors and nodes never collide)."""
    g = model.graph
    names = [n.name for n in g.node] + [o for n in g.node for o in list(n.input) + list(n.output)] + \
        [t.name for t in g.initializer] + [v.name for v in g.input]
    suffix = "::sgs"
    while any(suffix in n for n in names):
        suffix += "_"
    return suffix


def _fixed_model(model: Any, params: Mapping[str, tuple[float, int, int]], fault: tuple[str, Any] | None,
                 suffix: str) -> Any:
    """A copy of `model` with every tensor of `params` (name -> scale, zero, bits) fake-quantised (module doc);
    the integer values of tensor t are the extra tensor `{t}{suffix}_q`."""
    import onnx
    from onnx import helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    nodes = list(g.node)
    del g.node[:]
    renamed = {t: f"{t}{suffix}_dq" for t in params}
    inits = []
    for bits in sorted({b for _, _, b in params.values()}):
        inits += [numpy_helper.from_array(np.array(-(1 << (bits - 1)), np.float32), f"{suffix}_qmin{bits}"),
                  numpy_helper.from_array(np.array((1 << (bits - 1)) - 1, np.float32), f"{suffix}_qmax{bits}")]

    def chain(t: str) -> list[Any]:
        scale, zero, bits = params[t]
        s, z, p = f"{t}{suffix}_s", f"{t}{suffix}_z", f"{t}{suffix}"
        inits.extend([numpy_helper.from_array(np.array(scale, np.float32), s),
                      numpy_helper.from_array(np.array(zero, np.float32), z)])
        source, made = t, []
        if fault is not None and fault[0] == t:
            inits.append(numpy_helper.from_array(np.asarray(fault[1], np.float32), f"{p}_noise"))
            made.append(helper.make_node("Add", [t, f"{p}_noise"], [f"{p}_fault"], name=f"{p}_fault"))
            source = f"{p}_fault"
        return made + [
            helper.make_node("Div", [source, s], [f"{p}_a"], name=f"{p}_div"),
            helper.make_node("Round", [f"{p}_a"], [f"{p}_r"], name=f"{p}_round"),
            helper.make_node("Add", [f"{p}_r", z], [f"{p}_b"], name=f"{p}_addz"),
            helper.make_node("Clip", [f"{p}_b", f"{suffix}_qmin{bits}", f"{suffix}_qmax{bits}"], [f"{p}_q"],
                             name=f"{p}_clip"),
            helper.make_node("Sub", [f"{p}_q", z], [f"{p}_c"], name=f"{p}_subz"),
            helper.make_node("Mul", [f"{p}_c", s], [renamed[t]], name=f"{p}_mul"),
        ]

    for vi in g.input:
        if vi.name in params:
            g.node.extend(chain(vi.name))
    for node in nodes:
        for k, name in enumerate(node.input):
            if name in renamed:
                node.input[k] = renamed[name]
        g.node.append(node)
        for name in node.output:
            if name in params:
                g.node.extend(chain(name))
    g.initializer.extend(inits)
    return out


def _nhwc(a: Any) -> Any:
    return a.transpose(0, 2, 3, 1) if a.ndim == 4 else a


def simulate_sigmastar(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                       sample: Mapping[str, Any] | None = None, *, seed: int | None = None,
                       quant_level: str = "mixed", fault: str | None = None, fault_scale: float = 0.5,
                       dequant_fixed: bool = True, force: bool = False) -> SigmaSimulation:
    """Run the float and the fixed-point model on one sample and publish their dumps and the calibration as the
    folder `out_dir` (module doc; its parent folders are made). Inputs the sample leaves out get random data from
    `seed`, as `dumpcmp golden --seed` makes it. `dequant_fixed` False: the fixed dump holds the integers (isFloat
    0), as the simulator writes it without DebugConfig's `dequantFixed`. An existing `out_dir` is replaced only with
    `force`."""
    from dumpcmp.onnx.controlflow import inline_static_ifs
    from dumpcmp.onnx.inputs import sample_feeds
    from dumpcmp.onnx.model import load_model_with_weights, model_inputs, name_nodes
    from dumpcmp.onnx.runner import Runner
    from dumpcmp.support.files import atomic_folder, atomic_write_text, exists_error, made_folder

    if quant_level not in QUANT_LEVELS:
        raise ConfigError(f"quant level {quant_level!r}: choose one of {', '.join(QUANT_LEVELS)}")
    if not (fault_scale > 0 and np.isfinite(fault_scale)):
        raise ConfigError(f"fault scale {fault_scale}: must be a positive number")
    path = Path(model_path)
    if not path.is_file():
        raise NotFoundError(f"{path}: no such model file")
    out = Path(out_dir)
    if os.path.lexists(out) and not force:  # before the work; atomic_folder checks again when it publishes
        raise exists_error(out, "SigmaStar simulation")
    model = load_model_with_weights(path)
    name_nodes(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset < 11:
        raise ConfigError(f"{path}: opset {opset}; the fixed-point simulation needs opset 11 or later (Round, Clip "
                          "with inputs): convert the model with onnx.version_converter first")
    declared = model_inputs(model)
    unknown = [n for n in (sample or {}) if n not in {mi.name for mi in declared}]
    if unknown:
        raise ConfigError(f"{path}: the model has no input {unknown[0]!r}; its inputs: "
                          f"{', '.join(mi.name for mi in declared)}")
    rng = np.random.default_rng([seed, 0]) if seed is not None else None
    feeds = sample_feeds(declared, dict(sample or {}), rng, str(path), "sample 0")
    notes: list[str] = []
    if any(n.op_type == "If" for n in model.graph.node):
        model, flow_notes = inline_static_ifs(model, [feeds])
        notes += flow_notes
    g = model.graph
    inits = {t.name for t in g.initializer}
    # Constant nodes' outputs are weights (bConstant in the SDK's dumps, which its compare skips): kept float
    outputs = [o for n in g.node if n.op_type != "Constant" for o in n.output if o and o not in inits]
    runner = Runner(model, path, False)
    names = list(dict.fromkeys(outputs))
    values = dict(zip(names, runner.run(runner.session(names), names, feeds)))
    values.update({k: np.asarray(v) for k, v in feeds.items()})

    consumers: dict[str, list[str]] = {}
    for n in g.node:
        for name in n.input:
            consumers.setdefault(name, []).append(n.op_type)
    params: dict[str, tuple[float, int, int]] = {}
    ranges: dict[str, tuple[float, float]] = {}
    quantisable = [vi.name for vi in g.input if vi.name in feeds] + names
    for name in quantisable:
        v = values.get(name)
        if v is None or not isinstance(v, np.ndarray) or v.dtype != np.float32 or v.size == 0:
            continue
        lo, hi = float(v.min()), float(v.max())
        if not (np.isfinite(lo) and np.isfinite(hi)):
            notes.append(f"{name}: holds inf or NaN in the float run; left in float")
            continue
        bits = _bits(quant_level, consumers.get(name, []))
        params[name] = (*quant_params(lo, hi, bits), bits)
        ranges[name] = (lo, hi)
    if fault is not None and fault not in params:
        hint = ", ".join(list(params)[:8])
        raise ConfigError(f"--fault {fault!r}: not a float activation of {path} (some are: {hint})")
    planted = None
    if fault is not None:
        v = values[fault].astype(np.float64)
        rms = float(np.sqrt(np.mean(v * v))) or 1.0
        planted = (fault, np.random.default_rng(0).normal(0.0, fault_scale * rms, v.shape).astype(np.float32))
    suffix = _suffix(model)
    fixed = _fixed_model(model, params, planted, suffix)
    dumped = [n for n in names if n in params]
    if not dumped:
        raise ConfigError(f"{path}: no float32 activation to quantise and dump (models computing in float16 or "
                          "double are not simulated)")
    fixed_runner = Runner(fixed, path, False)
    q_names = [f"{n}{suffix}_q" for n in dumped]
    q_values = dict(zip(dumped, fixed_runner.run(fixed_runner.session(q_names), q_names, feeds)))

    where = {o: (k, n.op_type) for k, n in enumerate(g.node) for o in n.output}

    def specs(fixed_side: bool) -> Any:
        for name in dumped:
            k, op_type = where[name]
            if not fixed_side:
                yield TensorSpec(name, _nhwc(values[name]), op_type, k)
                continue
            scale, zero, bits = params[name]
            q = q_values[name]
            data = q.astype(np.int16) if not dequant_fixed else \
                ((q.astype(np.float64) - zero) * scale).astype(np.float32)
            yield TensorSpec(name, _nhwc(data), op_type, k, scale=scale, zero_point=zero,
                             data_type="SGS_S16" if bits == 16 else "SGS_S8")

    # the output's parents are made as `simulate` makes its dump path (and removed again when nothing is published)
    with made_folder(out.parent), atomic_folder(out, force=force, what="SigmaStar simulation") as tmp:
        for side in ("float", "fixed"):
            (tmp / side).mkdir()
            write_sigmastar_dump(tmp / side / DUMP_NAME, specs(side == "fixed"),
                                 is_float=side == "float" or dequant_fixed)
        atomic_write_text(tmp / MIN_MAX_NAME, "".join(f"{one_line(n)}, min: {lo:f}, max: {hi:f};\n"
                                                      for n, (lo, hi) in ranges.items()))
    return SigmaSimulation(out, out / "float" / DUMP_NAME, out / "fixed" / DUMP_NAME, out / MIN_MAX_NAME,
                           quant_level, dumped, {n: b for n, (_, _, b) in params.items()}, notes)


def simulate_sigmastar_from_sources(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                                    sources: Sequence[str] = (), preprocess: Sequence[str] = (), *,
                                    seed: int | None = None, shapes: Mapping[str, Sequence[int]] | None = None,
                                    **options: Any) -> SigmaSimulation:
    """What `dumpcmp simulate --target sigmastar` does: `-i` and `--preprocess` read as `dumpcmp golden` reads
    them; one sample (the SDK's simulator dumps one image)."""
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.onnx.inputs import load_sample, plan_inputs, with_free_dims_hint

    if not Path(model_path).is_file():
        raise NotFoundError(f"{model_path}: no such model file")
    plans, count = plan_inputs(model_path, sources, preprocess, seed, shapes)
    if count != 1:
        raise ConfigError(f"the inputs give {count} samples; a SigmaStar dump holds one run: give one sample")
    try:
        return simulate_sigmastar(model_path, out_dir, load_sample(plans, 0, seed), seed=seed, **options)
    except DumpcmpError as error:
        raise with_free_dims_hint(error, plans) from error
