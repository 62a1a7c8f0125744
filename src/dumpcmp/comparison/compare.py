"""Model-level comparison: every dumped operator of "My Output" (the device) against its "Ground Truth".

    >>> import dumpcmp
    >>> result = dumpcmp.compare("dumps/", "ground_truth/", fusion_json="model.json")
    >>> result.first_below(0.99)          # the first tensor, in execution order, whose cosine drops below 0.99
    >>> result.write("result.csv")        # the original tool's columns and formats
    >>> df = result.to_pandas()           # or iterate result.rows

The left side is a device dump tree (any layout of the spec) or folder; the right side a folder of ground-truth
``{op}.{output_index}.{timestamp}.npy`` (or ``.pb``/``.quant``) files, or another device dump of the same model
(device vs device, paired by file name). Pairing follows `dumpcmp.graph.graph_json.pairing` (graph JSON with ``fusion_json``, merged
with a quantization fusion rule file ``quant_json``); the device tensor is read through its layout (NC1HWC0,
FRACTAL_Z, FRACTAL_NZ, ...), converted to the ground truth's layout and cropped to its shape inside the C++ engine,
window by window, so no tensor is ever held whole in memory. One bad operator never stops the run: its row says why.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from dumpcmp.dumps import layout as _layout
from dumpcmp.dumps import naming
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core
from dumpcmp.errors import DumpcmpError, NotFoundError
from dumpcmp.graph.graph_json import Graph, Op, load_graph
from dumpcmp.comparison.metrics import METRICS, MetricResult, parse_algorithms
from dumpcmp.graph.pairing import (
    DeviceOp,
    TensorPair,
    pair_device_to_device,
    pair_with_ground_truth,
    quant_pair_members,
)
from dumpcmp.support.progress import Progress
from dumpcmp.dumps.scan import DumpEntry, DumpGroup, DumpIndex, GroundTruthEntry, plain_npy, scan

__all__ = ["ComparisonResult", "PairedRun", "Row", "compare", "compare_runs", "paired_runs"]

# a batch of pairs handed to the engine at once: bounded so the mappings held open stay few
_BATCH_PAIRS = 64
_BATCH_ELEMENTS = 1 << 27

_DTYPE_NAMES = {
    "FLOAT": "float32", "FLOAT16": "float16", "DOUBLE": "float64", "BF16": "bfloat16", "BOOL": "bool",
    "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "UINT16": "uint16", "INT32": "int32", "UINT32": "uint32",
    "INT64": "int64", "UINT64": "uint64",
}

_FIVE_D = ("NDC1HWC0", "FRACTAL_Z_3D")


FP16_TINY = 6.103515625e-05  # float16's smallest normal value


def _dtype_name(data_type: str) -> str:
    return _DTYPE_NAMES.get(data_type, data_type.lower())


def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(d) for d in shape)


@dataclass
class Row:
    """One compared tensor (or one side without counterpart), as values: `result` holds the metrics (None when
    nothing was computed), None stands for what a side does not have or was not read. The result file's texts
    (`NaN`, `[1,3,224,224]`, ...) are made from these by `dumpcmp.output.table`."""

    index: int
    op_type: str
    npu_dump: str
    """The device op(s) (`*`: none, as the pairing names a ground-truth-only side)."""
    npu_data_type: str | None
    """The device tensor's NumPy dtype name (None: not read)."""
    npu_address: int | None
    """The device tensor's address (0: the dump records none; None: not read)."""
    ground_truth: str
    ground_truth_data_type: str | None
    ground_truth_address: int | None
    tensor_index: str | None
    """`{op}:output:{i}` / `{op}:input:{i}` (None: no device tensor)."""
    shape: tuple[int, ...] | None
    """The compared shape: the ground truth's the device tensor was converted to, or the flat length (None: not
    read)."""
    result: MetricResult | None = None
    fail_reason: str = ""
    skipped: bool = False
    failed: bool = False
    pair: TensorPair | None = field(default=None, repr=False)
    unmatched: bool = False
    """A graph op with no dump file (the original tool's "There is no dump file for my output operator" row)."""
    not_computed: frozenset[int] = frozenset()
    """Metrics the original does not compute for this row although `result` has them (a bool pair: all but
    cosine similarity)."""
    data_types_unknown: bool = False
    """The original gives no data types for this row (a device tensor without ground truth, or element counts that
    differ), whatever was read."""

    @property
    def status(self) -> str:
        """'compared', 'failed', 'skipped' or 'unmatched'."""
        if self.result is not None:
            return "compared"
        if self.skipped:
            return "skipped"
        if self.failed:
            return "failed"
        if self.unmatched:
            return "unmatched"
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


