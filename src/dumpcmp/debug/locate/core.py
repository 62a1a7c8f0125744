"""The replay loop and the verdict of `dumpcmp locate`.

Units of replay, one per device operator in execution order (its row):
- an op with original nodes: its region (`regions`), fed its own dumped data inputs, compared at its outputs;
- an inserted Cast/TransData, and a dequantize op fed by a quantize op: identity regions (the original model has
  nothing there, so the replay is the input itself; own = what the cast, layout change or quantization changed);
- a quantized op (an op reading int8 weights, fed through quantize -> dequantize): the unit is the whole chain,
  fed the float tensor before quantization (the quantize op's dumped input) and compared at the op's float output,
  so "own" is the chain's quantization error; the op alone on its dequantized input is replayed as well, which
  tells quantization error from compute error;
- a quantize op (raw integers out) is replayed with its dequantize op and gets a row that says so;
- a Cast standing for an original ONNX Cast is that Cast (not the identity the pairing's walk past every
  Cast/TransData would make it), and an op fed straight from one is fed that Cast's output; tensors computed from
  weights alone (folded to Const data by the compiler, not dumped) travel inside the region like weights.

Numbers: own = device output vs replay, inherited = the fed device inputs vs their ground truth (the worst input),
total = device output vs ground truth; for an op with several outputs the output with the lowest own cosine
speaks for it. Relative RMSE = RMSE / RMS of the reference (replay, ground truth).

Verdict: an op's own error crosses the threshold when its own cosine is below `threshold` (default 0.99), or its own
relative RMSE is above `rrmse` (default sqrt(2 * (1 - threshold)), 0.141 for 0.99: for an error that is uncorrelated
with the signal, relative RMSE = sqrt(2 * (1 - cosine)) when the norms agree, so both rules agree there, and the RMSE
rule also catches what cosine cannot see, a wrong scale), or its device output holds NaN/inf that the replay does not.
The first such op in execution order is the `origin`, later ones `adds`; an op within the threshold whose total error
crosses it, or one fed NaN/inf, shows `inherited` error, else `ok`; `not replayed` says why in Note. An output turned
NaN/inf with no such origin before it (an fp16 underflow the fp32 replay hides) gets as origin the nearest op upstream
whose output leaves the device dtype's range (`range_exit`)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from dumpcmp.support.lazy_numpy import np
from dumpcmp.errors import ConfigError, DumpcmpError
from dumpcmp.comparison.metrics import METRICS, MetricResult, compare_arrays, parse_algorithms
from dumpcmp.dumps.ground_truth import ground_truth_data
from dumpcmp.graph.pairing import DEQUANTIZE_TYPES, PASS_THROUGH_TYPES, QUANTIZE_TYPES, TensorPair
from dumpcmp.debug.locate.feeds import decode, device_tensor
from dumpcmp.debug.region import (
    OriginalModel,
    Region,
    RegionError,
    original_tensor,
    quantize_of,
    region_from,
)
from dumpcmp.debug.locate.replay import Job, run_jobs
from dumpcmp.output.table import (
    LOCATED_COLUMNS,
    NOT_COMPUTED,
    fixed6_inf as _fmt,  # locate's number format, with the other cell texts in output/table
    locate_cells,
    locate_csv_text,
    locate_header,
    text_table,
)

__all__ = ["LocateRow", "LocateResult", "RangeExit", "locate", "locate_runs", "measure", "range_exit", "verdicts",
           "VERDICTS", "DEFAULT_ALGORITHMS"]

VERDICTS = ("origin", "adds", "inherited", "ok", "not replayed")
DEFAULT_ALGORITHMS = (0, 1, 7)
_BASE = (0, 1, 5, 7)  # what the verdict needs: cosine, max abs, mean/std (for the reference's RMS), RMSE
_INT8 = ("DT_INT8", "INT8", "DT_INT4", "INT4", "DT_UINT8", "UINT8")
DEFAULT_BATCH_BYTES = 256 * 1024 * 1024
_QUANT_NOISE = 0.05  # relative RMSE an int8 op on its dequantized input stays below when only rounding differs


def default_rrmse(threshold: float) -> float:
    """The relative-RMSE limit that matches a cosine threshold for an error uncorrelated with the signal."""
    return math.sqrt(max(2.0 * (1.0 - threshold), 0.0))


@dataclass
class Measure:
    """One comparison: the metrics and the relative RMSE (RMSE / RMS of the reference)."""

    result: MetricResult
    rrmse: float

    @property
    def cosine(self) -> float:
        return float(self.result.cosine_similarity)

    @property
    def broken(self) -> bool:
        """The device side holds NaN/inf that the reference does not."""
        r = self.result
        return (r.nan_x + r.inf_x) > (r.nan_y + r.inf_y)

    def value(self, metric: int) -> float:
        return float(self.result.std_x) if metric == 5 else float(self.result.value(metric))


def measure(x: np.ndarray, y: np.ndarray, metrics: Iterable[int]) -> Measure:
    x = np.ascontiguousarray(x).reshape(-1)
    y = np.ascontiguousarray(y).reshape(-1)
    if x.size != y.size:
        raise DumpcmpError(f"{x.size} device elements against {y.size} in the reference")
    res = compare_arrays(x, y, metrics=sorted(set(metrics) | set(_BASE)), threads=1)
    rms = math.sqrt(float(res.mean_y) ** 2 + float(res.std_y) ** 2)
    rmse = float(res.root_mean_square_error)
    rrmse = (0.0 if rmse == 0 else math.inf) if rms == 0 else rmse / rms
    return Measure(res, rrmse)


# dtype name -> (NumPy type name, largest finite, smallest subnormal); the type looked up when used: importing this
# module (the package's public API) must not import NumPy, which compare never needs
_RANGES = {"FLOAT16": ("float16", 65504.0, 2.0 ** -24), "DT_FLOAT16": ("float16", 65504.0, 2.0 ** -24)}


@dataclass(frozen=True)
class RangeExit:
    """Values of an op's replay (computed in fp32) that the device's dtype cannot hold, and that the device output
    holds as 0 (an underflow: nonzero, rounded to 0) or as inf (an overflow: finite, beyond the dtype's max)."""

    dtype: str
    underflow: int
    overflow: int
    size: int
    example: float

    @property
    def kind(self) -> str:
        return "an underflow" if self.underflow >= self.overflow else "an overflow"

    def text(self) -> str:
        name = "float16"
        if self.underflow >= self.overflow:
            return (f"its output leaves {name}'s range: {self.underflow} of {self.size} values are nonzero in the "
                    f"replay (e.g. {self.example:.3g}) and round to 0 in {name}, as on the device (an underflow: "
                    f"{name}'s smallest subnormal is 2**-24, {2.0 ** -24:.3g})")
        return (f"its output leaves {name}'s range: {self.overflow} of {self.size} values are finite in the replay "
                f"(e.g. {self.example:.6g}) and inf in {name}, as on the device (an overflow: {name}'s max is 65504)")


def range_exit(data_type: str | None, replay: np.ndarray, device: np.ndarray) -> RangeExit | None:
    """The replay's values the device's `data_type` (FLOAT16) cannot hold, where the device output holds them as 0
    or inf (the replay rounded to the device's precision, compared with the device); None when there are none."""
    spec = _RANGES.get((data_type or "").upper())
    if spec is None or replay.dtype.kind != "f" or replay.size != device.size:
        return None
    dtype, _max, _tiny = spec
    r = np.ascontiguousarray(replay).reshape(-1)
    v = np.ascontiguousarray(device).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = r.astype(dtype)
    finite = np.isfinite(r)
    under = finite & (r != 0) & (rounded == 0) & (v == 0)
    over = finite & np.isinf(rounded) & np.isinf(v)
    nu, no = int(under.sum()), int(over.sum())
    if not nu and not no:
        return None
    example = float(r[under][0]) if nu >= no else float(r[over][0])
    return RangeExit(str(np.dtype(dtype)), nu, no, int(r.size), example)


@dataclass
class LocateRow:
    """One device operator: what was replayed, the three measures and the verdict."""

    index: int
    op: str
    op_type: str
    members: tuple[str, ...] = ()
    """The device ops replayed as one unit (a quantized chain: quantize, dequantize, op); else just `op`."""
    region: Region | None = None
    output: str = ""
    """The original tensor the measures are taken at."""
    own: Measure | None = None
    inherited: Measure | None = None
    total: Measure | None = None
    compute: Measure | None = None
    """Quantized units: the op alone, replayed on its dequantized device input."""
    verdict: str = "not replayed"
    note: str = ""
    quantized: bool = False
    range_exit: "RangeExit | None" = None
    """The replay's output leaves the device dtype's range where the device output does too (module doc)."""

    @property
    def replayed(self) -> bool:
        return self.own is not None

    def to_dict(self, algorithms: Sequence[int] = DEFAULT_ALGORITHMS) -> dict[str, Any]:
        def m(x: Measure | None, metrics: Sequence[int]) -> dict[str, Any] | None:
            if x is None:
                return None
            out = {METRICS[i]: _num(x.value(i)) for i in metrics}
            out["RelativeRMSE"] = _num(x.rrmse)
            return out

        own_metrics = sorted(set(DEFAULT_ALGORITHMS) | set(algorithms))
        return {"index": self.index, "op": self.op, "op_type": self.op_type, "members": list(self.members),
                "originals": list(self.region.nodes) if self.region else [],
                "inputs": list(self.region.inputs) if self.region else [], "output": self.output,
                "verdict": self.verdict, "own": m(self.own, own_metrics),
                "inherited": m(self.inherited, DEFAULT_ALGORITHMS), "total": m(self.total, DEFAULT_ALGORITHMS),
                "own_on_dequantized_input": m(self.compute, DEFAULT_ALGORITHMS), "note": self.note}


def _num(v: float) -> float | None:
    return None if math.isnan(v) else (str(v) if math.isinf(v) else v)  # type: ignore[return-value]


@dataclass
class LocateResult:
    """The rows of one run in execution order, and the verdict."""

    rows: list[LocateRow]
    run: str
    threshold: float
    rrmse: float
    algorithms: tuple[int, ...] = DEFAULT_ALGORITHMS
    notes: list[str] = field(default_factory=list)
    """How the ground truth was paired, when that needs saying (as compare's notes: sample folder, golden index)."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def crosses(self, m: Measure | None) -> bool:
        """A measure beyond the threshold (cosine below it, relative RMSE above the limit, or NaN/inf)."""
        if m is None:
            return False
        return m.broken or m.cosine < self.threshold or m.rrmse > self.rrmse

    @property
    def origin(self) -> LocateRow | None:
        """The operator where the error starts (None: no operator's own error crosses the threshold)."""
        return next((r for r in self.rows if r.verdict == "origin"), None)

    def ranking(self, n: int = 10) -> list[LocateRow]:
        """Replayed operators by own error, largest first (relative RMSE; NaN/inf outputs first, operators whose
        relative RMSE is undefined, such as boolean outputs, last)."""
        done = [r for r in self.rows if r.own is not None]

        def key(r: LocateRow) -> tuple[Any, ...]:
            e = r.own.rrmse
            return (not r.own.broken, math.isnan(e), -_finite(e) if not math.isnan(e) else 0.0, r.index)

        return sorted(done, key=key)[:n]

    def statement(self) -> str:
        """One sentence: where the error starts, or that it accumulates with no single origin."""
        origin = self.origin
        replayed = [r for r in self.rows if r.own is not None]
        if not replayed:
            return "no operator could be replayed (see Note)"
        if origin is not None and origin.range_exit is not None and not self.crosses(origin.own):
            return (f"the error starts at {origin.op} ({origin.op_type}): {origin.note.split('; inputs:')[0]} "
                    f"(own cosine {_fmt(origin.own.cosine)} against the fp32 replay, which keeps those values)")
        if origin is not None:
            o = origin.own
            broken = (f"; its device output holds {o.result.inf_x} inf and {o.result.nan_x} NaN values the replay "
                      f"does not (an overflow)") if o.broken else ""
            return (f"the error starts at {origin.op} ({origin.op_type}): own cosine {_fmt(o.cosine)}, relative RMSE "
                    f"{_fmt(o.rrmse)} on its own device inputs (inherited cosine "
                    f"{_fmt(origin.inherited.cosine) if origin.inherited else 'n/a'}){broken}")
        with_total = [r for r in replayed if r.total is not None]
        worst_own = self.ranking(1)[0]
        text = (f"no single operator adds error beyond the threshold (own cosine >= {self.threshold:g} and relative "
                f"RMSE <= {self.rrmse:.3f} everywhere; the largest own error: {worst_own.op}, relative RMSE "
                f"{_fmt(worst_own.own.rrmse)})")
        if with_total:
            first, last = with_total[0], with_total[-1]
            worst = max(with_total, key=lambda r: _finite(r.total.rrmse))
            drift = "the error accumulates" if last.total.rrmse > first.total.rrmse else "the error stays level"
            text += (f"; {drift} across {len(replayed)} operators: total relative RMSE {_fmt(first.total.rrmse)} at "
                     f"{first.op}, {_fmt(last.total.rrmse)} at {last.op} (largest {_fmt(worst.total.rrmse)} at "
                     f"{worst.op}, total cosine {_fmt(worst.total.cosine)})")
            crossing = next((r for r in with_total if self.crosses(r.total)), None)
            if crossing is not None:
                text += (f"; it crosses the threshold at {crossing.op} as drift, not as one operator's fault")
        return text

    # ---- output ------------------------------------------------------------------------------------------------
    def header(self) -> list[str]:
        return locate_header(sorted(set(DEFAULT_ALGORITHMS) | set(self.algorithms)), DEFAULT_ALGORITHMS)

    def table(self) -> list[list[str]]:
        own = sorted(set(DEFAULT_ALGORITHMS) | set(self.algorithms))
        out = [self.header()]
        for r in self.rows:
            cells = [str(r.index), r.op_type, r.op, ";".join(r.region.nodes) if r.region else "",
                     ";".join(r.region.inputs) if r.region else "", r.output, r.verdict]
            cells += _cells(r.own, own)
            cells += _cells(r.inherited, DEFAULT_ALGORITHMS)
            cells += _cells(r.total, DEFAULT_ALGORITHMS)
            out.append(cells + [r.note])
        return out

    def csv_text(self) -> str:
        return locate_csv_text(self.table())

    def write(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        from dumpcmp.support.files import atomic_write_text

        return atomic_write_text(path, self.csv_text(), force=force, what="locate file")

    def to_dict(self) -> dict[str, Any]:
        origin = self.origin
        return {"run": self.run, "threshold": self.threshold, "relative_rmse_limit": self.rrmse,
                "origin": origin.op if origin else None, "statement": self.statement(),
                "ranking": [r.op for r in self.ranking(10)],
                "counts": {v: sum(1 for r in self.rows if r.verdict == v) for v in VERDICTS},
                "rows": [r.to_dict(self.algorithms) for r in self.rows]}

    def summary(self, top: int = 10) -> str:
        counts = {v: sum(1 for r in self.rows if r.verdict == v) for v in VERDICTS}
        quant = sum(1 for r in self.rows if r.verdict == "not replayed" and r.op_type in QUANTIZE_TYPES
                    and r.note.startswith("quantize op"))
        lines = [f"{self.run}: {len(self.rows)} device operators, {len(self.rows) - counts['not replayed']} replayed "
                 f"on their own device inputs, {counts['not replayed']} not replayed"
                 + (f" ({quant} of them quantize ops, replayed with their dequantize op)" if quant else "")]
        lines += [f"  note: {n}" for n in self.notes]
        origin = self.origin
        lines.append("  " + self.statement())
        if origin is not None and origin.quantized and origin.compute is not None:
            lines.append(f"  {origin.note}")
        adds = [r.op for r in self.rows if r.verdict == "adds"]
        if adds:
            lines.append(f"  also adding error beyond the threshold: {', '.join(adds[:10])}"
                         + (f" and {len(adds) - 10} more" if len(adds) > 10 else ""))
        ranked = self.ranking(top)
        if ranked:
            lines.append(f"  top {len(ranked)} by own error (relative RMSE of the device output against the replay "
                         f"on its own inputs):")
            rows = [["#", "NPUOp", "OpType", "Verdict", "OwnCosine", "OwnRelRMSE", "InheritedCosine",
                     "TotalCosine"]]
            for r in ranked:
                rows.append([str(r.index), r.op, r.op_type, r.verdict, _fmt(r.own.cosine), _fmt(r.own.rrmse),
                             _fmt(r.inherited.cosine) if r.inherited else NOT_COMPUTED,
                             _fmt(r.total.cosine) if r.total else NOT_COMPUTED])
            lines += ["    " + line for line in text_table(rows).splitlines()]
        return "\n".join(lines)


def _finite(v: float) -> float:
    return 1e300 if math.isnan(v) or math.isinf(v) else v


def _cells(m: Measure | None, metrics: Sequence[int]) -> list[str]:
    return locate_cells(None, math.nan, metrics) if m is None else locate_cells(m.result, m.rrmse, metrics)


# ---- units ---------------------------------------------------------------------------------------------------
@dataclass
class _Unit:
    row: LocateRow
    feeds: list[TensorPair] = field(default_factory=list)
    outputs: list[TensorPair] = field(default_factory=list)
    compute_feeds: list[TensorPair] = field(default_factory=list)
    weight: str | None = None
    """A quantized weight's original name: the replay is its original value."""
    held: dict[int, str] = field(default_factory=dict)
    """Pairs (by id) whose original tensor is not the pairing's (`_held_tensor`)."""
    graph_op: str | None = None
    sources: list[TensorPair] = field(default_factory=list)
    """Inputs the dump does not hold, taken from their producers' dumped outputs (or a model input's ground truth)."""

    def tensor(self, om: OriginalModel, pair: TensorPair) -> str | None:
        """The original tensor a pair of this unit feeds or is compared at."""
        return self.held.get(id(pair)) or original_tensor(om, pair)


def _held_tensor(om: OriginalModel, graph: Any, pair: TensorPair) -> str | None:
    """The original tensor the device tensor of `pair` holds. The pairing (as the original tools) walks back past
    every Cast/TransData, which is right for one the compiler inserted; but the output of a Cast/TransData standing
    for an original node (an ONNX Cast), and an input that comes straight from one, hold that node's output."""
    name = original_tensor(om, pair)
    g = graph.get(pair.graph_op) if pair.graph_op else None
    if g is None or pair.index is None:
        return name
    up = graph.producer(g, pair.index) if pair.kind == "input" else (g, pair.index)
    if up is None or up[0].type not in PASS_THROUGH_TYPES or up[0].is_inserted:
        return name
    op, k = up
    desc = op.output(k)
    if desc is not None and desc.origin_name is not None:
        origin, index = desc.origin_name, k if desc.origin_output_index is None else desc.origin_output_index
    else:
        originals = [n for n in graph.original_names(op) if n in om.nodes]
        if len(originals) != 1:
            return name
        origin, index = originals[0], k
    return om.tensor(origin, index) or name


def _is_quantized_op(op: Any) -> bool:
    """An op that reads int8 (or int4) weights: on the device it is the integer op of a quantized chain."""
    return any((d.dtype or "").upper() in _INT8 for d in op.input_desc)


def _build_units(om: OriginalModel, graph: Any, pairs: Sequence[TensorPair]) -> list[_Unit]:
    by_op: dict[str, list[TensorPair]] = {}
    for p in pairs:
        if p.npu_op is not None:
            by_op.setdefault(p.npu_op, []).append(p)
    # the ops of the graph by their graph name (a dump's op name may be sanitized: `.` written as `_`)
    by_graph = {ps[0].graph_op: ps for ps in by_op.values() if ps[0].graph_op is not None}
    missing: dict[str, list[str]] = {}
    forwarded = _forward_inputs(om, graph, pairs, by_graph, missing)
    units = []
    for k, (name, ps) in enumerate(by_op.items()):
        shown = ps[0].shown_op or name
        row = LocateRow(index=k, op=shown, op_type=ps[0].op_type or "", members=(shown,))
        unit = _Unit(row, graph_op=ps[0].graph_op)
        units.append(unit)
        sources = forwarded.get(ps[0].graph_op or "", [])
        if sources:
            ps.extend(sources)
            unit.sources = sources
        try:
            _plan(om, graph, by_graph, ps, unit)
        except RegionError as error:
            row.note = str(error)
            lost = missing.get(ps[0].graph_op or "")
            if lost:
                row.note += "; " + "; ".join(lost)
    return units


class _ForwardedDump:
    """A producer's dumped output standing in for a consumer's input that was not dumped (dump_mode output): what
    `device_tensor` reads as input `index` of the consumer."""

    def __init__(self, dump: Any, tensor: Any, index: int, output: int = 0) -> None:
        self.path = dump.path
        self.inputs = [None] * index + [tensor]
        self.outputs: list[Any] = []
        self.source = dump
        self.output = output
        """The producer's output index `tensor` is."""


class _Forwarded:
    """`npu_ref` of a synthesized input pair: from a producer's dumped output (`dump`), or from the ground truth of
    a model input (`dump` None: the device is fed what the user fed)."""

    def __init__(self, dump: _ForwardedDump | None, producer: str, what: str) -> None:
        self.dump = dump
        self.producer = producer
        self.what = what
        self.error = None if dump is not None else "a model input: fed its ground truth"


def _forward_inputs(om: OriginalModel, graph: Any, pairs: Sequence[TensorPair], by_graph: dict[str, list[TensorPair]],
                    missing: dict[str, list[str]]) -> dict[str, list[TensorPair]]:
    """For every dumped op with a data input the dump does not hold (dump_mode output): that input as its producer's
    dumped output (through the graph JSON), or, for a model input, its ground truth; by graph op name. `missing`
    gets, by graph op name, why an input could be found neither way."""
    import dataclasses

    truth_of: dict[str, TensorPair] = {}
    for p in pairs:
        if p.kind == "output" and p.ground_truth_ref is not None and p.skip_reason is None:
            name = original_tensor(om, p)
            if name is not None:
                truth_of.setdefault(name, p)
    out: dict[str, list[TensorPair]] = {}
    for gname, ps in by_graph.items():
        g = graph.get(gname)
        if g is None:
            continue
        have = {p.index for p in ps if p.kind == "input" and p.npu_ref is not None}
        for i in range(len(g.data_inputs)):
            if i in have:
                continue
            up = graph.producer(g, i)
            if up is None:
                continue
            op, k = up
            produced = next((p for p in by_graph.get(op.name, ()) if p.kind == "output" and p.index == k), None)
            source = produced if getattr(getattr(produced, "npu_ref", None), "dump", None) is not None else None
            common = dict(npu_op=ps[0].npu_op, op_type=ps[0].op_type, kind="input", index=i,
                          tensor_index=f"{ps[0].npu_op}:input:{i}", graph_op=gname)
            if source is not None:
                dump = source.npu_ref.dump
                if k >= len(dump.outputs):
                    continue
                ref = _Forwarded(_ForwardedDump(dump, dump.outputs[k], i, k), source.shown_op or op.name,
                                 f"{source.shown_op}:output:{k}")
                out.setdefault(gname, []).append(dataclasses.replace(source, npu_ref=ref, **common))
            elif op.type in ("Data", "RefData", "AippData"):
                names = [n for n in graph.original_names(op) if n in om.graph_inputs] or \
                    [n for n in (op.name,) if n in om.graph_inputs]
                truth = truth_of.get(names[0]) if names else None
                if truth is not None and k == 0:
                    ref = _Forwarded(None, op.name, "the ground truth (a model input)")
                    out.setdefault(gname, []).append(dataclasses.replace(truth, npu_ref=ref, **common))
                else:
                    missing.setdefault(gname, []).append(f"input {i} is model input {op.name}, with no ground truth")
            else:
                why = getattr(getattr(produced, "npu_ref", None), "error", None) if produced is not None else None
                missing.setdefault(gname, []).append(
                    f"input {i} was not dumped, nor was output {k} of its producer {op.name}"
                    + (f" ({why})" if why else ""))
    return out


def _input_pair(by_op: dict[str, list[TensorPair]], op: str, index: int) -> TensorPair | None:
    return next((p for p in by_op.get(op, ()) if p.kind == "input" and p.index == index), None)


def _quantized_weight(om: OriginalModel, graph: Any, by_op: dict[str, list[TensorPair]], quantize: Any) -> str | None:
    """The original weight a quantize op reads (an initializer or a Constant node's output), else None."""
    source = _input_pair(by_op, quantize.name, 0)
    name = original_tensor(om, source) if source is not None else None
    if name is None:
        up = graph.producer(quantize, 0)
        name = up[0].name if up is not None and up[0].type in ("Const", "Constant") else None
    return name if name is not None and om.is_weight(name) else None


def _integer_op_before(graph: Any, op: Any) -> Any:
    """The integer op (reading a quantize op's output) whose result dequantize op `op` turns back into floats."""
    if op.type not in DEQUANTIZE_TYPES:
        return None
    up = graph.producer(op, 0)
    if up is None or up[0].type in QUANTIZE_TYPES or up[0].type in DEQUANTIZE_TYPES:
        return None
    reads_quantized = any(p is not None and p[0].type in QUANTIZE_TYPES for p in graph.producers(up[0]))
    return up[0] if reads_quantized else None


def _dequantize_after(graph: Any, op: Any) -> str | None:
    """The dequantize op that ends the quantized chain an integer op `op` is the middle of, else None."""
    if op.type in QUANTIZE_TYPES or op.type in DEQUANTIZE_TYPES:
        return None
    users = [c for c, _ in graph.consumers(op)]
    if users and all(u.type in DEQUANTIZE_TYPES and _integer_op_before(graph, u) is op for u in users):
        return users[0].name
    return None


def _plan(om: OriginalModel, graph: Any, by_op: dict[str, list[TensorPair]], ps: list[TensorPair],
          unit: _Unit) -> None:
    """Fill `unit`: what is fed, what is compared, the region (RegionError: why the op is not replayed)."""
    row = unit.row
    g = graph.get(ps[0].graph_op) if ps[0].graph_op else None
    if g is None:
        raise RegionError("not in the graph JSON: its original nodes are unknown")
    if g.type in QUANTIZE_TYPES:
        users = ", ".join(c.name for c, _ in graph.consumers(g)) or "its consumers"
        raise RegionError(f"quantize op: its output is raw integers; replayed as part of {users}")
    ins = [p for p in ps if p.kind == "input"]
    outs = [p for p in ps if p.kind == "output" and p.npu_ref is not None]
    if not outs:
        raise RegionError("the dump holds no output of this op (dump_mode input)")
    if not ins and (g.data_inputs or g.type in DEQUANTIZE_TYPES):
        raise RegionError("the dump holds no input of this op, and none is a dumped producer's output")
    integer_user = _dequantize_after(graph, g)
    if integer_user is not None:
        raise RegionError(f"integer op of a quantized chain: replayed as part of {integer_user}")
    quantize = quantize_of(graph, g)
    integer = _integer_op_before(graph, g) if quantize is None else None
    if integer is not None:
        feeds, originals = _plan_integer_chain(graph, by_op, g, integer, row)
    elif quantize is not None:
        weight = _quantized_weight(om, graph, by_op, quantize)
        row.members = (quantize.name, g.name)
        if weight is not None:
            # a weight quantized at run time: the replay is the original weight, own its quantization error
            row.region = Region((), (weight,), (weight,))
            unit.weight, unit.outputs = weight, outs
            row.note = f"weight {weight} quantized by {quantize.name}, compared with the original weight"
            return
        source = _input_pair(by_op, quantize.name, 0)
        if source is None:
            raise RegionError(f"the quantize op {quantize.name} feeding it was not dumped with its input")
        feeds, originals = [source], ()
    else:
        feeds = _plan_op_feeds(graph, by_op, g, ins, unit)
        originals = graph.original_names(g)
    for p in feeds + unit.compute_feeds + outs:
        name = _held_tensor(om, graph, p)
        if name is not None and name != original_tensor(om, p):
            unit.held[id(p)] = name
    region = region_from(om, originals, [unit.tensor(om, p) for p in feeds],
                          [unit.tensor(om, p) for p in outs], row.op)
    unit.feeds = [p for p in feeds if unit.tensor(om, p) in region.inputs]
    unit.outputs = [p for p in outs if unit.tensor(om, p) in region.outputs]
    unit.compute_feeds = [p for p in unit.compute_feeds if unit.tensor(om, p) in region.inputs]
    row.region = region


def _plan_integer_chain(graph: Any, by_op: dict[str, list[TensorPair]], dequantize: Any, integer: Any,
                        row: LocateRow) -> tuple[list[TensorPair], tuple[str, ...]]:
    """The device's own form, quantize -> integer op -> dequantize, as one unit: fed the float tensors before
    quantization (weights come from the original model), compared at the dequantized output."""
    feeds: list[TensorPair] = []
    members: list[str] = []
    for p in by_op.get(integer.name, ()):
        if p.kind != "input":
            continue
        up = graph.producer(integer, p.index or 0)
        q = up[0] if up is not None and up[0].type in QUANTIZE_TYPES else None
        source = _input_pair(by_op, q.name, 0) if q is not None else p
        if source is None:
            raise RegionError(f"the quantize op {q.name} feeding {integer.name} was not dumped with its input")
        feeds.append(source)
        members += [q.name] if q is not None else []
    row.members = tuple(dict.fromkeys(members + [integer.name, dequantize.name]))
    row.quantized = True
    return feeds, tuple(graph.original_names(integer)) + tuple(graph.original_names(dequantize))


def _plan_op_feeds(graph: Any, by_op: dict[str, list[TensorPair]], g: Any, ins: list[TensorPair],
                   unit: _Unit) -> list[TensorPair]:
    """An op's own inputs; for an op reading int8 weights, an input that comes through quantize -> dequantize is
    fed from before the quantization instead (the simulator's form of a quantized chain)."""
    row = unit.row
    quantized = _is_quantized_op(g)
    feeds: list[TensorPair] = []
    members: list[str] = []
    for p in ins:
        up = graph.producer(g, p.index or 0)
        q = quantize_of(graph, up[0]) if quantized and up is not None else None
        source = _input_pair(by_op, q.name, 0) if q is not None else None
        if source is not None:
            feeds.append(source)
            members += [q.name, up[0].name]
            row.quantized = True
        else:
            feeds.append(p)
    if row.quantized:
        row.members = tuple(dict.fromkeys(members + [g.name]))
        unit.compute_feeds = [p for p in ins if p.npu_ref is not None]
    return feeds


# ---- the loop ------------------------------------------------------------------------------------------------
_SMALL_FILE = 16 * 1024 * 1024  # ground truth below this is read whole (cheaper than a mapping), larger is mapped


def _truth(pair: TensorPair, cache: dict[str, np.ndarray] | None = None) -> np.ndarray | None:
    """The ground truth of a pair; `cache` (one batch's) keeps what was read, as a tensor is both an op's output
    and the next op's input."""
    ref = pair.ground_truth_ref
    if ref is None or pair.skip_reason is not None:
        return None
    path = str(ref.path)
    if cache is not None and path in cache:
        return cache[path]
    data = ground_truth_data(ref, whole_below=_SMALL_FILE)
    if not isinstance(data, np.ndarray):
        return decode(data)
    if cache is not None:
        cache[path] = data
    return data


def _estimate(om: OriginalModel, unit: _Unit) -> int:
    total = 0
    for p in unit.feeds + unit.outputs + unit.compute_feeds:
        ref = getattr(p.npu_ref, "dump", None)
        ts = (ref.inputs if p.kind == "input" else ref.outputs) if ref is not None else []
        if p.index is not None and p.index < len(ts):
            total += int(np.prod(ts[p.index].shape, dtype=np.int64)) * 4
    return total * 4  # decoded feeds, replay outputs, decoded device outputs, the batch's ground truth


def _decode_feeds(om: OriginalModel, unit: _Unit, pairs: Sequence[TensorPair]) -> dict[str, np.ndarray]:
    out = {}
    for p in pairs:
        name = unit.tensor(om, p)
        if name is None or name in out:
            continue
        if isinstance(p.npu_ref, _Forwarded) and p.npu_ref.dump is None:
            truth = _truth(p)  # a model input the dump does not hold: the device was fed what the user fed
            if truth is None:
                raise DumpcmpError(f"model input {name}: no ground truth to feed it")
            shape, dtype = om.shape(name), om.dtype(name)
            truth = truth.reshape(shape) if shape is not None and int(np.prod(shape)) == truth.size else truth
            out[name] = np.ascontiguousarray(truth if dtype is None else truth.astype(dtype))
        else:
            out[name] = device_tensor(om, p, tensor=name)
    return out


def _data_type(pair: TensorPair) -> str | None:
    """The data type the device wrote a pair's tensor in (the dump's), e.g. FLOAT16."""
    dump = getattr(pair.npu_ref, "dump", None)
    tensors = (dump.inputs if pair.kind == "input" else dump.outputs) if dump is not None else []
    t = tensors[pair.index] if pair.index is not None and pair.index < len(tensors) else None
    return None if t is None else t.data_type


def _sources_note(om: OriginalModel, unit: _Unit) -> str:
    """Which inputs were dumped and which came from a producer (dump_mode output)."""
    def where(pairs: Sequence[TensorPair]) -> str:
        return ", ".join(f"{unit.tensor(om, p)} " + (f"from {p.npu_ref.what}" if isinstance(p.npu_ref, _Forwarded)
                                                     else "dumped") for p in pairs)

    text = f"inputs: {where(unit.feeds)}" if unit.feeds else ""
    extra = [q for q in unit.compute_feeds if q not in unit.feeds]
    return text + (f"; dequantized inputs: {where(extra)}" if extra else "")


def _finish(om: OriginalModel, unit: _Unit, job: Job, compute: Job | None, own_metrics: Sequence[int],
            cache: dict[str, np.ndarray]) -> None:
    row = unit.row
    if job.error:
        row.note = job.error
        return
    best: tuple[Measure, Measure | None, str, Measure | None] | None = None
    for p in unit.outputs:
        name = unit.weight or unit.tensor(om, p)
        replay = job.outputs[name]
        device = device_tensor(om, p, shape=replay.shape, tensor=None if unit.weight else name)
        own = measure(device, replay, own_metrics)
        if unit.weight is None and row.range_exit is None:
            row.range_exit = range_exit(_data_type(p), replay, device)
        truth = _truth(p, cache) if unit.weight is None else replay
        total = measure(device, truth, DEFAULT_ALGORITHMS) if truth is not None else None
        alone = None
        if compute is not None and not compute.error:
            alone = measure(device, compute.outputs[name], DEFAULT_ALGORITHMS)
        if best is None or own.cosine < best[0].cosine:
            best = (own, total, name, alone)
    assert best is not None
    row.own, row.total, row.output, row.compute = best
    worst_in: Measure | None = None
    for p in unit.feeds:
        truth = _truth(p, cache)
        if truth is None:
            continue
        m = measure(job.feeds[unit.tensor(om, p)], truth, DEFAULT_ALGORITHMS)
        if worst_in is None or m.cosine < worst_in.cosine:
            worst_in = m
    row.inherited = worst_in
    if row.quantized and row.compute is not None:
        chain = " -> ".join(row.members)
        row.note = (f"int8 unit {chain}, fed the float {', '.join(row.region.inputs)}; on its dequantized input "
                    f"the op alone has cosine {_fmt(row.compute.cosine)}, relative RMSE {_fmt(row.compute.rrmse)}"
                    + (": the error is the int8 quantization of its input"
                       if row.compute.rrmse < row.own.rrmse / 2 else
                       ": the op itself computes differently (its weights or arithmetic), not only the quantization"
                       if row.compute.rrmse > _QUANT_NOISE else ""))
    elif unit.weight is not None:
        pass
    elif len(row.members) > 1:
        row.note = f"quantize/dequantize pair {' -> '.join(row.members)}, replayed as the identity"
    elif row.region is not None and row.region.identity:
        row.note = "inserted by the compiler: replayed as the identity"
    if unit.sources and any(isinstance(p.npu_ref, _Forwarded) for p in unit.feeds + unit.compute_feeds):
        text = _sources_note(om, unit)
        row.note = f"{row.note}; {text}" if row.note else text


def replay_batches(om: OriginalModel, units: Sequence[_Unit], batch_bytes: int) -> list[list[_Unit]]:
    """The units to replay (those with a region), in order, cut into batches whose decoded tensors stay within
    about `batch_bytes`: each batch is decoded, replayed and measured at once (here, or as one task on a cluster)."""
    out: list[list[_Unit]] = []
    batch: list[_Unit] = []
    size = 0
    for unit in (u for u in units if u.row.region is not None):
        est = _estimate(om, unit)
        if batch and size + est > batch_bytes:
            out.append(batch)
            batch, size = [], 0
        batch.append(unit)
        size += est
    if batch:
        out.append(batch)
    return out


def _replay(om: OriginalModel, units: Sequence[_Unit], own_metrics: Sequence[int], batch_bytes: int,
            threads: int, progress: Any) -> None:
    for batch in replay_batches(om, units, batch_bytes):
        _run_batch(om, batch, own_metrics, threads)
        progress.advance(len(batch))


def _run_batch(om: OriginalModel, batch: Sequence[_Unit], own_metrics: Sequence[int], threads: int) -> None:
    jobs: list[tuple[_Unit, Job, Job | None]] = []
    for unit in batch:
        try:
            feeds = {unit.weight: om.value(unit.weight)} if unit.weight else _decode_feeds(om, unit, unit.feeds)
            job = Job(unit.row.region, feeds)
            compute = None
            if unit.compute_feeds:
                compute = Job(unit.row.region, _decode_feeds(om, unit, unit.compute_feeds))
        except (DumpcmpError, ValueError, OSError) as error:
            unit.row.note = f"cannot decode its inputs: {error}"
            continue
        jobs.append((unit, job, compute))
    run_jobs(om, [j for _, job, c in jobs for j in (job, c) if j is not None], threads)
    cache: dict[str, np.ndarray] = {}
    for unit, job, compute in jobs:
        try:
            _finish(om, unit, job, compute, own_metrics, cache)
        except (DumpcmpError, ValueError, OSError, KeyError) as error:
            unit.row.own = None
            unit.row.note = f"cannot compare: {error}"


class _MissingDump:
    """The reference of a forwarded input whose producer's dump a worker could not open: read as an error."""

    def __init__(self, error: str) -> None:
        self.dump = None
        self.error = error


@dataclass
class _TravellingForward:
    """A forwarded input's reference as it travels to a worker: the producer's dump by path and output index."""

    path: str
    output: int
    index: int
    producer: str
    what: str


def travelling_units(batch: Sequence[_Unit]) -> list[tuple[_Unit, list[tuple[TensorPair, str]]]]:
    """Copies of a batch's units that pickle (their dumps' headers left out, to be opened where they run), each with
    its `held` names by pair rather than by the pair's id (`replay_units` undoes both)."""
    import dataclasses

    from dumpcmp.comparison.cluster import portable

    memo: dict[int, TensorPair] = {}

    def pair(p: TensorPair) -> TensorPair:
        got = memo.get(id(p))
        if got is None:
            ref = p.npu_ref
            if isinstance(ref, _Forwarded) and isinstance(ref.dump, _ForwardedDump):
                ref = _TravellingForward(str(ref.dump.path), ref.dump.output, len(ref.dump.inputs) - 1, ref.producer,
                                         ref.what)
            else:
                ref = portable(ref)
            got = memo[id(p)] = dataclasses.replace(p, npu_ref=ref, ground_truth_ref=portable(p.ground_truth_ref))
        return got

    out = []
    for u in batch:
        everything = u.feeds + u.outputs + u.compute_feeds + u.sources
        held = [(pair(q), u.held[id(q)]) for q in everything if id(q) in u.held]
        out.append((dataclasses.replace(u, feeds=[pair(q) for q in u.feeds], outputs=[pair(q) for q in u.outputs],
                                        compute_feeds=[pair(q) for q in u.compute_feeds],
                                        sources=[pair(q) for q in u.sources], held={}), held))
    return out


def replay_units(om: OriginalModel, travelled: Sequence[tuple[_Unit, list[tuple[TensorPair, str]]]],
                 own_metrics: Sequence[int], threads: int) -> list[LocateRow]:
    """On a worker: the travelled units' dumps opened here, the batch replayed and measured; their rows, in order."""
    import dataclasses

    from dumpcmp.comparison.cluster import reopened
    from dumpcmp.dumps.dump import open_dumps

    units = [u for u, _ in travelled]
    pairs = list({id(q): q for u in units for q in u.feeds + u.outputs + u.compute_feeds + u.sources}.values())
    forwarded = [q for q in pairs if isinstance(q.npu_ref, _TravellingForward)]
    paths = sorted({q.npu_ref.path for q in forwarded})
    opened = dict(zip(paths, open_dumps(paths)))
    new: dict[int, TensorPair] = {}
    plain = [q for q in pairs if not isinstance(q.npu_ref, _TravellingForward)]
    new.update((id(old), got) for old, got in zip(plain, reopened(plain)))
    for q in forwarded:
        t = q.npu_ref
        dump = opened[t.path]
        if isinstance(dump, Exception) or t.output >= len(dump.outputs):
            ref: Any = _MissingDump(str(dump) if isinstance(dump, Exception) else f"{t.path}: no output {t.output}")
        else:
            ref = _Forwarded(_ForwardedDump(dump, dump.outputs[t.output], t.index, t.output), t.producer, t.what)
        new[id(q)] = dataclasses.replace(q, npu_ref=ref)
    for u, held in travelled:
        u.feeds, u.outputs = [new[id(q)] for q in u.feeds], [new[id(q)] for q in u.outputs]
        u.compute_feeds, u.sources = [new[id(q)] for q in u.compute_feeds], [new[id(q)] for q in u.sources]
        u.held = {id(new[id(q)]): name for q, name in held}
    _run_batch(om, units, own_metrics, threads)
    return [u.row for u in units]


def verdicts(result: LocateResult) -> None:
    seen_origin = False
    for r in result.rows:
        if r.own is None:
            r.verdict = "not replayed"
        elif r.inherited is not None and r.inherited.broken:
            r.verdict = "inherited"  # fed NaN/inf: what it computes from them is not its own error
        elif result.crosses(r.own):
            r.verdict = "adds" if seen_origin else "origin"
            seen_origin = True
        elif result.crosses(r.total) or result.crosses(r.inherited):
            r.verdict = "inherited"
        else:
            r.verdict = "ok"


def _range_origin(result: LocateResult, graph: Any, units: Sequence[_Unit]) -> None:
    """An output that turns to NaN/inf with no operator's own error explaining it (every replay on the device's
    inputs agrees with the device: an fp16 underflow such as an epsilon of 1e-10 flushed to 0 before a Log): the
    origin is the nearest op upstream of it whose output leaves the device dtype's range (`RangeExit`)."""
    first = next((r for r in result.rows if r.own is not None and r.total is not None and r.total.broken
                  and r.verdict == "inherited"), None)
    if first is None:
        return
    origin = result.origin
    if origin is not None and origin.index <= first.index:
        return
    by_graph = {u.graph_op: u.row for u in units if u.graph_op}
    unit = next(u for u in units if u.row is first)
    # the nearest op upstream (producer edges; at one distance the latest in execution order): rounding noise of
    # 1e-15 that an earlier op flushes to 0 is harmless, the op whose exit reaches the NaN/inf first is the cause
    found: LocateRow | None = None
    seen: set[str] = set()
    level = [unit.graph_op] if unit.graph_op else []
    while level and found is None:
        rows = []
        nxt: list[str] = []
        for name in level:
            if name in seen or graph.get(name) is None:
                continue
            seen.add(name)
            row = by_graph.get(name)
            if row is not None and row.range_exit is not None and row.own is not None:
                rows.append(row)
            nxt.extend(up[0].name for up in graph.producers(name) if up is not None)
        found = max(rows, key=lambda r: r.index) if rows else None
        level = nxt
    if found is None:
        return
    if origin is not None:
        origin.verdict = "adds"
    found.verdict = "origin"
    t = first.total.result
    bad = f"{t.inf_x} inf and {t.nan_x} NaN" if t.nan_x else f"{t.inf_x} inf"
    text = f"{found.range_exit.text()}; {first.op} ({first.op_type}) downstream turns it into {bad}"
    found.note = f"{text}; {found.note}" if found.note else text


def locate_runs(
    model: str | os.PathLike[str] | OriginalModel,
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    *,
    fusion_json: str | os.PathLike[str],
    quant_json: str | os.PathLike[str] | None = None,
    threshold: float = 0.99,
    rrmse: float | None = None,
    algorithms: str | Iterable[int | str] | None = None,
    time: str | None = None,
    device_id: int | None = None,
    model_name: str | None = None,
    model_id: int | None = None,
    data_index: int | None = None,
    gt_sample: int | dict[int, int] | None = None,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
    threads: int = 0,
    quiet: bool = True,
    client: Any = None,
) -> list[LocateResult]:
    """Replay every device operator of every selected run on its own device inputs (module doc); one
    LocateResult per run. `algorithms`: extra metrics for own (indices, names or "all"; cosine, max abs error and RMSE
    always); `rrmse`: the relative-RMSE limit (default `default_rrmse(threshold)`); `batch_bytes` bounds the
    tensors decoded and replayed at once; `gt_sample`: the ground truth's sample folder per iteration, as compare
    pairs them (`sample_ground_truth`); `client`: a Dask distributed Client (or `dumpcmp.comparison.cluster.connect`'s
    Cluster) whose workers replay the batches (`dumpcmp.debug.locate.oncluster`), with the same rows."""
    from dumpcmp.comparison.compare import paired_runs
    from dumpcmp.graph.graph_json import load_graph
    from dumpcmp.support.progress import Progress

    if fusion_json is None:
        raise ConfigError("locate needs the graph JSON (-f): it says which original ops each device op stands for")
    if not 0 < threshold <= 1:
        raise ConfigError(f"threshold {threshold}: a cosine similarity in (0, 1]")
    om = model if isinstance(model, OriginalModel) else OriginalModel.load(model)
    graph = load_graph(fusion_json, quant_fusion=quant_json)
    if isinstance(algorithms, str) and algorithms.strip().lower() == "all":
        algorithms = range(10)
    algos = tuple(parse_algorithms(algorithms)) if algorithms is not None else DEFAULT_ALGORITHMS
    limit = default_rrmse(threshold) if rrmse is None else float(rrmse)
    runs = paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json, time=time, device_id=device_id,
                       model_name=model_name, model_id=model_id, data_index=data_index, graph=graph,
                       gt_sample=gt_sample)
    results = []
    for run in runs:
        if run.device_vs_device:
            raise ConfigError(f"{right}: locate needs ground truth ({{op}}.{{index}}.{{timestamp}}.npy), not a device "
                              "dump")
        units = _build_units(om, graph, run.pairs)
        own_metrics = sorted(set(algos) | set(_BASE))
        notes = list(run.notes)
        if client is not None:
            from dumpcmp.debug.locate.oncluster import replay_on_cluster

            hosts = replay_on_cluster(client, om, units, own_metrics, batch_bytes, threads, f"replaying {run.run}",
                                      quiet)
            if hosts:
                notes.append(f"replayed on {len(hosts)} worker(s): {', '.join(hosts)}")
        else:
            with Progress(sum(1 for u in units if u.row.region is not None), f"replaying {run.run}",
                          quiet=quiet) as progress:
                _replay(om, units, own_metrics, batch_bytes, threads, progress)
        result = LocateResult([u.row for u in units], run.run, threshold, limit, algos, notes)
        verdicts(result)
        _range_origin(result, graph, units)
        results.append(result)
    return results


def locate(model: str | os.PathLike[str] | OriginalModel, left: str | os.PathLike[str],
           right: str | os.PathLike[str], **options: Any) -> LocateResult:
    """`locate_runs` for one run (select it with time/device_id/model_name/model_id/data_index)."""
    results = locate_runs(model, left, right, **options)
    if len(results) > 1:
        from dumpcmp.dumps.scan import several_runs_error

        raise several_runs_error(left, [r.run for r in results])
    return results[0]



def compare_columns(result: LocateResult) -> dict[str, Any]:
    """Cells for `ComparisonResult.write(columns=...)`: on the output rows of each located operator, its own and
    inherited cosine and relative RMSE and its verdict; empty on other rows."""
    by_op = {r.op: r for r in result.rows}

    def cell(get: Any) -> Any:
        def f(row: Any) -> str:
            pair = row.pair
            lr = by_op.get(pair.shown_op) if pair is not None and pair.kind == "output" else None
            return "" if lr is None else get(lr)
        return f

    def num(m: str, attr: str) -> Any:
        return cell(lambda r: NOT_COMPUTED if getattr(r, m) is None else _fmt(getattr(getattr(r, m), attr)))

    cells = (num("own", "cosine"), num("own", "rrmse"), num("inherited", "cosine"), num("inherited", "rrmse"),
             cell(lambda r: r.verdict))
    return dict(zip(LOCATED_COLUMNS, cells))


def to_json(results: Sequence[LocateResult]) -> str:
    return json.dumps([r.to_dict() for r in results], indent=1)
