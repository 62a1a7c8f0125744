"""Advice: rules that turn a comparison's numbers into a suggestion, each citing the numbers it rests on.

In: a `ComparisonResult` (`dumpcmp.compare()`), optionally ground-truth histograms of some rows
(`dumpcmp.output.histogram`, keyed by the row's position in `result.rows`: with a graph JSON `Index` numbers fusion
units, so an op's input and output rows share it), a calibrator's min/max table and a locate result (rows of own vs
inherited error). Out: a list of `Advice` (rule, layer, message with the measured values, the evidence as a dict)
for the terminal summary, the HTML report and `--json`. Every threshold is a field of `Thresholds` (and a CLI
option); the rules are documented in `RULES` and in docs/report.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from dumpcmp.errors import ConfigError, DumpError
from dumpcmp.comparison.rows import cosine_of, metric_texts, metric_value
from dumpcmp.graph.pairing import QUANT_DEQUANT_TYPES, QUANTIZING_TYPES

__all__ = ["Advice", "Thresholds", "RULES", "advise", "LocateRow", "load_locate", "normalise_locate", "distinct_rows",
           "distinct_positions", "row_keys", "column_of", "row_of", "device_precision", "once_per_tensor",
           "quantized_tensors", "MOVING_TYPES"]

FP16_MAX = 65504.0

#: rule name -> what it says and the threshold(s) it uses (the README table is written from this)
RULES: dict[str, str] = {
    "fp16-overflow": "the ground truth reaches beyond the fp16 range (|value| > 65504) on a float16 device tensor, "
                     "or the device tensor holds NaN/inf: keep that layer in fp32 or rescale it",
    "int8-outliers": "on an int8 device (the dumps hold int8 tensors or quantize ops), on a tensor a quantize op "
                     "reads (any tensor when the run shows none): the int8 range is spent on outliers: a share >= "
                     "outlier_share of the ground truth's values lies in the central 1/outlier_ratio of its range, "
                     "so the few values in the outer bins set the scale (from the ground truth's histogram)",
    "wide-conv-input": "on an int8 device: a convolution input whose ground-truth max - min exceeds conv_input_range "
                       "(SigmaStar: > 30; from tensor_min_max.txt when given): quantize that input in 16 bit",
    "int16-layer": "on an int8 device: a computing layer (not Cast, TransData, Reshape, ...) below the cosine "
                   "threshold whose RootMeanSquareError exceeds rmse int8 levels of its ground truth's range "
                   "((max - min) / 255; SigmaStar's INT16 advice: RMSE > 0.5) and, along the graph JSON's edges, "
                   "whose own fall in cosine from its producer is at least 1 - threshold: run that layer in 16 bit",
    "single-layer": "one layer adds most of the error: with locate, locate's origin (the first operator whose own "
                    "error crosses the threshold); without, the layer whose cosine falls from its worst producer's "
                    "(along the graph JSON's edges) by >= single_share of the final drop",
    "drift": "the error accumulates over many layers: locate replayed operators and names no origin, or (without "
             "locate) no layer adds single_share of the final drop along a producer -> consumer edge",
    "constant-output": "the device output is all zero or constant while the ground truth varies (a dead or "
                       "saturated layer)",
}


@dataclass
class Thresholds:
    """Every rule's threshold; the CLI options are `--advice-<name>` with dashes."""

    rmse: float = 0.5
    conv_input_range: float = 30.0
    outlier_share: float = 0.95
    outlier_ratio: float = 8.0
    single_share: float = 0.5
    cosine: float = 0.99

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass
class Advice:
    rule: str
    layer: str                  # tensor index (or "model" for model-wide advice)
    row: int | None             # the result row's Index (as the table prints it), None for model-wide advice
    message: str
    evidence: dict[str, Any] = field(default_factory=dict)
    key: int | None = None      # the row's position in `result.rows` (unique, unlike Index), None for model-wide

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        where = f"#{self.row} {self.layer}" if self.row is not None else self.layer
        return f"[{self.rule}] {where}: {self.message}"


@dataclass
class LocateRow:
    """The locate interface this report reads: one operator's own, inherited and total error (cosine similarity
    with the ground truth: own = the op fed with ground-truth inputs, inherited = what its inputs bring, total = the
    dumped output) and locate's verdict."""

    op: str
    own_cosine: float
    inherited_cosine: float
    total_cosine: float
    verdict: str = ""