_WEIGHT_INPUT = "layer inputs read from a Const"
_NEVER_DUMPED = {"Const": "weights and constants (Const)", "Constant": "weights and constants (Const)",
                 "Data": "inputs (Data)", "NetOutput": "graph outputs (NetOutput)"}


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
    notes: list[str] = field(default_factory=list)
    """How the ground truth was chosen (sample folder per iteration, several candidates)."""
    constant_files: frozenset[str] = frozenset()
    """Ground-truth files holding weights or constants (golden_index.csv): reported apart, never "first bad"."""
    weight_inputs: frozenset[str] = frozenset()
    """TensorIndex of the input rows a graph's Const op feeds (weights: no dump, no ground truth of their own)."""

    def below_fp16_range(self, row: Row) -> bool:
        """A float16 device tensor (or a compiler-inserted Cast/TransData of one) whose ground truth lies wholly below
        float16's normal range (|x| < 6.1e-5): it rounds to zero or a few subnormal steps, so its cosine similarity
        says nothing about the layer."""
        res = row.result
        inserted = row.pair is not None and str(row.pair.relation) == "Inserted"  # the output Cast of such a value
        return res is not None and ((row.npu_data_type or "").lower() == "float16" or inserted) and res.count > 0 and \
            max(abs(float(res.min_y)), abs(float(res.max_y))) < FP16_TINY

    def is_constant(self, row: Row) -> bool:
        ref = row.pair.ground_truth_ref if row.pair is not None else None
        return ref is not None and getattr(ref, "path", None) in self.constant_files

    def largest_drop(self) -> tuple[Row, Row] | None:
        """The two consecutive compared outputs (execution order, constants left out) between which the cosine
        similarity falls the most: where a healthy drift turns into a break."""
        outs = [r for r in self.rows if r.result is not None and not self.is_constant(r)
                and not self.below_fp16_range(r) and (r.pair is None or r.pair.kind == "output")
                and not math.isnan(r.cosine)]
        best = None
        for a, b in zip(outs, outs[1:]):
            if best is None or a.cosine - b.cosine > best[0].cosine - best[1].cosine:
                best = (a, b)
        return best if best is not None and best[0].cosine > best[1].cosine else None

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def counts(self) -> dict[str, int]:
        out = {"compared": 0, "failed": 0, "skipped": 0, "unmatched": 0}
        for r in self.rows:
            out[r.status] += 1
        return out

    def never_dumped(self) -> dict[str, int]:
        """The unmatched rows of ops a device never dumps, counted by kind ("weights and constants (Const)", "inputs
        (Data)", "graph outputs (NetOutput)", "layer inputs read from a Const"): kept apart from layers whose dump
        is missing."""
        out: dict[str, int] = {}
        for r in self.rows:
            what = None
            if r.status == "unmatched":
                what = _WEIGHT_INPUT if r.tensor_index in self.weight_inputs else _NEVER_DUMPED.get(r.op_type)
            if what is not None:
                out[what] = out.get(what, 0) + 1
        return out

    def first_below(self, threshold: float = 0.99) -> Row | None:
        """The first compared row in execution order whose cosine similarity is below `threshold` (or NaN while
        the device side holds NaN/inf)."""
        for r in self.rows:
            if r.result is None or self.is_constant(r) or self.below_fp16_range(r):
                continue
            c = r.cosine
            if c < threshold or (math.isnan(c) and (r.overflow or r.dead)):
                return r
        return None

    def worst(self, n: int = 10, *, distinct: bool = False) -> list[Row]:
        """The `n` compared rows with the lowest cosine similarity (rows whose cosine is NaN because a side is all
        zero come last). `distinct`: one row per ground-truth tensor and result, so an op's output and the next
        op's input (the same values, dumped twice) take one place."""
        compared = [r for r in self.rows if r.result is not None and not self.is_constant(r)]

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

    # ---- output: the writers live in dumpcmp.output.table; these methods are the public API's doors to them -------
    # (imported when called: the comparison stage comes before the output stage and never imports it at load time)

    def header(self, *, extra: bool = False, overflow: bool = False) -> list[str]:
        from dumpcmp.output.table import header

        return header(self, extra=extra, overflow=overflow)

    def table(self, *, extra: bool = False, overflow: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> list[list[str]]:
        """Header and rows as the strings the result file holds; `columns` (name -> cell of a row) are added after
        the original tool's (`compare --locate`)."""
        from dumpcmp.output.table import table

        return table(self, extra=extra, overflow=overflow, columns=columns)

    def write(self, path: str | os.PathLike[str], *, csv_format: bool | None = None, extra: bool = False,
              overflow: bool = False, force: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> Path:
        """Write the result file: CSV (the default for a `.csv` name, or with csv_format=True) or an aligned text
        table. The file appears whole or not at all; an existing file is kept unless `force`."""
        from dumpcmp.output.table import write

        return write(self, path, csv_format=csv_format, extra=extra, overflow=overflow, force=force,
                     columns=columns)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row with the columns (as the result file prints them) and the raw metric values (floats, not
        strings)."""
        from dumpcmp.output.table import side_texts  # the cell texts, imported when called (see `header`)

        recs = []
        for r in self.rows:
            texts = side_texts(r)
            rec: dict[str, Any] = {
                "Index": r.index, "OpType": r.op_type, "NPUDump": r.npu_dump, "NPUDataType": texts["NPUDataType"],
                "NPUAddress": texts["NPUAddress"], "GroundTruth": r.ground_truth,
                "GroundTruthDataType": texts["GroundTruthDataType"], "TensorIndex": texts["TensorIndex"],
                "Shape": texts["Shape"], "Status": r.status,
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
        from dumpcmp.output.table import summary  # the output stage, imported when called (see `header`)

        return summary(self, threshold, worst)


# ---- building the comparison ---------------------------------------------------------------------------------


@dataclass
class _DeviceRef:
    entry: DumpEntry
    dump: Any  # dumpcmp.Dump, or None when the header could not be read
    error: str = ""


def _device_ops(group: DumpGroup) -> list[DeviceOp]:
    from dumpcmp.dumps.dump import open_dumps

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
            origin_known = (pair.origin_format or "").upper() in _LETTERED
            if fmt in _LETTERED and fmt != dst and len(fmt) == len(dst) == len(target_shape) and \
                    (origin_known or tuple(t.shape) != tuple(target_shape)):
                # the same tensor in another axis order: permuted to the ground truth's (by the formats when the
                # graph gives the ground truth's, as the original does, even where the two shapes read the same)
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


def _has_values(dtype: Any) -> bool:
    """A NumPy dtype the metrics compare: bool, integer or float, in the machine's byte order."""
    return dtype.kind in "biuf" and dtype.byteorder != ">"


def _mapped_npy(path: str) -> tuple[Any, Any, str] | None:
    """A plain .npy (little-endian numbers in C order) mapped by the core after one read of its header, without
    NumPy: a whole model's ground truth opens in a fraction of np.load's time (which reads the header twice and
    builds a memmap). None for anything else (Fortran order, empty, a bad file), which takes the general path and its
    messages."""
    h = plain_npy(path)
    if h is None:
        return None
    return core.source_from_file(path, h.offset, h.data_type, math.prod(h.shape)), h.shape, _dtype_name(h.data_type)


def _pad_original(shape: Sequence[int], fmt: str) -> tuple[int, ...]:
    """An original shape of lower rank than the layout's family, padded as the device pads it: (N, C) -> (N, C, 1, 1)."""
    want = 5 if fmt in _FIVE_D else 4
    shape = tuple(int(d) for d in shape)
    return shape + (1,) * (want - len(shape)) if len(shape) < want else shape


def _ground_truth_array(entry: GroundTruthEntry) -> tuple[Any, Any, str]:
    """(source, shape, dtype name) of a ground-truth file."""
    if entry.name.extension == naming.NPY:
        mapped = _mapped_npy(entry.path)
        if mapped is not None:
            return mapped
    data = entry.open()
    if isinstance(data, np.ndarray):
        a = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        if not _has_values(a.dtype):
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
    graph: Graph | None = None
    notes: list[str] = field(default_factory=list)
    """How the ground truth was chosen, when that needs saying (samples, several candidates)."""


def _sample_ground_truth(group: DumpGroup, right_index: DumpIndex, gt_sample: int | Mapping[int, int] | None,
                         iterations: int = 1) -> tuple[Any, list[str]]:
    """The ground-truth files for one device run: sample folder k (`dumpcmp golden` with several samples writes
    DIR/0, DIR/1, ...) for data_index k, or `gt_sample` for every run; the whole tree when it has no sample
    folders. Whatever is not one-to-one is said in the notes, never resolved silently."""
    gt = right_index.ground_truth
    samples = gt.by_sample(right_index.root)
    if isinstance(gt_sample, Mapping):  # an explicit iteration -> sample mapping; iterations not in it: k -> k
        gt_sample = gt_sample.get(group.key.data_index) if group.key.data_index is not None else None
    k = group.key.data_index if gt_sample is None else gt_sample
    if samples:
        if k is not None and k in samples:
            how = "--gt-sample" if gt_sample is not None else f"iteration {k}"
            return dict(samples[k].files), [f"ground truth: sample folder {k}/ ({how})"]
        if gt_sample is not None:
            raise NotFoundError(f"{right_index.root}: no sample folder {gt_sample}/ (folders: "
                                f"{', '.join(map(str, samples))})")
        if len(samples) == 1:
            only = next(iter(samples))
            return dict(samples[only].files), [f"ground truth: the only sample folder {only}/ for iteration {k}"]
        return dict(gt.files), [f"ground truth: no sample folder {k}/ for iteration {k} among "
                                f"{', '.join(map(str, samples))}; the newest file of each tensor across them was "
                                "taken: choose one with --gt-sample K"]
    mixed = gt.mixed_folders()
    notes = [f"ground truth: {mixed} tensors have files in several folders; the newest of each was taken"] \
        if mixed else []
    if iterations > 1:
        notes.append(f"ground truth: one set (no sample folders) for each of the {iterations} iterations")
    return dict(gt.files), notes


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
    gt_sample: int | Mapping[int, int] | None = None,
    right_time: str | None = None,
    right_data_index: int | None = None,
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
            if right_time is not None or right_data_index is not None:  # the right-hand run chosen explicitly
                match = right_index.find(time=right_time, data_index=right_data_index)
                if len(match) > 1:
                    match = [g for g in match if (g.key.device_id, g.key.model_name) ==
                             (group.key.device_id, group.key.model_name)] or match
            else:
                right_groups = right_index.find(**{k: v for k, v in selection.items() if k != "time"}) or \
                    list(right_index)
                match = [g for g in right_groups if (g.key.device_id, g.key.model_name, g.key.data_index) ==
                         (group.key.device_id, group.key.model_name, group.key.data_index)] or right_groups
            if not match:
                runs_r = ", ".join(g.key.describe() for g in right_index) or "none"
                raise NotFoundError(f"{right}: no run matches --right-time/--right-iteration (runs: {runs_r})")
            if len(match) != 1:
                names = ", ".join(g.key.describe() for g in match)
                raise NotFoundError(f"{right}: several runs could pair with {group.key.describe()} ({names}); "
                                    f"select the right-hand one with --right-time / --right-iteration")
            pairs = pair_device_to_device(_device_ops(group), _device_ops(match[0]))
        else:
            iterations = len({g.key.data_index for g in groups})
            gt_files, notes = _sample_ground_truth(group, right_index, gt_sample, iterations)
            pairs = pair_with_ground_truth(_device_ops(group), gt_files, graph)
            if graph is None:
                # without the graph an input's producer is unknown: such rows would only say so, one per input
                pairs = [p for p in pairs if not (p.kind == "input" and p.ground_truth_ref is None)]
        runs.append(PairedRun(group.key.describe(), pairs, device_vs_device, None if device_vs_device else graph,
                              [] if device_vs_device else notes))
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
    precise: bool = False,
    gt_sample: int | Mapping[int, int] | None = None,
    right_time: str | None = None,
    right_data_index: int | None = None,
) -> list[ComparisonResult]:
    """Compare every run of the left tree that matches the selection; one ComparisonResult per run.

    algorithms: `-alg` indices or names (default all ten); custom: a folder of user layout converters;
    time/device_id/model_name/model_id/data_index: select runs of the left tree; threads: 0 = all cores;
    quiet: no progress bar; precise: float64 per-element terms instead of the original tool's float32 ones;
    gt_sample: the ground truth's sample folder for every run, or {data_index: folder}
    (default: folder k for data_index k); right_time/right_data_index: the right-hand run of a device-vs-device comparison.
    """
    algos = parse_algorithms(algorithms)
    runs = paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json, time=time, device_id=device_id,
                       model_name=model_name, model_id=model_id, data_index=data_index, gt_sample=gt_sample,
                       right_time=right_time, right_data_index=right_data_index)
    sides = _Sides(custom)
    results = []
    for run in runs:
        rows = _compare_pairs(run.pairs, sides, algos, run.device_vs_device, threads, quiet, run.run, precise)
        weights: frozenset[str] = frozenset()
        if run.graph is not None:
            rows = _graph_rows(rows, run.graph)
            weights = _weight_inputs(rows, run.graph)
        results.append(ComparisonResult(rows, algos, os.fspath(left), os.fspath(right), run.run,
                                        ground_truth_has_address=run.device_vs_device, notes=run.notes,
                                        constant_files=_constant_files(right), weight_inputs=weights))
    return results


