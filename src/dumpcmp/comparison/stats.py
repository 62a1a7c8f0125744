"""Statistics compare: a statistics dump (``dump_data: stats``, `dumpcmp.dumps.stats`) against the ground truth,
tensor by tensor, without the tensors on the device side.

    >>> from dumpcmp.comparison.stats import compare_stats
    >>> (result,) = compare_stats("stats_dump/", "golden/", fusion_json="model.json")
    >>> result.first_not_pass()             # the first tensor, in execution order, whose verdict is not pass
    >>> result.write("out.csv")

Each record of the statistics files is a device op's input or output; the records of an op make one device op for
the pairing (`dumpcmp.graph.pairing.pair_with_ground_truth`, with the graph JSON's fused and inserted ops, exactly
as the tensor compare pairs dump files). The right side is a ground-truth tree (each tensor's statistics computed
by the core in one pass, `compare.stats_many`), another device dump of tensors (device vs device: each tensor read
in its plain layout, as the tensor compare reads it), or another statistics dump (paired by op name, input/output
and slot).

Differences, per statistic, NPU minus ground truth: ``AbsDiff = |npu - gt|``; ``RelDiff`` is AbsDiff over the ground
truth's L2 norm for the L2 norm, and over the ground truth's largest magnitude ``max(|gt max|, |gt min|)`` for Max,
Min and Mean (a mean near zero would make its own relative difference meaningless). The verdict is ``error`` when
the NaN or Inf counts differ (where both sides have them), when one side's statistic is NaN or infinite and the
other's is not, or when a RelDiff exceeds the error threshold; ``warning`` when a RelDiff exceeds the warning
threshold; ``pass`` otherwise. A tensor with nothing to compare has no verdict (the Note says why).
"""

from __future__ import annotations

import csv
import io
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from dumpcmp.dumps.ground_truth import ground_truth_source, keys_by_index
from dumpcmp.dumps.layout import groups_of
from dumpcmp.dumps.scan import DumpGroup, DumpIndex, StatsEntry, holds_stats_only, scan
from dumpcmp.dumps.stats import STAT_FIELDS, STATS_FILE, StatsRecord, read_stats
from dumpcmp.errors import DumpcmpError, NotFoundError
from dumpcmp.graph.graph_json import Graph, load_graph
from dumpcmp.graph.pairing import DeviceOp, TensorPair, pair_with_ground_truth
from dumpcmp.support.native import core

__all__ = ["DEFAULT_ERROR", "DEFAULT_WARNING", "ERROR", "PASS", "WARNING", "StatsResult", "StatsRow", "compare_stats",
           "has_stats_dump", "verdict_of"]

DEFAULT_WARNING = 1e-3
"""RelDiff above which a tensor is a warning: about two float16 units in the last place (2**-11 = 4.9e-4 each), what
a float16 tensor's rounding alone can move its statistics by."""
DEFAULT_ERROR = 1e-2
"""RelDiff above which a tensor is an error: twenty float16 ulps, more than rounding through a few ops explains."""
PASS, WARNING, ERROR = "pass", "warning", "error"
_NAMES = {"max": "Max", "min": "Min", "mean": "Mean", "l2norm": "L2Norm"}


@dataclass
class Side:
    """One side's statistics of a tensor (None: not captured)."""

    max: float | None = None
    min: float | None = None
    mean: float | None = None
    l2norm: float | None = None
    nan_count: int | None = None
    inf_count: int | None = None

    @classmethod
    def of_record(cls, r: StatsRecord) -> Side:
        inf = None if r.pos_inf_count is None or r.neg_inf_count is None else r.pos_inf_count + r.neg_inf_count
        return cls(r.max, r.min, r.mean, r.l2norm, r.nan_count, inf)

    @classmethod
    def of_core(cls, d: Mapping[str, Any]) -> Side:
        return cls(d["max"], d["min"], d["mean"], d["l2norm"], d["nan_count"], d["pos_inf_count"] + d["neg_inf_count"])