def _cosine(v: Any) -> float:
    """A cosine given as a number, a locate Measure (`.cosine`) or locate's JSON metrics ({"CosineSimilarity": ..})."""
    if v is None:
        return math.nan
    if isinstance(v, Mapping):
        return _float(v.get("CosineSimilarity"))
    if hasattr(v, "cosine"):
        return _float(v.cosine)
    return _float(v)


def normalise_locate(rows: Iterable[Any] | None) -> list[LocateRow]:
    """Locate rows from `dumpcmp.debug.locate` (LocateRow objects with own/inherited/total measures, or their JSON), or
    from dicts with op/own_cosine/inherited_cosine/total_cosine/verdict."""
    out = []
    for r in rows or ():
        if isinstance(r, LocateRow):
            out.append(r)
            continue
        get = r.get if isinstance(r, Mapping) else (lambda k, d=None, r=r: getattr(r, k, d))

        def cos(name: str) -> float:
            flat = get(f"{name}_cosine")
            return _float(flat) if flat is not None else _cosine(get(name))

        out.append(LocateRow(str(get("op", "")), cos("own"), cos("inherited"), cos("total"),
                             str(get("verdict", "") or "")))
    return out


def load_locate(path: str | None) -> list[Any]:
    """Locate rows from a JSON file: `dumpcmp locate --json` output (a list of runs, each {"rows": [...]}; the first
    run is read) or a plain list of {op, own_cosine, inherited_cosine, total_cosine, verdict}."""
    if path is None:
        return []
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as error:
        raise DumpError(f"{p}: cannot read: {error.strerror}") from None
    except ValueError as error:
        raise DumpError(f"{p}: not JSON: {error}") from None
    if isinstance(data, dict) and isinstance(data.get("runs"), list) and data["runs"]:
        data = data["runs"][0]
    if isinstance(data, list) and data and isinstance(data[0], dict) and "rows" in data[0]:
        data = data[0]  # `dumpcmp locate --json`: one result per run; the first run
    rows = data.get("rows", data.get("ops")) if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "op" in r for r in rows):
        raise ConfigError(f"{p}: expected locate's JSON or a list of objects with op, own_cosine, "
                          f"inherited_cosine, total_cosine")
    return rows


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _g(v: float) -> str:
    return f"{v:.6g}"


def _is_conv(op_type: str) -> bool:
    return "conv" in op_type.lower()


#: ops that move or retype data without computing: the error they show is their producer's
MOVING_TYPES = frozenset({"Cast", "TransData", "Reshape", "Transpose", "TransposeD", "Squeeze", "Unsqueeze",
                          "ExpandDims", "Flatten", "Identity", "Concat", "ConcatD", "ConcatV2", "ConcatV2D", "Pack",
                          "Unpack", "Split", "SplitD", "SplitV", "SplitVD", "Slice", "SliceD", "StridedSlice",
                          "StridedSliceD", "Tile", "TileD", "BroadcastTo", "Expand", "Pad", "PadD", "Gather",
                          "GatherV2", "GatherV2D", "Shape", "Size", "NetOutput", "Data"})
_INT8_DTYPES = frozenset({"int8", "uint8", "int4"})
#: device tensors held in 16 bits or more: the int8 rules have nothing to advise on them (a SigmaStar SGS_S16 tensor)
_WIDE_INT_DTYPES = frozenset({"int16", "uint16", "int32", "uint32"})


def column_of(result: Any, name: str) -> list[Any]:
    """A field of every row: from a `ComparisonResult`'s columns (no row built), else from its rows."""
    column = getattr(result, "column", None)
    return column(name) if column is not None else [getattr(r, name) for r in result.rows]


def row_of(result: Any, k: int) -> Any:
    """Row `k` of a result: `ComparisonResult.row_at` (one row rebuilt), else `result.rows[k]`."""
    row_at = getattr(result, "row_at", None)
    return row_at(k) if row_at is not None else result.rows[k]


def _drop_positions(result: Any) -> list[tuple[int | None, int, float]]:
    """`ComparisonResult.drop_positions`, or a result's `drops` as positions."""
    if hasattr(result, "drop_positions"):
        return result.drop_positions()
    keys = row_keys(result)
    return [(None if up is None else keys[id(up)], keys[id(r)], drop) for up, r, drop in result.drops()]


