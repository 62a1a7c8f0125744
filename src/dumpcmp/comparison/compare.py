"""Model-level comparison: every dumped operator of "My Output" (the device) against its "Ground Truth".

    >>> import dumpcmp
    >>> result = dumpcmp.compare("dumps/", "ground_truth/", fusion_json="model.json")
    >>> result.first_below(0.99)          # the first tensor, in execution order, whose cosine drops below 0.99
    >>> result.write("result.csv")        # the original tool's columns and formats
    >>> df = result.to_pandas()           # or iterate result.rows

The left side is a device dump tree (any layout of the spec) or folder; the right side a folder of ground-truth
``{op}.{output_index}.{timestamp}.npy`` (or ``.pb``/``.quant``) files, or another device dump of the same model
(device vs device, paired by file name). Pairing follows `dumpcmp.graph.pairing` (graph JSON with
``fusion_json``, merged with a quantization fusion rule file ``quant_json``); the device tensor is read through its
layout (NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ...), converted to the ground truth's layout and cropped to its shape inside
the C++ engine, window by window, so no tensor is ever held whole in memory. One bad operator never stops the run: its
row says why.

This module holds `compare` and `compare_runs` and the batched engine calls that turn pairs into rows; the runs and
their pairs come from `runs`, each side's engine source from `sources`, the rows and their wording from `rows`.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from dumpcmp.dumps import layout as _layout
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.gcpause import paused
from dumpcmp.support.native import core
from dumpcmp.errors import DumpcmpError
from dumpcmp.comparison.metrics import parse_algorithms
from dumpcmp.comparison.rows import (
    ComparisonResult,
    Row,
    RowStore,
    count_reason,
    finish_row,
    let_go,
    no_truth_reason,
    ops_dumped,
    quant_left_out,
    weight_inputs,
)
from dumpcmp.comparison.stream import ReorderBuffer, graph_layout, pair_layout
from dumpcmp.comparison.prefix import prefix_notes, prefix_sources
from dumpcmp.comparison.runs import PairedRun, paired_runs
from dumpcmp.comparison.sources import (
    DeviceRef,
    DeviceTruth,
    Sides,
    check_npu_vs_npu,
    npu_vs_npu_note,
    restored_source,
    slice_reason,
    stored_source,
)
from dumpcmp.graph.pairing import TensorPair
from dumpcmp.support.progress import Progress
from dumpcmp.dumps.ground_truth import dtype_name, ground_truth_source, ground_truth_sources

__all__ = ["ComparisonResult", "PairedRun", "Row", "compare", "compare_runs", "paired_runs"]

# a batch of pairs handed to the engine at once: bounded so the mappings held open stay few
_BATCH_PAIRS = 64
_BATCH_ELEMENTS = 1 << 27

def _shape(shape: Sequence[int]) -> tuple[int, ...]:
    return tuple(map(int, shape))


@paused()  # millions of long-lived records on a large model: see dumpcmp.support.gcpause
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
    custom_algorithms: Any = None,
    max_elements: int = 0,
    client: Any = None,
    per_slice: bool = False,
    close_fusion_json: str | os.PathLike[str] | None = None,
    npu_vs_npu: str = "restored",
    row_sinks: Callable[[list[ComparisonResult]], Sequence[Callable[[Row], object] | None]] | None = None,
    keep_refs: bool = True,
) -> list[ComparisonResult]:
    """Compare every run of the left tree that matches the selection; one ComparisonResult per run.

    algorithms: `-alg` indices or names (default all ten); custom: a folder of user layout converters;
    time/device_id/model_name/model_id/data_index: select runs of the left tree; threads: 0 = all cores;
    quiet: no progress bar; precise: float64 per-element terms instead of the original tool's float32 ones;
    gt_sample: the ground truth's sample folder for every run, or {data_index: folder}
    (default: folder k for data_index k); right_time/right_data_index: the right-hand run of a device-vs-device
    comparison; custom_algorithms: the `-c DIR -alg` plug-ins (`dumpcmp.comparison.custom_alg.CustomAlgorithms`),
    whose columns then replace `algorithms`; max_elements: compare only each tensor's first N elements (the
    original's `-max N`; 0: whole tensors), noted in the result's notes; client: a Dask distributed Client (or
    `dumpcmp.comparison.cluster.connect`'s Cluster) whose workers compare the pairs, with the same rows;
    per_slice: FFTS+ manual slices compared one by one (the original's `-ffts`), else merged (dumps/ffts.py);
    close_fusion_json: the graph of the model compiled without fusion, whose device dump `right` is (the
    original's `-cf`): the fused dump's tensors are compared with the unfused ops' outputs they stand for.
    npu_vs_npu: how a device dump is compared with another (`dumpcmp.comparison.sources.NPU_VS_NPU_MODES`):
    "restored" (default, as the current msaccucmp) decodes each tensor to its original shape, padding removed, and
    compares float32 values; "raw" (as msaccucmp 72c5bd4c) the stored buffers, padding included.
    row_sinks: called with the results before any row is compared (their rows still empty, notes not yet made);
    returns, for each, None or where its rows go as well, one by one in their final order, as batches finish (the
    CLI writes the result file so).
    keep_refs: False lets each row's pair's files go once the row is put (`dumpcmp.comparison.rows.let_go`: the
    device dump's header and the scan entries, while the run goes on), for a caller that reads no tensor of the
    rows again (the CLI without --html); `row.pair.npu_ref`/`ground_truth_ref` are then `LetGo` placeholders.
    """
    check_npu_vs_npu(npu_vs_npu)
    algos = parse_algorithms(algorithms if custom_algorithms is None else custom_algorithms.builtin)
    placed = None
    if client is not None and close_fusion_json is not None:
        from dumpcmp.errors import ConfigError

        raise ConfigError("-cf (a fused model's dump against the unfused model's) is not available on a cluster")
    if client is not None:  # `-l HOST=PATH,...`: the left side scanned where it lies, by the cluster's workers
        from dumpcmp.comparison.cluster import refuse_custom, scan_on_workers

        refuse_custom(custom_algorithms)
        placed = scan_on_workers(client, left)
    runs = paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json, time=time, device_id=device_id,
                       model_name=model_name, model_id=model_id, data_index=data_index, gt_sample=gt_sample,
                       right_time=right_time, right_data_index=right_data_index,
                       left_index=placed.index if placed else None, left_ops=placed.ops if placed else None,
                       per_slice=per_slice, close_fusion_json=close_fusion_json)
    sides = Sides(custom)
    if client is not None:
        _refuse_slices_on_cluster(runs, placed)
    # each run's result made before comparing: its rows' order depends on the pairs and the graph alone, and the
    # rows go through a reorder buffer into it as batches finish, in any order (issue #35)
    constants = _constant_files(right)
    made = [_streamed_result(run, algos, left, right, constants, custom_algorithms) for run in runs]
    also = list(row_sinks([result for result, _, _ in made])) if row_sinks is not None else []
    for (result, buffer, _), more in zip(made, also):
        if more is not None:
            buffer.tee(more)
    for _, buffer, _ in made:
        buffer.start()
    if client is not None:  # the same rows, compared by the cluster's workers
        from dumpcmp.comparison.cluster import cluster_rows

        cluster_rows(client, runs, custom, algos, threads, quiet, precise, placed, max_elements,
                     npu_vs_npu=npu_vs_npu, puts=[put for _, _, put in made])
    else:
        for run, (_, _, put) in zip(runs, made):
            _compare_pairs(run.pairs, sides, algos, run.device_vs_device, threads, quiet, run.run, precise,
                           custom_algorithms, max_elements, npu_vs_npu, put=put,
                           let_go_refs=None if keep_refs else constants)
    results = []
    for run, (result, buffer, _) in zip(runs, made):
        if not buffer.complete:  # never expected: every pair's row is put, compared or not
            raise DumpcmpError(f"{run.run}: the rows of pairs {buffer.missing()[:5]} are missing")
        # the notes last: a cluster adds the workers that compared the run
        result.notes = run.notes + prefix_notes(max_elements) + \
            ([npu_vs_npu_note(npu_vs_npu)] if run.device_vs_device else [])
        results.append(result)
    return results


def _streamed_result(run: PairedRun, algos: tuple[int, ...], left: str | os.PathLike[str],
                     right: str | os.PathLike[str], constants: frozenset[str],
                     custom_algorithms: Any) -> tuple[ComparisonResult, ReorderBuffer, Callable[[int, Row], None]]:
    """A run's result before its rows (rows: empty), the reorder buffer that fills them in their final order, and
    what a finished row is put through (pair number, row)."""
    graph = run.graph
    if graph is not None:
        layout = graph_layout([p if p.skip_reason is None else None for p in run.pairs], graph)
        weights = weight_inputs([run.pairs[k] for k in layout.kept()], graph)
        left_out = quant_left_out(run.pairs, graph)
    else:
        layout, weights, left_out = pair_layout(len(run.pairs)), frozenset(), ()
    # compact columns once written, unless custom algorithms key their cells by the row object
    rows: list[Row] = RowStore() if custom_algorithms is None else []  # type: ignore[assignment]
    result = ComparisonResult(rows, algos, os.fspath(left), os.fspath(right), run.run,
                              ground_truth_has_address=run.device_vs_device or run.device_truth,
                              constant_files=constants, weight_inputs=weights,
                              dumped_ops=tuple(ops_dumped(run.pairs)), left_out=left_out, graph=graph,
                              custom_algorithms=custom_algorithms)
    buffer = ReorderBuffer(layout, result.rows.append, result.rows.extend)
    if not run.device_truth:
        return result, buffer, buffer.putter()

    def put(number: int, row: Row) -> None:  # -cf: the original prints no address for the unfused side (NaN)
        row.ground_truth_address = 0
        buffer.put(number, row)

    return result, buffer, put


def _refuse_slices_on_cluster(runs: list[PairedRun], placed: Any) -> None:
    """FFTS+ slices are merged in this process (dumps/ffts.py), and a cluster's tasks carry file paths: such a run is
    compared here, never by the workers with one slice standing for the whole op."""
    from dumpcmp.dumps.ffts import MergedDump, is_slice

    sliced = placed is not None and any(is_slice(e) for e in placed.index.entries())
    sliced = sliced or any(isinstance(getattr(ref, "dump", None), MergedDump) for run in runs for p in run.pairs
                           for ref in (p.npu_ref, p.ground_truth_ref))
    if sliced:
        raise DumpcmpError("FFTS+ sliced dumps are merged and compared on this machine: run without --cluster")


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
        from dumpcmp.dumps.scan import several_runs_error

        raise several_runs_error(left, [r.run for r in results])
    return results[0]


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
    return core.compare.source_from_array(np.ascontiguousarray(cut))


def _original(t: Any) -> str:
    """` (original shape [..])` of a dump tensor that records one (the device-vs-device mismatch message)."""
    return "" if t.original_shape is None else f" (original shape {list(t.original_shape)})"


def _compared_shape(fmt: str, ndim: int, pair: TensorPair, gt_shape: Sequence[int], count: int) -> tuple[int, ...]:
    """The Shape of a compared row, as the original gives it: the flat length where no layout conversion
    happened (ND against ND) or for a scalar, else the (ground-truth) shape it was converted to. fmt and ndim: the
    device tensor's format and number of dimensions."""
    if ndim == 0 or len(gt_shape) == 0:
        return (count,)
    origin = (pair.origin_format or "").upper()
    dst = fmt if origin in ("", fmt) else origin
    if dst == "ND" and fmt not in ("FRACTAL_NZ", "NDC1HWC0"):
        return (count,)
    return _shape(gt_shape)


def _compare_pairs(pairs: list[TensorPair], sides: Sides, algos: tuple[int, ...], device_vs_device: bool,
                   threads: int, quiet: bool, label: str, precise: bool = False, custom: Any = None,
                   max_elements: int = 0, npu_vs_npu: str = "restored",
                   put: Callable[[int, Row], None] | None = None,
                   let_go_refs: frozenset[str] | None = None) -> list[Row]:
    """The rows of `pairs`, in pair order; with `put`, each row is put (pair number, row) once it is finished and
    every row before it has been, and none is kept (the list returned is empty). `let_go_refs` (the constant
    files): with `put`, each put row's pair lets its files go (`let_go`)."""
    rows: list[Row | None] = []
    released = 0
    pending: list[tuple[Row, Any, Any, bool, tuple[bool, bool, str, str]]] = []
    pending_elements = 0
    # The batch on the engine's thread. While one batch is compared, this thread opens the next one's files, and
    # afterwards fills in the rows of the one before and lets its mappings go: the engine runs one batch after
    # another without waiting for either (20-30 ms at every batch boundary, measured). One thread for the whole
    # loop (`_Engine`), the next batch queued before the previous one is waited for.
    engine = _Engine()
    running: _Batch | None = None
    # the ground truth of the next pairs, opened in one call of the core (`ground_truth_sources`): number -> opened
    opened: dict[int, tuple[Any, Any, str]] = {}
    opened_upto = 0

    # the device side of those pairs read in two calls of the core where nothing is rare (`Sides.device_batch`):
    # number -> (source, count, stored bytes, data type, format, stored shape, address)
    ready: dict[int, tuple[Any, ...]] = {}

    def open_ahead(start: int) -> int:
        opened.clear()  # what is left belongs to pairs that failed before reading their ground truth
        ready.clear()
        ahead = [k for k in range(start, min(len(pairs), start + _BATCH_PAIRS))
                 if pairs[k].comparable and pairs[k].skip_reason is None]
        if device_vs_device:  # both sides device dumps: (left, its count, right, its count, left facts, right facts)
            both = [k for k in ahead if pairs[k].npu_ref is not None and isinstance(pairs[k].ground_truth_ref,
                                                                                     DeviceRef)]
            for k, got in zip(both, sides.device_pairs([(pairs[k].npu_ref, pairs[k].ground_truth_ref, pairs[k].kind,
                                                         pairs[k].index) for k in both], npu_vs_npu == "raw")):
                if got is not None:
                    ready[k] = got
            return start + _BATCH_PAIRS
        for k, got in zip(ahead, ground_truth_sources([pairs[k].ground_truth_ref for k in ahead])):
            if got is not None:
                opened[k] = got
        plain = [k for k in ahead if k in opened and pairs[k].npu_ref is not None]
        for k, got in zip(plain, sides.device_batch([(pairs[k].npu_ref, pairs[k], tuple(opened[k][1]))
                                                     for k in plain])):
            if got is not None:
                ready[k] = got
        return start + _BATCH_PAIRS

    def finish(batch: _Batch, outcomes: list) -> None:
        for (row, x, y, _, ctx), out in zip(batch.entries, outcomes):
            if isinstance(out, str):
                row.failed, row.fail_reason = True, out
            else:
                row.result = out
                finish_row(row, out, algos, ctx)
                if custom is not None:  # the -c DIR plug-ins, on both whole tensors
                    custom.run_row(row, x, y, out, algos, ctx, threads)
        # the bytes only where a bar shows their rate (two calls of the core a pair)
        progress.advance(len(batch.entries), sum(x.stored_bytes + y.stored_bytes for _, x, y, _, _ in batch.entries)
                         if progress.enabled else 0)

    def release(upto: int) -> None:
        """The rows before `upto` are finished: put them, in order, and let them go."""
        nonlocal released
        if put is None:
            return
        done, rows[released:upto] = rows[released:upto], [None] * (upto - released)
        many = getattr(put, "many", None)  # the buffer's: the rows handed on together
        if many is not None:
            many(released, done)
        else:
            for k, row in enumerate(done, released):
                put(k, row)
        if let_go_refs is not None:
            let_go(pairs[released:upto], let_go_refs)
        released = upto

    def flush() -> None:
        nonlocal pending, pending_elements, running
        if not pending:
            return
        before, running = running, _Batch(pending, list(algos), threads, precise, engine)
        pending, pending_elements = [], 0
        running.begin()  # queued behind `before`: one batch at a time uses every thread
        outcomes = before.result() if before is not None else []
        if before is not None:
            # unmapping holds the interpreter lock, which the engine's thread needs to begin: let it begin first
            running.begun.wait()
            finish(before, outcomes)
            release(running.entries[0][0].index)  # the rows before the running batch's are all finished

    def enqueue(row: Row, x_src: Any, y_src: Any, x_count: int, scalar: bool,
                ctx: tuple[bool, bool, str, str]) -> None:
        """A compared pair into the pending batch, which goes to the engine once it is full."""
        nonlocal pending_elements
        if max_elements and x_count > max_elements:  # -max N: the first N elements only
            x_src, y_src = prefix_sources(x_src, y_src, max_elements, threads)
            x_count = x_src.count
        pending.append((row, x_src, y_src, scalar, ctx))
        pending_elements += x_count
        if len(pending) >= _BATCH_PAIRS or pending_elements >= _BATCH_ELEMENTS:
            flush()

    def drain() -> None:
        nonlocal running
        flush()
        if running is not None:
            batch, running = running, None
            finish(batch, batch.result())
        release(len(rows))

    with Progress(sum(1 for p in pairs if p.comparable), f"comparing {label}", quiet=quiet) as progress, \
            _joined_at_exit(lambda: running, engine):
        for number, pair in enumerate(pairs):
            if device_vs_device and pair.skip_reason is None and pair.comparable:
                if number >= opened_upto:
                    opened_upto = open_ahead(number)
                fast = ready.get(number)
                if fast is not None and fast[1] == fast[3]:  # else the general path below says why
                    x_src, x_count, y_src, _, (data_type, _, stored, _, address, _, _), right = fast
                    row = Row(number, pair.op_type or "", pair.npu_column, dtype_name(data_type), address,
                              pair.ground_truth_column, dtype_name(right[0]), right[4], pair.tensor_index, stored,
                              pair=pair)
                    rows.append(row)
                    ctx = (not stored, npu_vs_npu == "raw" and data_type == "BOOL" and right[0] == "BOOL",
                           pair.npu_ref.entry.path, pair.ground_truth_ref.entry.path)
                    enqueue(row, x_src, y_src, x_count, not stored, ctx)
                    continue
            elif not device_vs_device and pair.skip_reason is None and pair.comparable and \
                    not isinstance(pair.ground_truth_ref, DeviceTruth):
                if number >= opened_upto:
                    opened_upto = open_ahead(number)
                fast = ready.get(number)
                if fast is not None:  # the common case: a device tensor against a plain .npy, read as `device` does
                    x_src, x_count, _, data_type, fmt, stored, address = fast
                    y_src, gt_shape, gt_dtype = opened[number]
                    if x_count == y_src.count:  # else the general path below says why (or cuts a batch)
                        del opened[number]
                        gt_shape = tuple(gt_shape)
                        ndim = len(stored)
                        row = Row(number, pair.op_type or "", pair.npu_column,
                                  "float32" if data_type == "BF16" else dtype_name(data_type), address,
                                  pair.ground_truth_column, gt_dtype, None, pair.tensor_index,
                                  _compared_shape(fmt, ndim, pair, gt_shape, x_count), pair=pair)
                        rows.append(row)
                        ctx = (not gt_shape or ndim == 0, gt_dtype == "bool" and data_type == "BOOL",
                               pair.npu_ref.entry.path, pair.ground_truth_ref.path)
                        enqueue(row, x_src, y_src, x_count, not gt_shape, ctx)
                        continue
            row = Row(index=number, op_type=pair.op_type or "", npu_dump=pair.npu_column, npu_data_type=None,
                      npu_address=None, ground_truth=pair.ground_truth_column, ground_truth_data_type=None,
                      ground_truth_address=None, tensor_index=pair.tensor_index, shape=None, pair=pair)
            rows.append(row)
            npu_ref: DeviceRef | None = pair.npu_ref
            if npu_ref is not None and npu_ref.dump is not None:
                ts = npu_ref.dump.inputs if pair.kind == "input" else npu_ref.dump.outputs
                if pair.index is not None and pair.index < len(ts):
                    t = ts[pair.index]
                    # against a ground truth the device tensor is compared as float32 (bf16 included)
                    row.npu_data_type = "float32" if t.data_type == "BF16" and not device_vs_device else \
                        dtype_name(t.data_type)
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
                    row.fail_reason = no_truth_reason(pair.npu_op or "", row.tensor_index or "")
                else:
                    row.fail_reason = pair.note or ("no ground truth" if pair.npu_ref is not None else
                                                    "no device dump")
                continue
            truth_is_device = isinstance(pair.ground_truth_ref, DeviceTruth)
            try:
                if device_vs_device:
                    gt_ref: DeviceRef = pair.ground_truth_ref
                    t = sides.tensor(npu_ref, pair.kind, pair.index or 0)
                    gt_t = sides.tensor(gt_ref, pair.kind, pair.index or 0)
                    row.ground_truth_data_type = dtype_name(gt_t.data_type)
                    row.ground_truth_address = int(gt_t.address)
                    if (t.format, tuple(t.shape), t.original_shape) != \
                            (gt_t.format, tuple(gt_t.shape), gt_t.original_shape):
                        raise DumpcmpError(f"format/shape differ: {t.format} {list(t.shape)}{_original(t)} vs "
                                           f"{gt_t.format} {list(gt_t.shape)}{_original(gt_t)}")
                    if npu_vs_npu == "raw":  # as 72c5bd4c: stored (device) order, padding included
                        x_src = stored_source(npu_ref, pair.kind, pair.index or 0)
                        y_src = stored_source(gt_ref, pair.kind, pair.index or 0)
                    else:  # as the current msaccucmp: original shapes, padding removed, float32 (bool too)
                        x_src = restored_source(npu_ref, pair.kind, pair.index or 0)
                        y_src = restored_source(gt_ref, pair.kind, pair.index or 0)
                    scalar = len(t.shape) == 0
                    ctx = (scalar, npu_vs_npu == "raw" and t.data_type == "BOOL" and gt_t.data_type == "BOOL",
                           npu_ref.entry.path, gt_ref.entry.path)
                elif truth_is_device:  # -cf: the unfused model's device tensor
                    x_src, y_src, t, gt_t = _device_truth_sources(sides, npu_ref, pair)
                    gt_shape, gt_dtype = tuple(gt_t.shape), dtype_name(gt_t.data_type)
                    row.ground_truth_data_type = gt_dtype
                    scalar = len(t.shape) == 0
                    ctx = (scalar, t.data_type == "BOOL" and gt_t.data_type == "BOOL", npu_ref.entry.path,
                           pair.ground_truth_ref.path)
                else:
                    got = opened.pop(number, None)
                    y_src, gt_shape, gt_dtype = got if got is not None else ground_truth_source(pair.ground_truth_ref)
                    gt_shape = tuple(gt_shape)
                    row.ground_truth_data_type = gt_dtype
                    x_src, t = sides.device(npu_ref, pair.kind, pair.index or 0, pair, gt_shape)
                    # each fact of the device tensor read once (each is a call into the core)
                    fmt, ndim, x_count, y_count = t.format, len(t.shape), x_src.count, y_src.count
                    if x_count != y_count and fmt not in _layout.DEVICE_FORMATS and fmt != "ND":
                        x_src = _batch_slice(pair.npu_op or "", t, gt_shape) or x_src
                        x_count = x_src.count
                    scalar = not gt_shape
                    ctx = (scalar or ndim == 0, gt_dtype == "bool" and t.data_type == "BOOL", npu_ref.entry.path,
                           pair.ground_truth_ref.path)
                if device_vs_device or truth_is_device:
                    x_count, y_count = x_src.count, y_src.count
                if x_count != y_count:
                    if not device_vs_device:
                        row.data_types_unknown = True
                    left = int(x_src.count)
                    if not device_vs_device and t.format != "ND" and len(t.shape) == len(gt_shape):
                        # the original slices a plain tensor to the ground truth's extent first (_batch_slice)
                        left = int(np.prod([min(int(a), int(b)) for a, b in zip(t.shape, gt_shape)]))
                    raise DumpcmpError(count_reason(pair.npu_op or "", left, int(y_src.count)))
                if truth_is_device:
                    # the original's: the left tensor's own shape in the right's format, an ND one flat
                    row.shape = (int(x_count),) if t.format == "ND" else tuple(gt_shape)
                elif not device_vs_device:
                    row.shape = _compared_shape(fmt, ndim, pair, gt_shape, x_count)
            except (DumpcmpError, ValueError, OSError) as error:
                row.failed, row.fail_reason = True, slice_reason(npu_ref, str(error))
                progress.advance()
                continue
            enqueue(row, x_src, y_src, x_count, scalar, ctx)
        drain()
    return [] if put is not None else rows  # type: ignore[return-value]


def _device_truth_sources(sides: Sides, npu_ref: DeviceRef, pair: TensorPair) -> tuple[Any, Any, Any, Any]:
    """(left source, right source, left tensor, right tensor) of a `-cf` pair: the right (unfused) output in its
    stored order, the left tensor as it is when both have one format, else converted to the right's (plain)
    format and shape, as the original converts the fused side to the unfused one's."""
    truth: DeviceTruth = pair.ground_truth_ref
    t = sides.tensor(npu_ref, pair.kind, pair.index or 0)
    gt_t = sides.tensor(truth.ref, "output", truth.index)
    y_src = stored_source(truth.ref, "output", truth.index)
    if t.format == gt_t.format:
        return stored_source(npu_ref, pair.kind, pair.index or 0), y_src, t, gt_t
    if gt_t.format in _layout.DEVICE_FORMATS:
        raise DumpcmpError(f"{t.format} {list(t.shape)} against the unfused {gt_t.format} {list(gt_t.shape)}: "
                           f"not converted to a device layout")
    x_src, t = sides.device(npu_ref, pair.kind, pair.index or 0, pair, tuple(gt_t.shape), gt_t.format)
    return x_src, y_src, t, gt_t


def compare_pairs(pairs: list[TensorPair], sides: Sides, algos: tuple[int, ...], device_vs_device: bool,
                  threads: int, precise: bool = False, max_elements: int = 0,
                  npu_vs_npu: str = "restored") -> list[Row]:
    """The rows of some pairs compared here, quietly: the hook a cluster worker runs a batch of a run through
    (`dumpcmp.comparison.cluster`), so its rows are a local run's."""
    return _compare_pairs(pairs, sides, algos, device_vs_device, threads, True, "", precise, None, max_elements,
                          npu_vs_npu)


@contextlib.contextmanager
def _joined_at_exit(current: Callable[[], _Batch | None], engine: _Engine) -> Iterator[None]:
    """Wait for the batch running when the block is left, by an error too, then end the engine's thread: neither
    outlives the call. Leaving by an error, the batch queued behind the running one is not begun."""
    try:
        yield
    except BaseException:
        engine.stopped = True
        raise
    finally:
        try:
            batch = current()
            if batch is not None:
                batch.join_engine()
        finally:
            engine.close()


class _Engine:
    """The thread _compare_pairs' batches are compared on, one after another in the order they are queued, for the
    whole loop (a thread a batch cost a start, a join and a wait for it to begin at each of them). Its signals are
    the main thread's: Python runs handlers there only."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.stopped = False  # the loop is being left (an interrupt, an error): what is queued is not begun

    def submit(self, batch: _Batch) -> None:
        """Queue `batch`, starting the thread first if it is not running (RuntimeError where it cannot start)."""
        if self._thread is None:
            thread = threading.Thread(target=self._serve, name="dumpcmp-engine", daemon=True)
            thread.start()
            self._thread = thread
        self._jobs.put(batch)

    def _serve(self) -> None:
        while (batch := self._jobs.get()) is not None:
            try:
                if not self.stopped:
                    batch.run()
                else:  # never compared: a result asked of it says so rather than being empty
                    batch._error = DumpcmpError("not compared: the run was stopped")
            except BaseException as error:  # never lost, never the end of the thread: the waiting one raises it
                batch._error = batch._error or error
            finally:
                batch.done.set()

    def close(self) -> None:
        """End the thread once what is queued is done (the caller has waited for it: nothing runs by then)."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._jobs.put(None)
        interrupted: BaseException | None = None
        while thread.is_alive():  # it only leaves its loop: a signal meanwhile is raised once it has
            try:
                thread.join()
            except KeyboardInterrupt as stop:
                interrupted = interrupted or stop
        if interrupted is not None:
            raise interrupted


class _Batch:
    """One compare_many call over _compare_pairs' pending entries (row, x, y, scalar, ctx), queued on the engine's
    thread (`_Engine`; _compare_pairs runs one at a time); result() waits for it.

    Waiting is on `done`, never on an interruptible Thread.join() alone: a Ctrl-C or SIGTERM during join() (Python
    3.10-3.12) marks the thread stopped while it still runs, so the interpreter would finalize under the engine,
    whose C++ threads then die mid-call (SIGABRT, "terminate called without an active exception"). A signal while
    waiting is raised once the engine has stopped."""

    def __init__(self, entries: list, algos: list[int], threads: int, precise: bool,
                 engine: _Engine | None = None) -> None:
        self.entries = entries
        self._call = ([(x, y, scalar) for _, x, y, scalar, _ in entries], algos, threads, precise)
        self._engine = engine or _Engine()
        self.queued = False  # handed to the engine's thread (else compared here, or not yet)
        self.begun = threading.Event()  # set just before the call
        self.done = threading.Event()  # set when the call has returned (or raised)
        self._outcomes: list = []
        self._error: BaseException | None = None

    def run(self) -> None:
        jobs, algos, threads, precise = self._call
        self.begun.set()
        try:
            self._outcomes = core.compare.compare_many(jobs, algos, threads, precise=precise)
        except BaseException as error:  # handed to the thread that waits for the result
            self._error = error
        finally:
            self.done.set()

    def start(self) -> None:
        """Queue the batch on the engine's thread (RuntimeError where no thread can be started)."""
        self._engine.submit(self)
        self.queued = True

    def begin(self) -> None:
        """Queue the batch; where no thread can be started, compare here and now instead. Signals wait until it is
        queued (or could not be): one raised inside start() could leave a thread or a batch no one knows to wait
        for."""
        held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            try:
                self.start()
                started = True
            except RuntimeError:
                started = False
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if not started:
            self.run()

    def join_engine(self) -> None:
        """Wait for the call to end, if it was queued: signals that come meanwhile are raised afterwards (the
        first of them), so no way out of a run leaves the engine running."""
        if not self.queued and not self.begun.is_set():
            return
        interrupted: BaseException | None = None
        while not self.done.is_set():
            try:
                self.done.wait()
            except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM/SIGHUP (files.Terminated)
                interrupted = interrupted or stop
                self._engine.stopped = True  # the batch queued behind this one is not begun: one batch, not two
        if interrupted is not None:
            raise interrupted

    def result(self) -> list:
        self.join_engine()
        if self._error is not None:
            raise self._error
        return self._outcomes