@dataclass
class StatsRow:
    """One tensor of the statistics compare."""

    pair: TensorPair
    npu: Side | None = None
    gt: Side | None = None
    abs_diff: dict[str, float] = field(default_factory=dict)
    rel_diff: dict[str, float] = field(default_factory=dict)
    verdict: str = ""
    note: str = ""

    @property
    def shown_tensor(self) -> str:
        return self.pair.shown_tensor or f"{self.pair.ground_truth_key} (ground truth only)"


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def verdict_of(npu: Side, gt: Side, warning: float = DEFAULT_WARNING, error: float = DEFAULT_ERROR
               ) -> tuple[str, dict[str, float], dict[str, float], str]:
    """(verdict, AbsDiff by statistic, RelDiff by statistic, why) of one tensor's two sides (module docstring)."""
    absd: dict[str, float] = {}
    reld: dict[str, float] = {}
    why: list[str] = []
    bad = False
    for name, a, b in (("NaN count", npu.nan_count, gt.nan_count), ("Inf count", npu.inf_count, gt.inf_count)):
        if a is not None and b is not None and a != b:
            bad = True
            why.append(f"{name} {a} vs {b}")
    scale = max((abs(v) for v in (gt.max, gt.min) if _finite(v)), default=None)
    compared = 0
    for k in STAT_FIELDS:
        a, b = getattr(npu, k), getattr(gt, k)
        if a is None or b is None:
            continue
        compared += 1
        if not (_finite(a) and _finite(b)):
            if not (a == b or (math.isnan(a) and math.isnan(b))):
                bad = True
                why.append(f"{_NAMES[k]} {a:g} vs {b:g}")
            continue
        d = abs(a - b)
        absd[k] = d
        base = b if k == "l2norm" else scale
        if base is None or not math.isfinite(base):
            continue
        reld[k] = d / abs(base) if base != 0 else (0.0 if d == 0 else math.inf)
    if compared == 0:
        return "", absd, reld, "no statistic on both sides"
    worst = max(reld.values(), default=0.0)
    if worst > error:
        bad = True
    if bad:
        k = max(reld, key=lambda x: reld[x]) if reld else None
        if k is not None and reld[k] > error:
            why.append(f"{_NAMES[k]} RelDiff {reld[k]:.3g} > {error:g}")
        return ERROR, absd, reld, "; ".join(why)
    if worst > warning:
        k = max(reld, key=lambda x: reld[x])
        return WARNING, absd, reld, f"{_NAMES[k]} RelDiff {reld[k]:.3g} > {warning:g}"
    return PASS, absd, reld, ""


# --- the device side: statistics records as the pairing's device ops --------------------------------------------

@dataclass
class _StatsOp:
    records: dict[tuple[str, int], StatsRecord]


def stats_device_ops(records: Iterable[StatsRecord]) -> list[DeviceOp]:
    """The records of one run as the pairing's device ops: one per op name, its inputs and outputs as many as its
    highest slot says; an op recorded several times (several executions) keeps each tensor's newest record."""
    by_op: dict[str, dict[tuple[str, int], StatsRecord]] = {}
    types: dict[str, str] = {}
    for r in sorted(records, key=StatsRecord.order):
        by_op.setdefault(r.op_name, {})[(r.kind, r.slot)] = r  # newest (timestamp, task) last: it wins
        if r.op_type:
            types[r.op_name] = r.op_type
    ops = []
    for rank, (name, recs) in enumerate(by_op.items()):  # ops in the order of their first record
        n_in = max((s + 1 for k, s in recs if k == "input"), default=0)
        n_out = max((s + 1 for k, s in recs if k == "output"), default=0)
        ops.append(DeviceOp(name, types.get(name, ""), n_in, n_out, order=rank, ref=_StatsOp(recs)))
    return ops


def _record_of(pair: TensorPair) -> StatsRecord | None:
    ref = pair.npu_ref
    if not isinstance(ref, _StatsOp) or pair.index is None:
        return None
    return ref.records.get((pair.kind, pair.index))


# --- runs -------------------------------------------------------------------------------------------------------

def has_stats_dump(path: str | os.PathLike[str]) -> bool:
    """True when `path` holds statistics files and no tensor dump (what `dumpcmp compare` routes here)."""
    return holds_stats_only(path)


def _stats_runs(index: DumpIndex, selection: Mapping[str, Any], side: str) -> list[tuple[DumpGroup, list[StatsEntry]]]:
    from dumpcmp.comparison.runs import select_runs

    by_key: dict[Any, list[StatsEntry]] = {}
    for e in index.stats:
        by_key.setdefault(e.key, []).append(e)
    keyed = DumpIndex(index.root, groups=[DumpGroup(k) for k in by_key])
    return [(g, by_key[g.key]) for g in select_runs(keyed, dict(selection), side)]