def device_precision(result: Any) -> str:
    """'int8', 'float16' or 'float32': what the device ran at, from the dumps: int8 when a dumped tensor is int8 (the
    quantized weights, a quantize op's output) or the run holds quantize/dequantize ops, float16 when a dumped
    tensor is float16, else float32."""
    dtypes = {(t or "").lower() for t in set(column_of(result, "npu_data_type"))}
    if dtypes & _INT8_DTYPES or not QUANT_DEQUANT_TYPES.isdisjoint(column_of(result, "op_type")):
        return "int8"
    return "float16" if "float16" in dtypes else "float32"


def _tensor(result: Any, a: Advice) -> Any:
    """The tensor an advice is about: its ground truth (the same values dumped as an op's output, a quantize op's
    input, a dequantize op's output and the next op's input are one tensor)."""
    if a.key is None or not 0 <= a.key < len(result.rows):
        return None
    r = row_of(result, a.key)  # a row advised on (printed too)
    return (r.pair.ground_truth_key if r.pair is not None else None) or r.ground_truth or r.tensor_index


def once_per_tensor(result: Any, advice: Iterable[Advice]) -> list[Advice]:
    """The first advice of each rule on each tensor (execution order), the others dropped."""
    seen, out = set(), []
    for a in advice:
        t = _tensor(result, a)
        if t is not None:
            if (a.rule, t) in seen:
                continue
            seen.add((a.rule, t))
        out.append(a)
    return out


def row_keys(result: Any) -> dict[int, int]:
    """id(row) -> its position in `result.rows`: the one key that tells every row apart (`Index` is the fusion
    unit's number, shared by an op's input and output rows and by the ops fused into one unit)."""
    return {id(r): k for k, r in enumerate(result.rows)}


def distinct_rows(result: Any) -> list[Any]:
    """The compared rows without the inputs that repeat an output: an op's output dumped again as the next op's
    input holds the same values against the same ground truth, so it would be advised twice."""
    rows = result.rows
    return [rows[k] for k in distinct_positions(result)]


def distinct_positions(result: Any) -> list[int]:
    """`distinct_rows` as positions in `result.rows`, read from the rows' columns (no row built)."""
    results, pairs, truths = column_of(result, "result"), column_of(result, "pair"), column_of(result, "ground_truth")

    def truth(k: int) -> Any:
        return pairs[k].ground_truth_key if pairs[k] else truths[k]

    def key(k: int) -> tuple[Any, ...]:
        return truth(k), tuple(metric_texts(results[k], result.algorithms))

    compared = [k for k, res in enumerate(results) if res is not None]
    inputs = {truth(k) for k in compared if pairs[k] is not None and pairs[k].kind != "output"}
    # only an output of an input's ground truth can hold the input's key: the others' metric texts are not asked
    outputs = {key(k) for k in compared if (pairs[k] is None or pairs[k].kind == "output") and
               truth(k) in inputs}
    return [k for k in compared if pairs[k] is None or pairs[k].kind == "output" or key(k) not in outputs]


def _fp16_overflow(result: Any) -> list[Advice]:
    out = []
    results, dtypes, overflow = column_of(result, "result"), column_of(result, "npu_data_type"), \
        column_of(result, "overflow")
    for k in distinct_positions(result):
        res = results[k]
        if res is None or not overflow[k] and dtypes[k] != "float16":  # (as below, without asking the result)
            continue
        bad_device = res.nan_x + res.inf_x
        if not bad_device and dtypes[k] != "float16":  # the range is asked of float16 tensors only
            continue
        peak = max(abs(res.min_y), abs(res.max_y)) if res.count else 0.0
        if bad_device or (math.isfinite(peak) and peak > FP16_MAX):
            r = row_of(result, k)
            ev = {"ground_truth_min": res.min_y, "ground_truth_max": res.max_y, "fp16_max": FP16_MAX,
                  "device_nan": int(res.nan_x), "device_inf": int(res.inf_x), "device_dtype": r.npu_data_type}
            parts = []
            if peak > FP16_MAX:
                parts.append(f"ground truth reaches {_g(peak)} (fp16 max {FP16_MAX:g})")
            if bad_device:
                parts.append(f"device holds {res.nan_x} NaN and {res.inf_x} inf of {res.count}")
            out.append(Advice("fp16-overflow", r.shown_tensor, r.index,
                              "; ".join(parts) + ": keep this layer in fp32 or rescale its inputs", ev, k))
    return out