def _weight_inputs(rows: Sequence[Row], graph: Graph) -> frozenset[str]:
    """The TensorIndex of every input row whose producer in the graph is a Const op."""
    found = set()
    for r in rows:
        p = r.pair
        if p is None or p.kind != "input" or p.graph_op is None or p.index is None or p.tensor_index is None:
            continue
        src = graph.producer(p.graph_op, p.index) if p.graph_op in graph else None
        if src is not None and src[0].type in ("Const", "Constant"):
            found.add(p.tensor_index)
    return frozenset(found)


def _constant_files(right: str | os.PathLike[str]) -> frozenset[str]:
    """The files `dumpcmp golden --include-constants` marked as weights/constants in its golden_index.csv files."""
    from dumpcmp.dumps.ground_truth import CONSTANT_MARK, INDEX_NAME, read_golden_index

    root = Path(right)
    if not root.is_dir():
        return frozenset()
    found: set[str] = set()
    for index in [root / INDEX_NAME, *sorted(root.glob(f"*/{INDEX_NAME}"))]:
        if index.is_file():
            try:
                records = read_golden_index(index)
            except DumpcmpError:
                continue
            found |= {os.path.abspath(index.parent / r.file) for r in records if r.file and CONSTANT_MARK in r.note}
    return frozenset(found)