def _read_records(entries: Sequence[StatsEntry]) -> list[StatsRecord]:
    out: list[StatsRecord] = []
    for e in entries:
        out.extend(e.open().records)  # DumpError naming the file and line
    return out


@dataclass
class StatsResult:
    """The statistics compare of one run."""

    run: str
    rows: list[StatsRow]
    notes: list[str] = field(default_factory=list)
    warning: float = DEFAULT_WARNING
    error: float = DEFAULT_ERROR
    model_name: str | None = None
    """The run's model name (its dump folder's), as an acl.json's dump_list names it."""

    def counts(self) -> dict[str, int]:
        out = {PASS: 0, WARNING: 0, ERROR: 0, "": 0}
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def first_error(self) -> StatsRow | None:
        """The first tensor in execution order whose verdict is error."""
        return next((r for r in self.rows if r.verdict == ERROR), None)

    def records_by_op(self) -> dict[str, list[StatsRecord]]:
        """The device side's statistics records of each device op of the rows, ops in execution order."""
        out: dict[str, list[StatsRecord]] = {}
        for r in self.rows:
            ref = r.pair.npu_ref
            if r.pair.npu_op is not None and r.pair.npu_op not in out and isinstance(ref, _StatsOp):
                out[r.pair.npu_op] = list(ref.records.values())
        return out

    def first_not_pass(self) -> StatsRow | None:
        """The first tensor in execution order whose verdict is warning or error."""
        return next((r for r in self.rows if r.verdict in (WARNING, ERROR)), None)

    def summary(self) -> str:
        c = self.counts()
        lines = [f"{self.run}: {len(self.rows)} tensors: {c[PASS]} pass, {c[WARNING]} warning, {c[ERROR]} error, "
                 f"{c['']} not compared (thresholds: warning {self.warning:g}, error {self.error:g})"]
        first = self.first_not_pass()
        if first is None:
            lines.append("  no tensor is worse than pass")
        else:
            lines.append(f"  first not pass, in execution order: {first.shown_tensor} ({first.verdict}: {first.note})")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    HEADER = ["Index", "OpType", "NPUDump", "TensorIndex", "GroundTruth", "Shape",
              *(f"{side} {_NAMES[k]}" for k in STAT_FIELDS for side in ("NPU", "GT")),
              *(f"{_NAMES[k]} {d}" for k in STAT_FIELDS for d in ("AbsDiff", "RelDiff")),
              "NPU NaN", "GT NaN", "NPU Inf", "GT Inf", "Verdict", "Note"]

    def table(self) -> list[list[str]]:
        def num(v: float | int | None) -> str:
            if v is None:
                return "N/A"
            if isinstance(v, int):
                return str(v)
            return "NaN" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf
                                                else f"{v:.6g}")

        out = [list(self.HEADER)]
        for i, r in enumerate(self.rows):
            p = r.pair
            rec = _record_of(p)
            shape = "N/A" if rec is None or rec.shape is None else "(" + ",".join(map(str, rec.shape)) + ")"
            npu, gt = r.npu or Side(), r.gt or Side()
            cells = [str(i), p.op_type or "", p.npu_column, p.tensor_index or "*", p.ground_truth_column, shape]
            for k in STAT_FIELDS:
                cells += [num(getattr(npu, k)), num(getattr(gt, k))]
            for k in STAT_FIELDS:
                cells += [num(r.abs_diff.get(k)), num(r.rel_diff.get(k))]
            cells += [num(npu.nan_count), num(gt.nan_count), num(npu.inf_count), num(gt.inf_count), r.verdict or "*",
                      r.note]
            out.append(cells)
        return out

    def csv_text(self) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(self.table())
        return buf.getvalue()

    def write(self, path: str | os.PathLike[str], *, force: bool = False) -> None:
        from dumpcmp.support.files import atomic_write_text

        atomic_write_text(path, self.csv_text(), force=force, what="result file")


def _golden_stats(folder: str, cache: dict[str, dict[tuple[str, int, int], StatsRecord]]
                  ) -> dict[tuple[str, int, int], StatsRecord]:
    """The rows of `folder`'s statistic.csv (what `dumpcmp golden --stats` writes) by (op, output index, timestamp);
    empty when the folder has none. DumpError naming the file and line when it cannot be read."""
    if folder not in cache:
        path = os.path.join(folder, STATS_FILE)
        cache[folder] = {} if not os.path.isfile(path) else {
            (r.op_name, r.slot, r.timestamp): r for r in read_stats(path).records
            if r.kind == "output" and r.timestamp is not None}
    return cache[folder]