def quantized_tensors(result: Any) -> set[str]:
    """The ground-truth keys of the tensors a quantize op reads: its dumped input rows, and with the graph JSON the
    outputs feeding one (output-only dumps). Empty when the run shows no quantize op."""
    pairs = column_of(result, "pair")
    out = {p.ground_truth_key for p, op_type in zip(pairs, column_of(result, "op_type")) if p is not None and
           p.kind == "input" and op_type in QUANTIZING_TYPES and p.ground_truth_key}
    graph = getattr(result, "graph", None)
    if graph is not None:
        for p in pairs:
            if p is None or p.kind != "output" or p.graph_op is None or p.graph_op not in graph:
                continue
            if any(op.type in QUANTIZING_TYPES and graph.producer(op, i) is not None and
                   graph.producer(op, i)[1] == (p.index or 0) for op, i in graph.consumers(p.graph_op)):
                out.add(p.ground_truth_key)
    out.discard(None)
    return out


def _int8_outliers(result: Any, histograms: Mapping[int, Any], t: Thresholds) -> list[Advice]:
    out = []
    quantized = quantized_tensors(result)  # the tensors whose int8 scale is set; every tensor when none is seen
    for key, h in sorted(histograms.items()):
        r = row_of(result, key) if 0 <= key < len(result.rows) else None
        if r is None or h is None or h.finite == 0 or h.min is None or not h.max > h.min:
            continue
        if quantized and (r.pair is None or r.pair.ground_truth_key not in quantized):
            continue
        if (r.npu_data_type or "").lower() in _WIDE_INT_DTYPES:
            continue
        peak = max(abs(h.min), abs(h.max))
        inner = peak / t.outlier_ratio
        share_in = 1.0 - h.share_outside(-inner, inner)
        if share_in >= t.outlier_share and h.share_outside(-inner, inner) > 0:
            ev = {"share_central": share_in, "central_limit": inner, "abs_max": peak, "values": h.finite,
                  "outside": round((1 - share_in) * h.finite)}
            out.append(Advice("int8-outliers", r.shown_tensor, r.index,
                              f"{share_in:.4%} of the ground truth lies within ±{_g(inner)} but the range reaches "
                              f"±{_g(peak)}: an int8 scale set by the max leaves those values about "
                              f"{max(1, int(127 / t.outlier_ratio))} levels; clip the range (percentile "
                              f"calibration) or use 16 bit", ev, key))
    return out


def _wide_conv_input(result: Any, t: Thresholds, min_max: Mapping[str, tuple[float, float]] | None) -> list[Advice]:
    out = []
    pairs = column_of(result, "pair")
    for key, op_type in enumerate(column_of(result, "op_type")):
        p = pairs[key]
        if not _is_conv(op_type) or p is None or p.kind != "input" or (p.index or 0) != 0:
            continue
        r = row_of(result, key)
        lo = hi = None
        source = "ground truth"
        if min_max:
            from dumpcmp.output.histogram import lookup_min_max

            # the producer's names: an input row's GroundTruth column and its TensorIndex name the conv itself
            entry = lookup_min_max(min_max, [r.pair.ground_truth_op or "", r.pair.ground_truth_key or ""])
            if entry is not None:
                (lo, hi), source = entry, "tensor_min_max.txt"
        if lo is None and r.result is not None and r.result.count:
            lo, hi = r.result.min_y, r.result.max_y
        if lo is None or hi is None or not math.isfinite(hi - lo) or hi - lo <= t.conv_input_range:
            continue
        out.append(Advice("wide-conv-input", r.shown_tensor, r.index,
                          f"convolution input spans {_g(lo)} .. {_g(hi)} (max - min {_g(hi - lo)} > "
                          f"{_g(t.conv_input_range)}, {source}): quantize this input in 16 bit",
                          {"min": lo, "max": hi, "range": hi - lo, "threshold": t.conv_input_range,
                           "source": source}, key))
    return out