def compare(left: str | os.PathLike[str], right: str | os.PathLike[str], **options: Any) -> ComparisonResult:
    """Compare one run of the left tree (select it with time/device_id/model_name/model_id/data_index when the tree
    holds several) with the right side. See `compare_runs` for the options."""
    results = compare_runs(left, right, **options)
    if len(results) > 1:
        runs = "\n  ".join(r.run for r in results)
        raise DumpcmpError(f"{left} holds {len(results)} runs; select one (device_id=, model_name=, data_index=, "
                           f"...) or use compare_runs():\n  {runs}")
    return results[0]


# The original tool's own wording for rows it could not compare (users' scripts match these texts).
def _no_dump_reason(op_name: str, op_type: str) -> str:
    return f'[{op_name}] There is no dump file for my output operator "{op_name}". The type is {op_type}.'


def _no_truth_reason(op_name: str, tensor_index: str) -> str:
    return f"[{op_name}] There is no the ground truth dump file for {tensor_index}."


def _count_reason(op_name: str, left: int, right: int) -> str:
    return (f"[{op_name}] Due to the different shapes on the left and right,the left dump data({left}) can not be "
            f"compared to the right dump data({right}). Please check the batch of the dump data or the shape may be "
            f"changed due to optimization.")


_SCALAR_REASON = "This tensor is scalar."
# What the original says for a bool tensor: only cosine similarity is computed (its RelativeEuclideanDistance
# fails in NumPy's bool subtraction, and the message is kept).
_BOOL_RED = ("Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy boolean subtract, the `-` operator, "
             "is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead.")