def _right_stats(pairs: list[TensorPair], threads: int, notes: list[str] | None = None) -> list[Side | str | None]:
    """Each pair's ground-truth statistics (None: no ground truth; str: why it failed): the row of the ground-truth
    folder's statistic.csv for the file's op, output index and timestamp (`dumpcmp golden --stats`), else computed
    by the core. Which files were read goes to `notes`."""
    sources: list[Any] = []
    where: list[int] = []
    out: list[Side | str | None] = [None] * len(pairs)
    cache: dict[str, dict[tuple[str, int, int], StatsRecord]] = {}
    read_from: dict[str, int] = {}
    for i, p in enumerate(pairs):
        if p.ground_truth_ref is None or _record_of(p) is None:
            continue
        entry = p.ground_truth_ref
        folder = os.path.dirname(entry.path)
        row = _golden_stats(folder, cache).get((entry.op_name, entry.output_index, entry.timestamp))
        if row is not None:
            out[i] = Side.of_record(row)
            read_from[row.path] = read_from.get(row.path, 0) + 1
            continue
        try:
            source, _, _ = ground_truth_source(p.ground_truth_ref)
        except DumpcmpError as error:
            out[i] = str(error)
            continue
        sources.append(source)
        where.append(i)
    for i, d in zip(where, core.compare.stats_many(sources, threads)):
        out[i] = d if isinstance(d, str) else Side.of_core(d)
    if notes is not None:
        for path, n in read_from.items():
            notes.append(f"ground truth statistics read from {path} ({n} tensor{'s' * (n != 1)}; "
                         f"{len(sources)} computed from the files)")
    return out


def _rows(pairs: list[TensorPair], gt_sides: list[Side | str | None], warning: float, error: float) -> list[StatsRow]:
    rows = []
    for p, gt in zip(pairs, gt_sides):
        rec = _record_of(p)
        row = StatsRow(p, npu=None if rec is None else Side.of_record(rec))
        if p.skip_reason is not None:
            row.note = p.skip_reason
        elif rec is None:
            row.note = p.note or ("no statistics record" if p.npu_ref is not None else "no device tensor")
        elif isinstance(gt, str):
            row.note = gt
        elif gt is None:
            row.note = p.note or "no ground truth"
        else:
            row.gt = gt
            row.verdict, row.abs_diff, row.rel_diff, row.note = verdict_of(row.npu, gt, warning, error)
        rows.append(row)
    return rows


def _pair_stats_with_stats(left: list[DeviceOp], right: list[DeviceOp]) -> tuple[list[TensorPair], list[Side | None]]:
    """Device statistics against device statistics: the same op name, input/output and slot."""
    right_by = {d.op_name: d for d in right}
    pairs, sides = [], []
    for dev in sorted(left, key=lambda d: d.order):
        other = right_by.get(dev.op_name)
        for kind, n in (("input", dev.n_inputs), ("output", dev.n_outputs)):
            for i in range(n):
                rec = other.ref.records.get((kind, i)) if other is not None else None
                pairs.append(TensorPair(dev.op_name, dev.op_type, kind, i, f"{dev.op_name}:{kind}:{i}",
                                        dev.op_name if rec else None, (dev.op_name,) if rec else (),
                                        f"{dev.op_name}:{kind}:{i}", npu_ref=dev.ref, ground_truth_ref=rec,
                                        note=None if rec else "no statistics record on the right"))
                sides.append(Side.of_record(rec) if rec else None)
    return pairs, sides