def _int16_layer(result: Any, t: Thresholds) -> list[Advice]:
    if 7 not in result.algorithms:
        return []
    out = []
    falls = {k: (up, drop) for up, k, drop in _drop_positions(result)}
    results, op_types, dtypes = column_of(result, "result"), column_of(result, "op_type"), \
        column_of(result, "npu_data_type")
    for k in distinct_positions(result):
        res, op_type, dtype = results[k], op_types[k], dtypes[k]
        if op_type in MOVING_TYPES or op_type in QUANT_DEQUANT_TYPES or res is None or not res.count or \
                (dtype or "").lower() in _WIDE_INT_DTYPES:
            continue
        if dtype == "bool":  # a mask (device vs device restored gives it an RMSE): no 16-bit layer to run
            continue
        rmse, cos, span = metric_value(res, 7), cosine_of(res), float(res.max_y) - float(res.min_y)
        if not (math.isfinite(rmse) and math.isfinite(span) and span > 0 and cos < t.cosine):
            continue
        levels = rmse / (span / 255.0)
        up_at, drop = falls.get(k, (None, math.nan))
        if levels <= t.rmse or (falls and not drop >= 1.0 - t.cosine):
            continue  # within the int8 step, or (the graph known) carrying its producers' error rather than adding
        r, up = row_of(result, k), None if up_at is None else row_of(result, up_at)
        what = f"this convolution ({r.op_type})" if _is_conv(r.op_type) else f"this {r.op_type}"
        fall = "" if not falls else \
            f", falling by {_g(drop)} from {'the model inputs' if up is None else up.shown_tensor}"
        out.append(Advice("int16-layer", r.shown_tensor, r.index,
                          f"RootMeanSquareError {_g(rmse)} is {_g(levels)} int8 levels of the ground truth's range "
                          f"{_g(float(res.min_y))} .. {_g(float(res.max_y))} (> {_g(t.rmse)}), cosine {_g(cos)}"
                          f"{fall}: run {what} in 16 bit",
                          {"rmse": rmse, "levels": levels, "range": span, "threshold": t.rmse, "cosine": cos,
                           "drop": None if not falls else drop, "op_type": r.op_type}, k))
    return out


def _constant_output(result: Any) -> list[Advice]:
    out = []
    pairs = column_of(result, "pair")
    for key, res in enumerate(column_of(result, "result")):
        if res is None or res.count < 2 or pairs[key] is None or pairs[key].kind != "output":
            continue
        if res.min_x == res.max_x and res.max_y > res.min_y:
            r = row_of(result, key)
            what = "all zero" if res.max_x == 0 else f"constant {_g(res.max_x)}"
            out.append(Advice("constant-output", r.shown_tensor, r.index,
                              f"device output is {what} over {res.count} elements while the ground truth spans "
                              f"{_g(res.min_y)} .. {_g(res.max_y)}",
                              {"device_min": res.min_x, "device_max": res.max_x, "ground_truth_min": res.min_y,
                               "ground_truth_max": res.max_y, "count": int(res.count)}, key))
    return out


def _output_cosines(result: Any) -> list[float]:
    """The finite cosines of the compared outputs, in order."""
    return [c for c, p in zip(column_of(result, "cosine"), column_of(result, "pair"))
            if p is not None and p.kind == "output" and math.isfinite(c)]  # (NaN: no result)


def _from_locate_verdicts(locate: Sequence[LocateRow], ev: dict[str, Any], final: float,
                          total_drop: float) -> list[Advice] | None:
    """single-layer at locate's origin, or drift when locate replayed operators and none is the origin; None when
    the rows carry no verdicts (a plain list of cosines)."""
    replayed = [lr for lr in locate if lr.verdict in ("origin", "adds", "inherited", "ok")]
    if not replayed:
        return None
    origin = next((lr for lr in replayed if lr.verdict == "origin"), None)
    adds = [lr.op for lr in replayed if lr.verdict == "adds"]
    ev = {**ev, "from": "locate verdict", "replayed": len(replayed), "adds": adds}
    if origin is not None:
        ev.update(own_cosine=origin.own_cosine, inherited_cosine=origin.inherited_cosine,
                  total_cosine=origin.total_cosine)
        also = f"; {len(adds)} later operator(s) also add error ({', '.join(adds[:3])}" \
               f"{', ...' if len(adds) > 3 else ''})" if adds else ""
        return [Advice("single-layer", origin.op, None,
                       f"the error starts at this operator (locate): own cosine {_g(origin.own_cosine)} on its own "
                       f"device inputs, inherited cosine {_g(origin.inherited_cosine)} (worst cosine {_g(final)})"
                       f"{also}: fix or raise the precision of this operator", ev)]
    return [Advice("drift", "model", None,
                   f"the error accumulates: locate replayed {len(replayed)} operators and none adds error beyond "
                   f"the threshold on its own (total drop {_g(total_drop)}, worst cosine {_g(final)}): raise the "
                   f"precision along the path rather than of one operator", ev)]