def _bool_reason(algos: Sequence[int]) -> str:
    return ",".join(_BOOL_RED if i == 3 else f"Algorithm {METRICS[i]} does not support Boolean types."
                    for i in algos if i != 0)


def _all_zero(lo: float, hi: float) -> bool:
    return lo == 0 and hi == 0


def _finish_row(row: Row, res: MetricResult, algos: Sequence[int], ctx: tuple[bool, bool, str, str]) -> None:
    """The original's notes on a computed row: scalar, bool, an all-zero side."""
    scalar, boolean, left_path, right_path = ctx
    reasons = []
    if boolean:
        row.not_computed = frozenset(i for i in algos if i != 0)
        reasons.append(_bool_reason(algos))
    elif res.count > 0 and 0 in algos:
        zero_x = _all_zero(res.min_x, res.max_x)
        zero_y = _all_zero(res.min_y, res.max_y)
        if zero_x != zero_y:  # both zero: cosine 1.0 and no note
            reasons.append(f"Cannot compare by Cosine Similarity. All the data is zero in "
                           f"{left_path if zero_x else right_path}.")
    if scalar:
        reasons.append(_SCALAR_REASON)
    row.fail_reason = ",".join(r for r in reasons if r)


def _shape_tuple_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(int(d)) for d in shape) + ")"