def compare_stats(
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    *,
    fusion_json: str | os.PathLike[str] | None = None,
    quant_json: str | os.PathLike[str] | None = None,
    warning: float = DEFAULT_WARNING,
    error: float = DEFAULT_ERROR,
    threads: int = 0,
    gt_sample: int | Mapping[int, int] | None = None,
    time: str | None = None,
    device_id: int | None = None,
    model_name: str | None = None,
    model_id: int | None = None,
    data_index: int | None = None,
) -> list[StatsResult]:
    """Compare every selected run of the statistics dump `left` with `right` (ground truth, a device dump of
    tensors, or another statistics dump): one result per run, rows in execution order."""
    from dumpcmp.comparison.runs import sample_ground_truth

    if not 0 <= warning <= error:
        raise DumpcmpError(f"thresholds: warning {warning:g} must be between 0 and error {error:g}")
    left_index = scan(left)
    if not left_index.stats:
        raise NotFoundError(f"{left}: no statistics files (statistic.csv) found")
    selection = {"time": time, "device_id": device_id, "model_name": model_name, "model_id": model_id,
                 "data_index": data_index}
    runs = _stats_runs(left_index, selection, "left")
    right_index = scan(right)
    graph: Graph | None = None
    if fusion_json is not None or quant_json is not None:
        main = fusion_json if fusion_json is not None else quant_json
        graph = load_graph(main, quant_fusion=quant_json if fusion_json is not None else None)
    results = []
    iterations = len({g.key.data_index for g, _ in runs})
    for group, entries in runs:
        ops = stats_device_ops(_read_records(entries))
        notes: list[str] = []
        if len(right_index.ground_truth):
            gt_files, notes = sample_ground_truth(group.key.data_index, right_index.ground_truth, right_index.root,
                                                  gt_sample, iterations)
            pairs = pair_with_ground_truth(ops, keys_by_index(gt_files, notes), graph)
            if graph is None:
                pairs = [p for p in pairs if not (p.kind == "input" and p.ground_truth_ref is None)]
            else:
                # as the tensor compare lays rows out with a graph: ground truth nothing maps to is left out, and
                # so are the raw-integer tensors of quant/dequant ops
                pairs = [p for p in pairs if p.npu_op is not None and p.skip_reason is None]
            sides = _right_stats(pairs, threads, notes)
        elif right_index.stats:
            right_runs = _stats_runs(right_index, {}, "right")
            match = [r for r in right_runs if r[0].key.data_index == group.key.data_index] or right_runs
            if len(match) != 1:
                raise NotFoundError(f"{right}: several statistics runs could pair with {group.key.describe()}")
            pairs, sides = _pair_stats_with_stats(ops, stats_device_ops(_read_records(match[0][1])))
        elif right_index.dump_count:
            pairs, sides = _pair_stats_with_dumps(ops, right_index, group, threads)
        else:
            raise NotFoundError(f"{right}: no ground truth, no dumps and no statistics files found")
        results.append(StatsResult(group.key.describe(), _rows(pairs, sides, warning, error), notes, warning, error,
                                   group.key.model_name))
    return results


def _pair_stats_with_dumps(ops: list[DeviceOp], right_index: DumpIndex, group: DumpGroup, threads: int
                           ) -> tuple[list[TensorPair], list[Side | str | None]]:
    """Device statistics against a device dump of tensors: each right tensor's statistics in its plain layout, as the
    tensor compare reads a device side with no ground truth to follow."""
    from dumpcmp.comparison.sources import Sides, device_ops

    match = [g for g in right_index.groups if g.key.data_index == group.key.data_index] or right_index.groups
    if len(match) != 1:
        names = ", ".join(g.key.describe() for g in match)
        raise NotFoundError(f"{right_index.root}: several dump runs could pair with {group.key.describe()} "
                            f"({names})")
    right_by = {d.op_name: d for d in device_ops(match[0])}
    pairs: list[TensorPair] = []
    sources: list[Any] = []
    where: list[int] = []
    sides: list[Side | str | None] = []
    for dev in sorted(ops, key=lambda d: d.order):
        other = right_by.get(dev.op_name)
        for kind, n in (("input", dev.n_inputs), ("output", dev.n_outputs)):
            for i in range(n):
                pair = TensorPair(dev.op_name, dev.op_type, kind, i, f"{dev.op_name}:{kind}:{i}",
                                  dev.op_name if other else None, (dev.op_name,) if other else (),
                                  f"{dev.op_name}:{kind}:{i}", npu_ref=dev.ref,
                                  ground_truth_ref=other.ref if other else None,
                                  note=None if other else "no dump of this op on the right")
                side: Side | str | None = None
                if other is not None:
                    try:
                        t = Sides.tensor(other.ref, kind, i)
                        dst, shape = Sides.own_plain(t, pair)
                        dump_file = other.ref.dump._file
                        src = core.compare.source_from_dump(dump_file, kind, i) if dst is None else \
                            core.compare.source_from_dump(dump_file, kind, i, dst, list(shape), groups_of(t))
                        sources.append(src)
                        where.append(len(pairs))
                    except DumpcmpError as error:
                        side = str(error)
                pairs.append(pair)
                sides.append(side)
    for i, d in zip(where, core.compare.stats_many(sources, threads)):
        sides[i] = d if isinstance(d, str) else Side.of_core(d)
    return pairs, sides

