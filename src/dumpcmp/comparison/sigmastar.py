"""SigmaStar's compare, their way: a sample dump (the fixed or float SigmaStar model's `sigma_outtensor_dump.bin`)
against a benchmark (another SigmaStar dump, or the `.npy` tree `dumpcmp golden` wrote), tensor by tensor, as the
SDK's `auto_dump_debug.sh` / `compareAccuracy` do.

In: the two paths. Out: `SigmaResult` with one `SigmaRow` per output tensor of the sample that is not a constant
and has a tensor of the same `name:` in the benchmark, in the SDK's order (op index k). Per row, their three
numbers, computed here in float64 as their C code does (a = sample, b = benchmark, n elements):

    MSE = sum((a - b)^2) / n      COS = sum(a*b) / (sqrt(sum(a^2)) * sqrt(sum(b^2)))
    "RMSE" = sum|a - b| / sum|b|  (a relative L1 error: `RelativeL1` in our CSV)

plus the ten usual metrics from the C++ engine. Shapes: a 4-D benchmark whose shape differs is retried transposed
NHWC -> NCHW; a 4-D shape that reads the same both ways (1,18,18,18) with COS < 0.98 is recomputed transposed and
the better COS kept, with a note; a `.npy` benchmark (NCHW, as ONNX holds it) is first put in NHWC, as their ONNX
dump script writes it. A row whose "RMSE" rises by more than 1.00 over the previous row's is flagged (`jump`).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dumpcmp.comparison.metrics import METRICS, MetricResult, compare_arrays
from dumpcmp.dumps.ground_truth import INDEX_NAME, load_npy, read_golden_index
from dumpcmp.dumps.sigmastar import DTYPES, SigmaTensor, is_sigmastar_dump, open_sigmastar
from dumpcmp.errors import DumpcmpError, NotFoundError
from dumpcmp.support.lazy_numpy import np

__all__ = ["JUMP", "AMBIGUOUS_COS", "EXTRA_COLUMNS", "SigmaResult", "SigmaRow", "as_comparison", "benchmark_tensors",
           "compare_sigmastar", "run_name", "sigmastar_metrics"]

#: their jump threshold: "RMSE" rising by more than this from the previous layer is flagged
JUMP = 1.00
#: below this COS an NHWC/NCHW-ambiguous 4-D shape is recomputed transposed
AMBIGUOUS_COS = 0.98
FLAG = "**** OVER threshold!!!! ****"
CSV_COLUMNS = ("Index", "Label", "TensorName", "OpType", "Shape", "BenchmarkShape", *METRICS.values(), "MSE",
               "RelativeL1", "Jump", "Note")


def sigmastar_metrics(a: Any, b: Any) -> tuple[float, float, float]:
    """(MSE, COS, "RMSE" = sum|a-b|/sum|b|) of sample `a` against benchmark `b`, in float64 over the flat values,
    by SigmaStar's formulas (a zero norm or a zero sum|b| gives NaN or inf, as their C code does)."""
    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        d = x - y
        mse = float(np.dot(d, d) / x.size) if x.size else math.nan
        cos = float(np.float64(np.dot(x, y)) / (np.sqrt(np.dot(x, x)) * np.sqrt(np.dot(y, y))))
        rel = float(np.float64(np.abs(d).sum()) / np.abs(y).sum())
    return mse, cos, rel