def _batch_slice(op_name: str, t: Any, gt_shape: tuple[int, ...]) -> Any:
    """A plain device tensor with more elements than its ground truth, cut to the ground truth's extent as the
    original does (a dump of batch 2 against a ground truth of batch 1 compares the first sample): going through the
    axes, the first that differs decides; larger cuts every axis to the ground truth's, smaller is an error naming
    both shapes. Returns the cut tensor's source, or None when the ranks differ or the cut still does not fit."""
    mine = tuple(int(d) for d in t.shape)
    if len(mine) != len(gt_shape) or not mine:
        return None
    for a, b in zip(mine, gt_shape):
        if a < b:
            raise DumpcmpError(f"[{op_name}] Due to the different shapes on the left and right,the left dump data"
                               f"{_shape_tuple_text(mine)} can not be compared to the right dump data"
                               f"{_shape_tuple_text(gt_shape)}. Please check the batch of the dump data or the shape "
                               f"may be changed due to optimization.")
        if a > b:
            break
    cut = t.array()[tuple(slice(0, b) for b in gt_shape)]
    if cut.size != int(np.prod(gt_shape, dtype=np.int64)):
        return None
    return core.source_from_array(np.ascontiguousarray(cut))


def _compared_shape(t: Any, pair: TensorPair, gt_shape: Sequence[int], count: int) -> tuple[int, ...]:
    """The Shape of a compared row, as the original gives it: the flat length where no layout conversion
    happened (ND against ND) or for a scalar, else the (ground-truth) shape it was converted to."""
    if len(tuple(t.shape)) == 0 or len(tuple(gt_shape)) == 0:
        return (count,)
    origin = (pair.origin_format or "").upper()
    dst = t.format if origin in ("", t.format) else origin
    if dst == "ND" and t.format not in ("FRACTAL_NZ", "NDC1HWC0"):
        return (count,)
    return _shape(gt_shape)


