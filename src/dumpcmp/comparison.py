"""Model-level comparison: every dumped operator of "My Output" (the device) against its "Ground Truth".

    >>> import dumpcmp
    >>> result = dumpcmp.compare("dumps/", "ground_truth/", fusion_json="model.json")
    >>> result.first_below(0.99)          # the first tensor, in execution order, whose cosine drops below 0.99
    >>> result.write("result.csv")        # the original tool's columns and formats
    >>> df = result.to_pandas()           # or iterate result.rows

The left side is a device dump tree (any layout of the spec) or folder; the right side a folder of ground-truth
``{op}.{output_index}.{timestamp}.npy`` (or ``.pb``/``.quant``) files, or another device dump of the same model
(device vs device, paired by file name). Pairing follows `dumpcmp.pairing` (graph JSON with ``fusion_json``, merged
with a quantization fusion rule file ``quant_json``); the device tensor is read through its layout (NC1HWC0,
FRACTAL_Z, FRACTAL_NZ, ...), converted to the ground truth's layout and cropped to its shape inside the C++ engine,
window by window, so no tensor is ever held whole in memory. One bad operator never stops the run: its row says why.
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from . import layout as _layout
from ._io import atomic_write_text
from ._native import core
from .errors import DumpcmpError, NotFoundError
from .graph import Graph, load_graph
from .metrics import METRICS, MetricResult, parse_algorithms
from .pairing import DeviceOp, TensorPair, pair_device_to_device, pair_with_ground_truth, quant_skip_reason
from .progress import Progress
from .scan import DumpEntry, DumpGroup, DumpIndex, GroundTruthEntry, scan

__all__ = ["ComparisonResult", "PairedRun", "Row", "compare", "compare_runs", "paired_runs", "text_table",
           "EXTRA_COLUMNS"]

#: columns added by ``extra=True`` (CLI ``--extra``), after the metric columns
EXTRA_COLUMNS = ("MeanSquaredError", "SQNR(dB)", "NPUNaN", "NPUInf", "GroundTruthNaN", "GroundTruthInf")

# a batch of pairs handed to the engine at once: bounded so the mappings held open stay few
_BATCH_PAIRS = 64
_BATCH_ELEMENTS = 1 << 27

_DTYPE_NAMES = {
    "FLOAT": "float32", "FLOAT16": "float16", "DOUBLE": "float64", "BF16": "bfloat16", "BOOL": "bool",
    "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "UINT16": "uint16", "INT32": "int32", "UINT32": "uint32",
    "INT64": "int64", "UINT64": "uint64",
}

_FIVE_D = ("NDC1HWC0", "FRACTAL_Z_3D")


def _dtype_name(data_type: str) -> str:
    return _DTYPE_NAMES.get(data_type, data_type.lower())


def _shape_text(shape: Sequence[int] | None) -> str:
    return "" if shape is None else "[" + ",".join(str(int(d)) for d in shape) + "]"


@dataclass
class Row:
    """One compared tensor (or one side without counterpart). `result` is None when nothing was computed."""

    index: int
    op_type: str
    npu_dump: str
    npu_data_type: str
    npu_address: str
    ground_truth: str
    ground_truth_data_type: str
    ground_truth_address: str
    tensor_index: str
    shape: str
    result: MetricResult | None = None
    fail_reason: str = ""
    skipped: bool = False
    failed: bool = False
    pair: TensorPair | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        """'compared', 'failed', 'skipped' or 'unmatched'."""
        if self.result is not None:
            return "compared"
        if self.skipped:
            return "skipped"
        if self.failed:
            return "failed"
        if self.pair is not None and not (self.pair.npu_ref is not None and self.pair.ground_truth_ref is not None):
            return "unmatched"
        return "failed"

    @property
    def cosine(self) -> float:
        return self.value(0)

    def value(self, metric: int) -> float:
        """A metric's value (NaN when not computed); StandardDeviation gives the device side's std."""
        if self.result is None:
            return math.nan
        if metric == 5:
            return float(self.result.std_x)
        return float(self.result.value(metric))

    @property
    def dead(self) -> bool:
        """The device side is all zero while the ground truth is not (a layer that stopped producing)."""
        res = self.result
        return res is not None and res.count > 0 and res.min_x == 0 and res.max_x == 0 and \
            not (res.min_y == 0 and res.max_y == 0)

    @property
    def overflow(self) -> bool:
        """The device side holds inf or NaN (the fp16 overflow an accelerator run shows)."""
        return self.result is not None and (self.result.nan_x > 0 or self.result.inf_x > 0)


@dataclass
class ComparisonResult:
    """The rows of one run (device, model, iteration) in execution order, with how they were produced."""

    rows: list[Row]
    algorithms: tuple[int, ...]
    left: str
    right: str
    run: str
    npu_has_address: bool = True
    ground_truth_has_address: bool = False

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def counts(self) -> dict[str, int]:
        out = {"compared": 0, "failed": 0, "skipped": 0, "unmatched": 0}
        for r in self.rows:
            out[r.status] += 1
        return out

    def first_below(self, threshold: float = 0.99) -> Row | None:
        """The first compared row in execution order whose cosine similarity is below `threshold` (or NaN while
        the device side holds NaN/inf)."""
        for r in self.rows:
            if r.result is None:
                continue
            c = r.cosine
            if c < threshold or (math.isnan(c) and (r.overflow or r.dead)):
                return r
        return None

    def worst(self, n: int = 10, *, distinct: bool = False) -> list[Row]:
        """The `n` compared rows with the lowest cosine similarity (rows whose cosine is NaN because a side is all
        zero come last). `distinct`: one row per ground-truth tensor and result, so an op's output and the next
        op's input (the same values, dumped twice) take one place."""
        compared = [r for r in self.rows if r.result is not None]
        def broken(r: Row) -> bool:  # NaN cosine because the device side overflowed or went all zero
            return math.isnan(r.cosine) and (r.overflow or r.dead)

        ranked = sorted(compared, key=lambda r: (math.isnan(r.cosine) and not broken(r),
                                                 -math.inf if broken(r) else r.cosine, r.index))
        if distinct:
            seen: set[tuple[Any, ...]] = set()
            unique = []
            for r in ranked:
                key = (r.pair.ground_truth_key if r.pair else r.ground_truth,
                       tuple(r.result.format(i) for i in self.algorithms))
                if key not in seen:
                    seen.add(key)
                    unique.append(r)
            ranked = unique
        return ranked[:n]

    # ---- output ------------------------------------------------------------------------------------------------

    def header(self, *, extra: bool = False, overflow: bool = False) -> list[str]:
        cols = ["Index", "OpType", "NPUDump", "DataType"]
        if self.npu_has_address:
            cols.append("Address")
        cols += ["GroundTruth", "DataType"]
        if self.ground_truth_has_address:
            cols.append("Address")
        cols += ["TensorIndex", "Shape"]
        if overflow:
            cols.append("OverFlow")
        cols += [METRICS[i] for i in self.algorithms]
        if extra:
            cols += list(EXTRA_COLUMNS)
        cols.append("CompareFailReason")
        return cols

    def table(self, *, extra: bool = False, overflow: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> list[list[str]]:
        """Header and rows as the strings the result file holds; `columns` (name -> cell of a row) are added after
        the original tool's (`compare --locate`)."""
        out = [self.header(extra=extra, overflow=overflow) + list(columns or ())]
        for r in self.rows:
            cells = [str(r.index), r.op_type, r.npu_dump, r.npu_data_type]
            if self.npu_has_address:
                cells.append(r.npu_address)
            cells += [r.ground_truth, r.ground_truth_data_type]
            if self.ground_truth_has_address:
                cells.append(r.ground_truth_address)
            cells += [r.tensor_index, r.shape]
            if overflow:
                cells.append("" if r.result is None else ("YES" if r.overflow else "NO"))
            for i in self.algorithms:
                cells.append("NaN" if r.result is None else r.result.format(i))
            if extra:
                cells += _extra_cells(r.result)
            cells.append(r.fail_reason)
            cells += [cell(r) for cell in (columns or {}).values()]
            out.append(cells)
        return out

    def write(self, path: str | os.PathLike[str], *, csv_format: bool | None = None, extra: bool = False,
              overflow: bool = False, force: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> Path:
        """Write the result file: CSV (the default for a `.csv` name, or with csv_format=True) or an aligned text
        table. The file appears whole or not at all; an existing file is kept unless `force`."""
        path = Path(path)
        if csv_format is None:
            csv_format = path.suffix.lower() == ".csv"
        table = self.table(extra=extra, overflow=overflow, columns=columns)
        text = _csv_text(table) if csv_format else text_table(table)
        return atomic_write_text(path, text, force=force, what="result file")

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row with the columns and the raw metric values (floats, not strings)."""
        recs = []
        for r in self.rows:
            rec: dict[str, Any] = {
                "Index": r.index, "OpType": r.op_type, "NPUDump": r.npu_dump, "NPUDataType": r.npu_data_type,
                "NPUAddress": r.npu_address, "GroundTruth": r.ground_truth,
                "GroundTruthDataType": r.ground_truth_data_type, "TensorIndex": r.tensor_index, "Shape": r.shape,
                "Status": r.status,
            }
            for i in self.algorithms:
                if i == 5:
                    res = r.result
                    rec.update({"MeanNPU": math.nan if res is None else res.mean_x,
                                "StdNPU": math.nan if res is None else res.std_x,
                                "MeanGroundTruth": math.nan if res is None else res.mean_y,
                                "StdGroundTruth": math.nan if res is None else res.std_y})
                else:
                    rec[METRICS[i]] = r.value(i)
            res = r.result
            rec["MeanSquaredError"] = math.nan if res is None else res.mse
            rec["SQNR(dB)"] = math.nan if res is None else res.sqnr_db
            rec["CompareFailReason"] = r.fail_reason
            recs.append(rec)
        return recs

    def to_pandas(self) -> Any:
        import pandas as pd  # optional: only for users who ask for a DataFrame

        return pd.DataFrame.from_records(self.to_records())

    def summary(self, threshold: float = 0.99, worst: int = 10) -> str:
        """What the terminal shows after a run: counts, the first tensor below the threshold, the worst ones."""
        c = self.counts()
        lines = [f"{self.run}: {c['compared']} tensors compared, {c['unmatched']} unmatched, {c['failed']} failed, "
                 f"{c['skipped']} skipped"]
        over = sum(1 for r in self.rows if r.overflow)
        if over:
            lines.append(f"  {over} device tensors hold NaN or inf")
        if 0 in self.algorithms:
            first = self.first_below(threshold)
            if first is None:
                lines.append(f"  every compared tensor has cosine similarity >= {threshold}")
            else:
                lines.append(f"  first below cosine {threshold}: #{first.index} {first.tensor_index} "
                             f"({first.op_type}) vs {first.ground_truth}: CosineSimilarity {first.result.format(0)}")
            bad = self.worst(worst, distinct=True)
            if bad:
                lines.append(f"  worst {len(bad)} by cosine similarity (one row per tensor; the same values dumped "
                             f"again as the next op's input are left out):")
                rows = [["#", "TensorIndex", "OpType", "Cosine", "MaxAbsErr", "RMSE"]]
                for r in bad:
                    rows.append([str(r.index), r.tensor_index, r.op_type, r.result.format(0),
                                 _fmt(r.result.value(1)), _fmt(r.result.value(7))])
                lines += ["    " + line for line in text_table(rows).splitlines()]
        failed = [r for r in self.rows if r.status == "failed"]
        for r in failed[:5]:
            lines.append(f"  failed #{r.index} {r.tensor_index or r.ground_truth}: {r.fail_reason}")
        if len(failed) > 5:
            lines.append(f"  ... and {len(failed) - 5} more failed rows (see CompareFailReason)")
        return "\n".join(lines)


def _fmt(v: float) -> str:
    return "NaN" if not math.isfinite(v) else f"{v:.6f}"


def _extra_cells(res: MetricResult | None) -> list[str]:
    if res is None:
        return ["NaN", "NaN", "", "", "", ""]
    sqnr = res.sqnr_db
    return [_fmt(res.mse), "inf" if sqnr == math.inf else _fmt(sqnr), str(res.nan_x), str(res.inf_x),
            str(res.nan_y), str(res.inf_y)]


def _csv_text(table: list[list[str]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerows(table)
    return buf.getvalue()


def text_table(table: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n" for row in table)


# ---- building the comparison ---------------------------------------------------------------------------------


@dataclass
class _DeviceRef:
    entry: DumpEntry
    dump: Any  # dumpcmp.Dump, or None when the header could not be read
    error: str = ""


def _device_ops(group: DumpGroup) -> list[DeviceOp]:
    from .dump import open_dumps

    entries = list(group.newest().values())
    opened = open_dumps([e.path for e in entries])
    ops = []
    for e, d in zip(entries, opened):
        if isinstance(d, Exception):
            # a dump whose header is unreadable still gets its row, saying why
            ops.append(DeviceOp(e.op_name, e.op_type, 0, 1, order=e.order(), ref=_DeviceRef(e, None, str(d))))
        else:
            ops.append(DeviceOp(e.op_name, e.op_type, len(d.inputs), len(d.outputs), order=e.order(),
                                ref=_DeviceRef(e, d)))
    return ops


_LETTERED = tuple(f for f in _layout.PLAIN_FORMATS if f != "ND")


def _plain_target(device_format: str, pair: TensorPair, ndim: int) -> str:
    """The plain layout a device tensor is read in: the ground truth's (graph origin format) when known, else the
    family's canonical NCHW/NCDHW (ND for matrices)."""
    family5 = device_format in _FIVE_D or len(device_format) == 5 or ndim == 5
    origin = (pair.origin_format or "").upper()
    if device_format == "FRACTAL_NZ":
        return "ND"
    if origin in _LETTERED and (len(origin) == 5) == family5:
        return origin
    return "NCDHW" if family5 else "NCHW"


class _Sides:
    """Resolves a pair into two TensorSources for the engine, or the reason it cannot."""

    def __init__(self, custom: Any) -> None:
        self.converters = _layout.Converters(custom) if custom is not None and not isinstance(
            custom, _layout.Converters) else custom

    @staticmethod
    def tensor(ref: _DeviceRef, kind: str, index: int) -> Any:
        """The dump tensor of a pair side, checked; DumpcmpError naming the file otherwise."""
        if ref.dump is None:
            raise DumpcmpError(ref.error)
        tensors = ref.dump.inputs if kind == "input" else ref.dump.outputs
        if index >= len(tensors):
            raise DumpcmpError(f"{ref.entry.path}: no {kind} {index} (the dump has {len(tensors)})")
        t = tensors[index]
        problem = t.problem()
        if problem:
            raise DumpcmpError(f"{ref.entry.path}: {problem}")
        return t

    @staticmethod
    def own_plain(t: Any, pair: TensorPair, target_format: str | None = None) -> tuple[str | None, tuple[int, ...]]:
        """How a device tensor is read with no ground truth to follow (device vs device): (plain format, shape)
        decoded by its own original shape, or (None, stored shape) when it is plain or has no original shape."""
        fmt = t.format
        if fmt not in _layout.DEVICE_FORMATS or t.original_shape is None:
            return None, tuple(t.shape)
        dst = target_format or _plain_target(fmt, pair, len(t.original_shape))
        original = t.original_shape if fmt == "FRACTAL_NZ" else _pad_original(t.original_shape, fmt)
        return dst, tuple(_layout.plain_shape(fmt, t.shape, dst, original_shape=original,
                                              groups=_layout.groups_of(t)))

    def device(self, ref: _DeviceRef, kind: str, index: int, pair: TensorPair,
               target_shape: tuple[int, ...] | None, target_format: str | None = None) -> tuple[Any, Any]:
        """(source, tensor) of a device dump tensor in the compared order: read in `target_format` (default: the
        ground truth's, from the graph, else NCHW/NCDHW/ND) and cropped to `target_shape` (the ground truth's).

        A device layout is decoded through a layout plan; a plain layout other than the target's (NHWC against an
        NCHW ground truth) is permuted; without a target shape (device vs device), a device layout is decoded by
        the dump's original shape when it has one, else read in stored order."""
        t = self.tensor(ref, kind, index)
        fmt = t.format
        groups = _layout.groups_of(t)
        if target_shape is None:
            dst, shape = self.own_plain(t, pair, target_format)
            if dst is not None:
                return core.source_from_dump(ref.dump._file, kind, index, dst, list(shape), groups), t
            return core.source_from_dump(ref.dump._file, kind, index), t
        if fmt not in _layout.DEVICE_FORMATS:
            dst = target_format or _plain_target(fmt, pair, len(target_shape))
            if fmt in _LETTERED and fmt != dst and tuple(t.shape) != tuple(target_shape) and \
                    len(fmt) == len(dst) == len(target_shape):
                # the same tensor in another axis order: permuted to the ground truth's
                if self.converters is not None and (fmt, dst) in self.converters:
                    plain = self.converters.apply(fmt, dst, t.array(), t.shape, target_shape)
                    return core.source_from_array(np.ascontiguousarray(plain)), t
                return core.source_from_dump(ref.dump._file, kind, index, dst, list(target_shape)), t
            return core.source_from_dump(ref.dump._file, kind, index), t
        dst = target_format or _plain_target(fmt, pair, len(target_shape))
        if len(target_shape) != (5 if fmt in _FIVE_D else 4) and fmt != "FRACTAL_NZ":
            # the ground truth is not 4-D/5-D (an FC layer's (N, C)): decode by the dump's original shape
            original = t.original_shape or pair.origin_shape
            if original is None:
                raise DumpcmpError(f"{fmt} tensor {list(t.shape)} against ground truth {list(target_shape)}: "
                                   f"no original shape to decode it by")
            dst_shape = _layout.plain_shape(fmt, t.shape, dst, original_shape=_pad_original(original, fmt),
                                            groups=groups)
        else:
            dst_shape = target_shape
        if self.converters is not None and (fmt, dst) in self.converters:
            plain = self.converters.apply(fmt, dst, t.array(), t.shape, dst_shape)
            return core.source_from_array(np.ascontiguousarray(plain)), t
        return core.source_from_dump(ref.dump._file, kind, index, dst, list(dst_shape), groups), t


def _pad_original(shape: Sequence[int], fmt: str) -> tuple[int, ...]:
    """An original shape of lower rank than the layout's family, padded as the device pads it: (N, C) -> (N, C, 1, 1)."""
    want = 5 if fmt in _FIVE_D else 4
    shape = tuple(int(d) for d in shape)
    return shape + (1,) * (want - len(shape)) if len(shape) < want else shape


def _ground_truth_array(entry: GroundTruthEntry) -> tuple[Any, Any, str]:
    """(source, shape, dtype name) of a ground-truth file."""
    data = entry.open()
    if isinstance(data, np.ndarray):
        a = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        if a.dtype.kind not in "biuf" or a.dtype.byteorder == ">":
            raise DumpcmpError(f"{entry.path}: ground truth of dtype {a.dtype} has no values the metrics compare")
        return core.source_from_array(a), a.shape, a.dtype.name
    outputs = data.outputs
    idx = entry.output_index if entry.output_index < len(outputs) else 0
    if not outputs:
        raise DumpcmpError(f"{entry.path}: the dump holds no output")
    t = outputs[idx]
    problem = t.problem()
    if problem:
        raise DumpcmpError(f"{entry.path}: {problem}")
    return core.source_from_dump(data._file, "output", idx), tuple(t.original_shape or t.shape), \
        _dtype_name(t.data_type)


def _select_group(index: DumpIndex, selection: dict[str, Any], side: str) -> list[DumpGroup]:
    groups = index.find(**selection) if any(v is not None for v in selection.values()) else list(index)
    if not groups:
        runs = ", ".join(g.key.describe() for g in index) or "none"
        raise NotFoundError(f"{index.root}: no {side} dump run matches the selection (runs: {runs})")
    return groups


@dataclass
class PairedRun:
    """One run of the left tree with its tensors paired: what a model-level or a single-operator comparison
    starts from."""

    run: str
    pairs: list[TensorPair]
    device_vs_device: bool


def paired_runs(
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    *,
    fusion_json: str | os.PathLike[str] | None = None,
    quant_json: str | os.PathLike[str] | None = None,
    time: str | None = None,
    device_id: int | None = None,
    model_name: str | None = None,
    model_id: int | None = None,
    data_index: int | None = None,
    graph: Graph | None = None,
) -> list[PairedRun]:
    """Scan both sides, select the left runs, pair every tensor (graph JSON with `fusion_json`, merged with
    `quant_json`; by name without; by file name against another device dump). `graph`: those files already
    loaded (`load_graph`), so a caller that needs the graph too reads it once."""
    left_index = scan(left)
    if left_index.dump_count == 0:
        raise NotFoundError(f"{left}: no device dump files found"
                            + (f" ({len(left_index.skipped)} files skipped)" if left_index.skipped else ""))
    right_index = scan(right)
    if graph is None and (fusion_json is not None or quant_json is not None):
        main = fusion_json if fusion_json is not None else quant_json
        graph = load_graph(main, quant_fusion=quant_json if fusion_json is not None else None)
    selection = {"time": time, "device_id": device_id, "model_name": model_name, "model_id": model_id,
                 "data_index": data_index}
    groups = _select_group(left_index, selection, "left")
    device_vs_device = len(right_index.ground_truth) == 0
    if device_vs_device and right_index.dump_count == 0:
        raise NotFoundError(f"{right}: no ground-truth files ({{op}}.{{index}}.{{timestamp}}.npy) and no dumps found")
    runs = []
    for group in groups:
        if device_vs_device:
            right_groups = right_index.find(**{k: v for k, v in selection.items() if k != "time"}) or list(right_index)
            match = [g for g in right_groups if (g.key.device_id, g.key.model_name, g.key.data_index) ==
                     (group.key.device_id, group.key.model_name, group.key.data_index)] or right_groups
            if len(match) != 1:
                names = ", ".join(g.key.describe() for g in match)
                raise NotFoundError(f"{right}: several runs could pair with {group.key.describe()} ({names}); "
                                    f"select one with the run options")
            pairs = pair_device_to_device(_device_ops(group), _device_ops(match[0]))
        else:
            pairs = pair_with_ground_truth(_device_ops(group), dict(right_index.ground_truth.files), graph)
            if graph is None:
                # without the graph an input's producer is unknown: such rows would only say so, one per input
                pairs = [p for p in pairs if not (p.kind == "input" and p.ground_truth_ref is None)]
        runs.append(PairedRun(group.key.describe(), pairs, device_vs_device))
    return runs


def compare_runs(
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    *,
    fusion_json: str | os.PathLike[str] | None = None,
    quant_json: str | os.PathLike[str] | None = None,
    algorithms: str | Iterable[int | str] | None = None,
    time: str | None = None,
    device_id: int | None = None,
    model_name: str | None = None,
    model_id: int | None = None,
    data_index: int | None = None,
    custom: str | os.PathLike[str] | None = None,
    threads: int = 0,
    quiet: bool = True,
) -> list[ComparisonResult]:
    """Compare every run of the left tree that matches the selection; one ComparisonResult per run.

    algorithms: `-alg` indices or names (default all ten); custom: a folder of user layout converters;
    time/device_id/model_name/model_id/data_index: select runs of the left tree; threads: 0 = all cores;
    quiet: no progress bar.
    """
    algos = parse_algorithms(algorithms)
    runs = paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json, time=time, device_id=device_id,
                       model_name=model_name, model_id=model_id, data_index=data_index)
    sides = _Sides(custom)
    results = []
    for run in runs:
        rows = _compare_pairs(run.pairs, sides, algos, run.device_vs_device, threads, quiet, run.run)
        results.append(ComparisonResult(rows, algos, os.fspath(left), os.fspath(right), run.run,
                                        ground_truth_has_address=run.device_vs_device))
    return results


def compare(left: str | os.PathLike[str], right: str | os.PathLike[str], **options: Any) -> ComparisonResult:
    """Compare one run of the left tree (select it with time/device_id/model_name/model_id/data_index when the tree
    holds several) with the right side. See `compare_runs` for the options."""
    results = compare_runs(left, right, **options)
    if len(results) > 1:
        runs = "\n  ".join(r.run for r in results)
        raise DumpcmpError(f"{left} holds {len(results)} runs; select one (device_id=, model_name=, data_index=, "
                           f"...) or use compare_runs():\n  {runs}")
    return results[0]


def _compare_pairs(pairs: list[TensorPair], sides: _Sides, algos: tuple[int, ...], device_vs_device: bool,
                   threads: int, quiet: bool, label: str) -> list[Row]:
    rows: list[Row] = []
    pending: list[tuple[Row, Any, Any, bool]] = []
    pending_elements = 0

    def flush() -> None:
        nonlocal pending_elements
        if not pending:
            return
        outcomes = core.compare_many([(x, y, scalar) for _, x, y, scalar in pending], list(algos), threads)
        for (row, _, _, _), out in zip(pending, outcomes):
            if isinstance(out, str):
                row.failed, row.fail_reason = True, out
            else:
                row.result = out
        progress.advance(len(pending))
        pending.clear()
        pending_elements = 0

    with Progress(sum(1 for p in pairs if p.comparable), f"comparing {label}", quiet=quiet) as progress:
        for number, pair in enumerate(pairs):
            row = Row(index=number, op_type=pair.op_type or "", npu_dump=pair.npu_column, npu_data_type="",
                      npu_address="", ground_truth=pair.ground_truth_column, ground_truth_data_type="",
                      ground_truth_address="", tensor_index=pair.tensor_index or "", shape="", pair=pair)
            rows.append(row)
            npu_ref: _DeviceRef | None = pair.npu_ref
            if npu_ref is not None and npu_ref.dump is not None:
                ts = npu_ref.dump.inputs if pair.kind == "input" else npu_ref.dump.outputs
                if pair.index is not None and pair.index < len(ts):
                    t = ts[pair.index]
                    row.npu_data_type = _dtype_name(t.data_type)
                    row.npu_address = hex(t.address)
                    row.shape = _shape_text(t.original_shape or t.shape)
                    if pair.skip_reason is None and not device_vs_device:
                        # raw integers of quantize/dequantize ops have no float ground truth (two device dumps
                        # hold the same integers and are compared)
                        reason = quant_skip_reason(pair.npu_op or "", pair.op_type or "", pair.kind, t.data_type)
                        if reason and t.data_type in ("INT8", "INT4", "UINT8"):
                            row.skipped, row.fail_reason = True, reason
            if pair.skip_reason is not None:
                row.skipped, row.fail_reason = True, pair.skip_reason
            if row.skipped:
                continue
            if npu_ref is not None and npu_ref.dump is None:
                row.failed, row.fail_reason = True, npu_ref.error
                continue
            if not pair.comparable:
                row.fail_reason = pair.note or ("no ground truth" if pair.npu_ref is not None else "no device dump")
                continue
            try:
                if device_vs_device:
                    gt_ref: _DeviceRef = pair.ground_truth_ref
                    t = sides.tensor(npu_ref, pair.kind, pair.index or 0)
                    gt_t = sides.tensor(gt_ref, pair.kind, pair.index or 0)
                    row.ground_truth_data_type = _dtype_name(gt_t.data_type)
                    row.ground_truth_address = hex(gt_t.address)
                    if (t.format, tuple(t.shape), t.original_shape) != \
                            (gt_t.format, tuple(gt_t.shape), gt_t.original_shape):
                        raise DumpcmpError(f"format/shape differ: {t.format} {list(t.shape)} vs "
                                           f"{gt_t.format} {list(gt_t.shape)}")
                    # both decoded the same way: padding of a device layout stays out of the metrics
                    x_src, t = sides.device(npu_ref, pair.kind, pair.index or 0, pair, None)
                    y_src, gt_t = sides.device(gt_ref, pair.kind, pair.index or 0, pair, None)
                    scalar = len(t.shape) == 0
                else:
                    y_src, gt_shape, gt_dtype = _ground_truth_array(pair.ground_truth_ref)
                    row.ground_truth_data_type = gt_dtype
                    x_src, t = sides.device(npu_ref, pair.kind, pair.index or 0, pair, tuple(gt_shape))
                    row.shape = _shape_text(gt_shape)
                    scalar = len(gt_shape) == 0
                if x_src.count != y_src.count:
                    raise DumpcmpError(f"shape mismatch: NPU {t.format} {list(t.shape)} gives {x_src.count} elements, "
                                       f"ground truth {row.shape} has {y_src.count}")
            except (DumpcmpError, ValueError, OSError) as error:
                row.failed, row.fail_reason = True, str(error)
                progress.advance()
                continue
            pending.append((row, x_src, y_src, scalar))
            pending_elements += int(x_src.count)
            if len(pending) >= _BATCH_PAIRS or pending_elements >= _BATCH_ELEMENTS:
                flush()
        flush()
    return rows