@dataclass
class SigmaRow:
    """One compared tensor. `error`: why it could not be compared (the other fields then stay None)."""

    index: int
    label: str
    name: str
    op_type: str
    op_index: int
    shape: tuple[int, ...]
    benchmark_shape: tuple[int, ...] | None = None
    mse: float | None = None
    cos: float | None = None
    rel_l1: float | None = None
    metrics: MetricResult | None = None
    note: str = ""
    error: str = ""
    jump: bool = False
    data_type: str = "float"
    """The header's type (`SGS_S8`, `SGS_S16`, `float`, ...): what the SigmaStar model holds the tensor in."""
    load: Callable[[], tuple[Any, Any]] | None = field(default=None, repr=False, compare=False)
    """(sample, benchmark) values as they were compared (the benchmark transposed where the row's note says)."""

    def line(self) -> str:
        """Their console line: `{k}.{name}.xx.output{i}  OP_TYPE:..  MSE:..  COS:..  RMSE:..` (flagged jumps)."""
        head = f"{self.label:<40}OP_TYPE:{self.op_type:<12}"
        if self.error:
            return f"{head}not compared: {self.error}"
        text = f"{head}MSE:{self.mse:<12.6f}COS:{self.cos:<12.6f}RMSE:{self.rel_l1:.6f}"
        return f"{text}     {FLAG}" if self.jump else text


def _dims(shape: tuple[int, ...] | None) -> str:
    return "" if shape is None else "[" + ",".join(map(str, shape)) + "]"