def _compare_pairs(pairs: list[TensorPair], sides: _Sides, algos: tuple[int, ...], device_vs_device: bool,
                   threads: int, quiet: bool, label: str, precise: bool = False) -> list[Row]:
    rows: list[Row] = []
    pending: list[tuple[Row, Any, Any, bool, tuple[bool, bool, str, str]]] = []
    pending_elements = 0
    # The batch on the engine's thread. While one batch is compared, this thread opens the next one's files, and
    # afterwards fills in the rows of the one before and lets its mappings go: the engine runs one batch after
    # another without waiting for either (20-30 ms at every batch boundary, measured).
    running: _Batch | None = None

    def finish(batch: _Batch, outcomes: list) -> None:
        for (row, _, _, _, ctx), out in zip(batch.entries, outcomes):
            if isinstance(out, str):
                row.failed, row.fail_reason = True, out
            else:
                row.result = out
                _finish_row(row, out, algos, ctx)
        progress.advance(len(batch.entries))

    def flush() -> None:
        nonlocal pending, pending_elements, running
        if not pending:
            return
        before, running = running, _Batch(pending, list(algos), threads, precise)
        pending, pending_elements = [], 0
        outcomes = before.result() if before is not None else []  # one batch at a time uses every thread
        running.begin()
        if before is not None:
            # unmapping holds the interpreter lock, which the engine's thread needs to begin: let it begin first
            running.begun.wait()
            finish(before, outcomes)

    def drain() -> None:
        nonlocal running
        flush()
        if running is not None:
            batch, running = running, None
            finish(batch, batch.result())

    with Progress(sum(1 for p in pairs if p.comparable), f"comparing {label}", quiet=quiet) as progress, \
            _joined_at_exit(lambda: running):
        for number, pair in enumerate(pairs):
            row = Row(index=number, op_type=pair.op_type or "", npu_dump=pair.npu_column, npu_data_type=None,
                      npu_address=None, ground_truth=pair.ground_truth_column, ground_truth_data_type=None,
                      ground_truth_address=None, tensor_index=pair.tensor_index, shape=None, pair=pair)
            rows.append(row)
            npu_ref: _DeviceRef | None = pair.npu_ref
            if npu_ref is not None and npu_ref.dump is not None:
                ts = npu_ref.dump.inputs if pair.kind == "input" else npu_ref.dump.outputs
                if pair.index is not None and pair.index < len(ts):
                    t = ts[pair.index]
                    # against a ground truth the device tensor is compared as float32 (bf16 included)
                    row.npu_data_type = "float32" if t.data_type == "BF16" and not device_vs_device else \
                        _dtype_name(t.data_type)
                    row.npu_address = int(t.address)
                    row.shape = _shape(t.shape)
            if pair.skip_reason is not None:
                row.skipped, row.fail_reason = True, pair.skip_reason
            if row.skipped:
                continue
            if npu_ref is not None and npu_ref.dump is None:
                row.failed, row.fail_reason = True, npu_ref.error
                continue
            if not pair.comparable:
                if pair.npu_ref is not None and not device_vs_device:
                    row.data_types_unknown = True
                    row.fail_reason = _no_truth_reason(pair.npu_op or "", row.tensor_index or "")
                else:
                    row.fail_reason = pair.note or ("no ground truth" if pair.npu_ref is not None else
                                                    "no device dump")
                continue
            try:
                if device_vs_device:
                    gt_ref: _DeviceRef = pair.ground_truth_ref
                    t = sides.tensor(npu_ref, pair.kind, pair.index or 0)
                    gt_t = sides.tensor(gt_ref, pair.kind, pair.index or 0)
                    row.ground_truth_data_type = _dtype_name(gt_t.data_type)
                    row.ground_truth_address = int(gt_t.address)
                    if (t.format, tuple(t.shape), t.original_shape) != \
                            (gt_t.format, tuple(gt_t.shape), gt_t.original_shape):
                        raise DumpcmpError(f"format/shape differ: {t.format} {list(t.shape)} vs "
                                           f"{gt_t.format} {list(gt_t.shape)}")
                    # as the original does: both sides in their stored (device) order, padding included
                    x_src = core.source_from_dump(npu_ref.dump._file, pair.kind, pair.index or 0)
                    y_src = core.source_from_dump(gt_ref.dump._file, pair.kind, pair.index or 0)
                    scalar = len(t.shape) == 0
                    ctx = (scalar, t.data_type == "BOOL" and gt_t.data_type == "BOOL", npu_ref.entry.path,
                           gt_ref.entry.path)
                else:
                    y_src, gt_shape, gt_dtype = _ground_truth_array(pair.ground_truth_ref)
                    row.ground_truth_data_type = gt_dtype
                    x_src, t = sides.device(npu_ref, pair.kind, pair.index or 0, pair, tuple(gt_shape))
                    if x_src.count != y_src.count and t.format not in _layout.DEVICE_FORMATS and t.format != "ND":
                        x_src = _batch_slice(pair.npu_op or "", t, tuple(gt_shape)) or x_src
                    scalar = len(gt_shape) == 0
                    ctx = (scalar or len(t.shape) == 0, t.data_type == "BOOL" and gt_dtype == "bool",
                           npu_ref.entry.path, pair.ground_truth_ref.path)
                if x_src.count != y_src.count:
                    if not device_vs_device:
                        row.data_types_unknown = True
                    left = int(x_src.count)
                    if not device_vs_device and t.format != "ND" and len(t.shape) == len(gt_shape):
                        # the original slices a plain tensor to the ground truth's extent first (_batch_slice)
                        left = int(np.prod([min(int(a), int(b)) for a, b in zip(t.shape, gt_shape)]))
                    raise DumpcmpError(_count_reason(pair.npu_op or "", left, int(y_src.count)))
                if not device_vs_device:
                    row.shape = _compared_shape(t, pair, gt_shape, int(x_src.count))
            except (DumpcmpError, ValueError, OSError) as error:
                row.failed, row.fail_reason = True, str(error)
                progress.advance()
                continue
            pending.append((row, x_src, y_src, scalar, ctx))
            pending_elements += int(x_src.count)
            if len(pending) >= _BATCH_PAIRS or pending_elements >= _BATCH_ELEMENTS:
                flush()
        drain()
    return rows