def _single_or_drift(result: Any, t: Thresholds, locate: Sequence[LocateRow]) -> list[Advice]:
    outs = _output_cosines(result)
    if not outs:
        return []
    final = min(outs)
    total_drop = 1.0 - final
    if final >= t.cosine or total_drop <= 0:
        return []
    base = {"worst_cosine": final, "total_drop": total_drop, "threshold": t.single_share}
    if locate:
        decided = _from_locate_verdicts(locate, base, final, total_drop)
        if decided is not None:
            return decided
        steps = [(1.0 - lr.own_cosine, lr.op, None, None, "own", None)
                 for lr in locate if math.isfinite(lr.own_cosine)]
    else:
        steps = [(drop, None, None, k, "edge", up) for up, k, drop in _drop_positions(result) if math.isfinite(drop)]
    if not steps:
        return []
    drop, layer, row, key, how, up = max(steps, key=lambda s: s[0])
    if how == "edge":  # the rows of the largest step alone are built
        r = row_of(result, key)
        layer, row, up = r.shown_tensor, r.index, None if up is None else row_of(result, up)
    share = drop / total_drop
    ev = {**base, "largest_drop": drop, "share": share,
          "from": "locate own error" if how == "own" else "producer -> consumer edges"}
    if how == "edge":
        ev["upstream"] = None if up is None else up.shown_tensor
    if share >= t.single_share:
        if how == "own":
            what = "its own error (locate)"
        else:
            source = "the model inputs" if up is None else f"its producer {up.shown_tensor}"
            what = f"the fall in cosine from {source}"
        return [Advice("single-layer", layer, row,
                       f"this layer adds {share:.0%} of the error: {what} is {_g(drop)} of a total drop of "
                       f"{_g(total_drop)} (worst cosine {_g(final)}): fix or raise the precision of this layer",
                       ev, key)]
    return [Advice("drift", "model", None,
                   f"the error accumulates: the largest single contribution ({layer}, {_g(drop)}) is only "
                   f"{share:.0%} of the total drop {_g(total_drop)} (worst cosine {_g(final)}): raise the precision "
                   f"along the path rather than of one layer", ev)]


def advise(result: Any, *, thresholds: Thresholds | None = None, histograms: Mapping[int, Any] | None = None,
           min_max: Mapping[str, tuple[float, float]] | None = None, locate: Iterable[Any] | None = None,
           rules: Iterable[str] | None = None) -> list[Advice]:
    """Every rule's advice on one comparison: the verdict's own (single-layer or drift) first, then the others in
    rule order, each in execution order. `histograms`: ground-truth
    histograms by row position in `result.rows` (the int8-outliers rule reads them); `rules`: only these."""
    t = thresholds or Thresholds()
    wanted = set(rules) if rules is not None else set(RULES)
    unknown = wanted - set(RULES)
    if unknown:
        raise ConfigError(f"unknown advice rule(s) {', '.join(sorted(unknown))} (rules: {', '.join(RULES)})")
    loc = normalise_locate(locate)
    int8 = device_precision(result) == "int8"  # the quantization rules say nothing about a float device
    out: list[Advice] = []
    if "single-layer" in wanted or "drift" in wanted:  # the verdict's own advice first: where the error starts
        out += [a for a in _single_or_drift(result, t, loc) if a.rule in wanted]
    if "fp16-overflow" in wanted:
        out += _fp16_overflow(result)
    if "int8-outliers" in wanted and int8:
        out += _int8_outliers(result, histograms or {}, t)
    if "wide-conv-input" in wanted and int8:
        out += _wide_conv_input(result, t, min_max)
    if "int16-layer" in wanted and int8:
        out += _int16_layer(result, t)
    if "constant-output" in wanted:
        out += _constant_output(result)
    return once_per_tensor(result, out)