@dataclass
class SigmaResult:
    sample: str
    benchmark: str
    rows: list[SigmaRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        return [row.line() for row in self.rows]

    def csv_text(self) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for r in self.rows:
            if r.metrics is None:
                numbers = ["NaN"] * (len(METRICS) + 2)
            else:
                numbers = [*r.metrics.formatted(), f"{r.mse:.6f}", f"{r.rel_l1:.6f}"]
            w.writerow([r.index, r.label, r.name, r.op_type, _dims(r.shape), _dims(r.benchmark_shape), *numbers,
                        "yes" if r.jump else "", r.error or r.note])
        return out.getvalue()

    def write(self, path: str | os.PathLike[str], *, force: bool = False) -> Path:
        from dumpcmp.support.files import atomic_write_text

        return atomic_write_text(path, self.csv_text(), force=force, what="result file")


# ---- the benchmark side ------------------------------------------------------------------------------------------

Loader = Callable[[], Any]


def _sigmastar_benchmark(path: str) -> dict[str, tuple[tuple[int, ...], Loader]]:
    dump = open_sigmastar(path)
    out: dict[str, tuple[tuple[int, ...], Loader]] = {}
    for t in dump.tensors:
        if t.direction == "out" or t.name not in out:
            out[t.name] = (t.shape, (lambda t=t: dump.values(t)))
    return out


def _npy_benchmark(folder: str) -> dict[str, tuple[tuple[int, ...], Loader]]:
    """`dumpcmp golden`'s tree, by tensor name (golden_index.csv), 4-D tensors put in NHWC."""
    if not os.path.isfile(os.path.join(folder, INDEX_NAME)):
        raise NotFoundError(f"{folder}: no {INDEX_NAME} (the benchmark must be a SigmaStar dump or the folder "
                            "`dumpcmp golden` wrote for one sample, whose index maps tensor names to files)")
    out: dict[str, tuple[tuple[int, ...], Loader]] = {}

    def load(path: str) -> Any:
        array = load_npy(path)
        array = np.asarray(array, dtype=np.float32)
        return np.ascontiguousarray(array.transpose(0, 2, 3, 1)) if array.ndim == 4 else array

    for rec in read_golden_index(folder):
        if rec.file and rec.tensor_name:
            shape = tuple(rec.shape or ())
            nhwc = (shape[0], shape[2], shape[3], shape[1]) if len(shape) == 4 else shape
            out[rec.tensor_name] = (nhwc, (lambda p=os.path.join(folder, rec.file): load(p)))
    return out


def benchmark_tensors(path: str) -> dict[str, tuple[tuple[int, ...], Loader]]:
    """The benchmark's tensors by name: (shape, loader of its float32 values), 4-D ones in NHWC as the SDK holds
    them (a SigmaStar dump as it is, `dumpcmp golden`'s .npy tree transposed)."""
    if is_sigmastar_dump(path):
        return _sigmastar_benchmark(path)
    if os.path.isdir(path):
        return _npy_benchmark(path)
    if not os.path.exists(path):
        raise NotFoundError(f"{path}: no such file or directory")
    raise DumpcmpError(f"{path}: the benchmark is neither a SigmaStar dump (first line 'isFloat: N') nor a folder "
                       "of .npy files written by `dumpcmp golden`")


# ---- the comparison ----------------------------------------------------------------------------------------------

def _nchw(b: Any) -> Any:
    return np.ascontiguousarray(b.transpose(0, 3, 1, 2))


def _as_compared(b: Any, row: SigmaRow) -> Any:
    """The benchmark as `_compare_one` compared it with the row's sample (NHWC->NCHW where its note says so)."""
    return _nchw(b) if "NHWC->NCHW" in row.note and b.ndim == 4 else b


def _compare_one(row: SigmaRow, a: Any, b: Any, threads: int) -> None:
    row.benchmark_shape = tuple(b.shape)
    if a.size != b.size:
        row.error = f"{a.size} values in the sample, {b.size} in the benchmark"
        return
    ambiguous = False
    if b.ndim == 4:
        transposed = (b.shape[0], b.shape[3], b.shape[1], b.shape[2])
        if tuple(a.shape) != tuple(b.shape):
            if tuple(a.shape) != transposed:
                row.error = (f"shape {list(a.shape)} is neither the benchmark's NHWC {list(b.shape)} nor its NCHW "
                             f"{list(transposed)}")
                return
            b = _nchw(b)
            row.note = "benchmark NHWC->NCHW"
        else:
            ambiguous = transposed == tuple(b.shape)
    mse, cos, rel = sigmastar_metrics(a, b)
    if ambiguous and cos < AMBIGUOUS_COS:
        b2 = _nchw(b)
        mse2, cos2, rel2 = sigmastar_metrics(a, b2)
        if cos2 > cos:
            row.note = f"origin COS {cos:.6f} < {AMBIGUOUS_COS}, benchmark NHWC->NCHW transposed"
            b, mse, cos, rel = b2, mse2, cos2, rel2
    row.mse, row.cos, row.rel_l1 = mse, cos, rel
    row.metrics = compare_arrays(np.ascontiguousarray(a.reshape(-1)), np.ascontiguousarray(b.reshape(-1)),
                                 threads=threads)


def compare_sigmastar(sample: str | os.PathLike[str], benchmark: str | os.PathLike[str], *,
                      threads: int = 0) -> SigmaResult:
    """Compare every output tensor of the SigmaStar dump `sample` (constants skipped, as their compare does)
    with the tensor of the same name in `benchmark`. A tensor that cannot be compared (sizes or shapes that do not
    fit, a benchmark file that cannot be read) becomes a row with its `error`; the others go on."""
    sample, benchmark = os.fspath(sample), os.fspath(benchmark)
    dump = open_sigmastar(sample)
    bench = benchmark_tensors(benchmark)
    result = SigmaResult(sample, benchmark)
    chosen: list[SigmaTensor] = [t for t in dump.tensors if t.direction == "out" and not t.constant]
    missing = [t.name for t in chosen if t.name not in bench]
    chosen = sorted((t for t in chosen if t.name in bench), key=lambda t: (t.op_index, t.index))
    for t in chosen:
        row = SigmaRow(t.index, t.label, t.name, t.op_type, t.op_index, t.shape, data_type=t.data_type)
        result.rows.append(row)
        _, load = bench[t.name]
        try:
            _compare_one(row, dump.values(t), load(), threads)
        except DumpcmpError as error:
            row.error = str(error)
        if not row.error:
            row.load = lambda t=t, load=load, row=row: (dump.values(t), _as_compared(load(), row))
        if row.note:
            result.notes.append(f"{row.label}: {row.note}")
    last = None
    for row in result.rows:
        if row.rel_l1 is None or not math.isfinite(row.rel_l1):
            continue
        row.jump = last is not None and row.rel_l1 - last > JUMP
        last = row.rel_l1
    constants = sum(1 for t in dump.tensors if t.direction == "out" and t.constant)
    if missing:
        result.notes.append(f"{len(missing)} output tensor(s) of the sample have no tensor of the same name in the "
                            f"benchmark, not compared (first: {missing[0]!r})")
    if constants:
        result.notes.append(f"{constants} constant tensor(s) (bConstant:1) not compared")
    if not result.rows:
        raise NotFoundError(f"{sample}: no output tensor has a tensor of the same name in {benchmark}")
    return result


# ---- the regular result rows (the report, the gates) ---------------------------------------------------------------

#: the columns a SigmaStar compare's rows carry after the usual ones (`as_comparison`)
EXTRA_COLUMNS = ("MSE", "RelativeL1", "Jump", "Note")


def _fixed(v: float | None) -> str:
    return "NaN" if v is None or not math.isfinite(v) else f"{v:.6f}"


def run_name(sample: str) -> str:
    """The run a SigmaStar dump is (report titles, locate's result): its file name."""
    return Path(sample).name


def as_comparison(result: SigmaResult, producers: Mapping[str, tuple[int, str, str]] | None = None) -> Any:
    """`result` as the regular rows the report, the advice and the gates read (`ComparisonResult`): one `Row` per
    SigmaRow, its ten metrics, the sample's shape, its `TensorIndex` the tensor name, its device data type the
    header's (SGS_S8: int8, so the int8 advice applies; the values compared are dequantised), and its MSE,
    RelativeL1 (their "RMSE"), Jump and Note as `extra_columns`; each row reads its values again for the histograms
    (`Row.sources`).

    `producers` (tensor name -> (position, node name, op type) of the ONNX node that produces it): rows follow the
    ONNX graph's order (Index: the node's position) and name their node (NPUDump, GroundTruth) and its op type;
    tensors no node produces come last in the SDK's order, with a note. Without it: the SDK's order, Index its op
    index k, NPUDump its `{k}.{name}.xx.output{i}` label, GroundTruth the tensor name."""
    from dumpcmp.comparison.rows import ComparisonResult, Row

    order = list(result.rows)
    unknown: list[SigmaRow] = []
    if producers is not None:
        unknown = [r for r in order if r.name not in producers]
        order = sorted((r for r in order if r.name in producers), key=lambda r: producers[r.name][0]) + unknown
    rows: list[Row] = []
    by_row: dict[int, SigmaRow] = {}
    for s in order:
        known = producers.get(s.name) if producers is not None else None
        index, npu, truth, op_type = (known[0], known[1], known[1], known[2]) if known else \
            (s.op_index, s.label, s.name, s.op_type)
        device_type = np.dtype(DTYPES[s.data_type]).name if s.data_type in DTYPES else "float32"
        row = Row(index, op_type, npu, device_type, None, truth, "float32", None, s.name, s.shape, result=s.metrics,
                  fail_reason=s.error, failed=bool(s.error), sources=s.load)
        by_row[id(row)] = s
        rows.append(row)

    def cell(get: Callable[[SigmaRow], str]) -> Callable[[Any], str]:
        return lambda row: get(by_row[id(row)]) if id(row) in by_row else ""

    columns = dict(zip(EXTRA_COLUMNS, (cell(lambda s: _fixed(s.mse)), cell(lambda s: _fixed(s.rel_l1)),
                                       cell(lambda s: "yes" if s.jump else ""), cell(lambda s: s.note))))
    algorithms = next((tuple(r.metrics.metrics) for r in result.rows if r.metrics is not None), tuple(METRICS))
    notes = list(result.notes)
    if unknown:
        notes.append(f"{len(unknown)} tensor(s) are produced by no node of the ONNX model, listed last in the "
                     f"SDK's order (first: {unknown[0].name!r})")
    return ComparisonResult(rows, algorithms, result.sample, result.benchmark, run_name(result.sample),
                            npu_has_address=False,
                            ground_truth_has_address=False, notes=notes, extra_columns=columns)