@contextlib.contextmanager
def _joined_at_exit(current: Callable[[], _Batch | None]) -> Iterator[None]:
    """Wait for the batch running when the block is left, by an error too: none outlives the call."""
    try:
        yield
    finally:
        batch = current()
        if batch is not None:
            batch.join_engine()


class _Batch(threading.Thread):
    """One compare_many call over _compare_pairs' pending entries (row, x, y, scalar, ctx), on a thread of its own
    (_compare_pairs runs one at a time); result() waits for it."""

    def __init__(self, entries: list, algos: list[int], threads: int, precise: bool) -> None:
        super().__init__(name="dumpcmp-engine")
        self.entries = entries
        self._call = ([(x, y, scalar) for _, x, y, scalar, _ in entries], algos, threads, precise)
        self.begun = threading.Event()  # set just before the call
        self._outcomes: list = []
        self._error: BaseException | None = None

    def run(self) -> None:
        jobs, algos, threads, precise = self._call
        self.begun.set()
        try:
            self._outcomes = core.compare_many(jobs, algos, threads, precise=precise)
        except BaseException as error:  # handed to the thread that waits for the result
            self._error = error

    def begin(self) -> None:
        """Start the thread; where no thread can be started, compare here and now instead."""
        try:
            self.start()
        except RuntimeError:
            self.run()

    def join_engine(self) -> None:
        """Wait for the call to end, if it runs on a thread."""
        if self.ident is not None:
            self.join()

    def result(self) -> list:
        self.join_engine()
        if self._error is not None:
            raise self._error
        return self._outcomes


def _graph_group_name(op: Op) -> str:
    """The original tool's fusion-op key: ops sharing it are one comparison unit with one Index."""
    if op.l1_fusion_no:
        return "l1:" + op.l1_fusion_no
    names = op.original_op_names
    if not names:
        return op.name
    if len(names) == 1:
        return names[0] or op.name
    return "multi:" + "\x00".join(names)


def _graph_rows(rows: list[Row], graph: Graph) -> list[Row]:
    """Rows as the original lays them out with a graph JSON: every graph op in order, grouped into its fusion
    units (`Index` counts the units), ops without a dump file included; ground truth nothing maps to is left out,
    and so are, as the original's quantization rules say, ops inside a quant/dequant pair and the raw-integer
    tensors of quant (outputs) and dequant (inputs) ops."""
    left_out = quant_pair_members(graph)
    numbers: dict[str, int] = {}
    members: dict[int, list[Op]] = {}
    for op in graph.ops:
        n = numbers.setdefault(_graph_group_name(op), len(numbers))
        if op not in members.setdefault(n, []):
            members[n].append(op)
    by_op: dict[str, list[Row]] = {}
    outside: list[Row] = []
    for r in rows:
        p = r.pair
        if p is None or p.npu_op is None or (r.skipped and p.skip_reason is not None):
            continue
        if p.graph_op is None:
            outside.append(r)
        else:
            by_op.setdefault(p.graph_op, []).append(r)
    out: list[Row] = []
    for n, ops in sorted(members.items()):
        npu = ",".join(o.name for o in ops)
        for op in ops:
            truth = "*" if op.is_inserted else ",".join(graph.original_names(op))
            mine = by_op.pop(op.name, None)
            if op.name in left_out:
                continue
            if not mine:
                out.append(Row(index=n, op_type=op.type, npu_dump=npu, npu_data_type=None, npu_address=None,
                               ground_truth=truth, ground_truth_data_type=None, ground_truth_address=None,
                               tensor_index=None, shape=None, unmatched=True,
                               fail_reason=_no_dump_reason(op.name, op.type)))
                continue
            for r in mine:
                r.index, r.npu_dump, r.ground_truth = n, npu, truth
                out.append(r)
    for r in outside + [r for rest in by_op.values() for r in rest]:
        r.index = len(members)
        out.append(r)
    return out
