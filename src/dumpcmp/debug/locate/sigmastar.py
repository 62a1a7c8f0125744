"""`dumpcmp locate` on a SigmaStar dump: the feed source beside the Ascend one (`core`), with the same rows,
measures and verdicts.

In: the original ONNX model, the fixed (or float) SigmaStar model's dump and its benchmark (the float model's dump,
which equals the original, or `dumpcmp golden`'s tree). No graph JSON: the SDK names every tensor of its dumps by
the ONNX tensor name (`dumpcmp simulate --target sigmastar` does the same). Out: a `LocateResult` with one row per
layer, a non-constant output tensor of the dump, in the ONNX graph's order, named by its producing node:

- the region: the node producing the tensor, cut out of the model (`debug/region.py`), walking back from the tensor
  to tensors the dump holds; a node whose output the dump does not hold (a shape computed from an activation, a
  tensor the SDK fused away) is replayed inside the region, and the row's Note names the nodes;
- fed the dump's own values of its inputs (dequantised float, 4-D NHWC -> NCHW as the ONNX model holds them); a
  model input the dump does not hold is fed the benchmark's (the device was fed what the user fed);
- own = the dumped tensor against the replay, inherited = the worst fed input against the benchmark, total = the
  dumped tensor against the benchmark; the verdicts of `core.verdicts` (origin, adds, inherited, ok).

A tensor no node of the model produces (renamed by the SDK), one whose element count differs from the ONNX
tensor's, or whose region cannot be cut, is `not replayed`, with the reason. A dump none of whose tensors is a
tensor of the model is refused (ConfigError: the wrong model, or the wrong dump).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from dumpcmp.comparison.metrics import parse_algorithms
from dumpcmp.comparison.sigmastar import benchmark_tensors, run_name
from dumpcmp.debug.locate.core import (
    DEFAULT_ALGORITHMS,
    DEFAULT_BATCH_BYTES,
    LocateResult,
    LocateRow,
    default_rrmse,
    measure,
    verdicts,
)
from dumpcmp.debug.locate.replay import Job, run_jobs
from dumpcmp.debug.region import OriginalModel, RegionError, cut_region
from dumpcmp.dumps.sigmastar import open_sigmastar
from dumpcmp.errors import ConfigError, DumpcmpError
from dumpcmp.support.lazy_numpy import np

__all__ = ["locate_sigmastar", "onnx_layout", "tensor_producers"]

def tensor_producers(model: OriginalModel) -> dict[str, tuple[int, str, str]]:
    """tensor name -> (position in execution order, node name, op type) of the node producing it."""
    return {t: (model.position[n], n, model.nodes[n].op_type) for t, n in model.producer.items()}


def onnx_layout(values: Any, shape: tuple[int, ...] | None, what: str) -> Any:
    """A SigmaStar tensor's values in the ONNX tensor's `shape`: a 4-D tensor the SDK holds in NHWC transposed to
    NCHW (also when the shape reads the same both ways, as the SDK always stores NHWC), one already in the ONNX
    shape kept (or differing only in dimensions of 1). DumpcmpError for any other shape: another order of the
    values is not guessed."""
    a = np.asarray(values)
    if shape is None:
        return np.ascontiguousarray(a)
    shape = tuple(int(d) for d in shape)
    if len(shape) == 4 and a.ndim == 4 and tuple(a.shape) == (shape[0], shape[2], shape[3], shape[1]):
        return np.ascontiguousarray(a.transpose(0, 3, 1, 2))
    if math.prod(shape) != a.size:
        raise DumpcmpError(f"{what}: {a.size} values {list(a.shape)}, the ONNX tensor {list(shape)} has "
                           f"{math.prod(shape)} (a tensor the SDK fused or renamed?)")
    if [d for d in a.shape if d != 1] != [d for d in shape if d != 1]:  # a reshape could reorder: never guessed
        raise DumpcmpError(f"{what}: shape {list(a.shape)} is neither the ONNX tensor's {list(shape)} nor its NHWC "
                           "form (a layout the SDK chose; not replayed rather than guessed)")
    return np.ascontiguousarray(a.reshape(shape))


class _Sources:
    """The dump's tensors and the benchmark's, by name, read when first asked, in the ONNX layout."""

    def __init__(self, model: OriginalModel, left: str, right: str) -> None:
        self.model = model
        self.dump = open_sigmastar(left)
        self.device = {}
        for t in self.dump.tensors:
            if t.direction == "out" and not t.constant:
                self.device.setdefault(t.name, t)
        self.bench = benchmark_tensors(right)
        self.right = right

    def _shape(self, name: str, fallback: tuple[int, ...]) -> tuple[int, ...] | None:
        shape = self.model.shape(name)
        if shape is None and len(fallback) == 4:  # unknown to shape inference: the SDK's NHWC, back to NCHW
            shape = (fallback[0], fallback[3], fallback[1], fallback[2])
        return shape

    def device_values(self, name: str) -> Any:
        t = self.device[name]
        a = onnx_layout(self.dump.values(t), self._shape(name, t.shape), f"{self.dump.path}: {t.describe()}")
        dtype = self.model.dtype(name)
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)

    def truth(self, name: str) -> Any | None:
        if name not in self.bench:
            return None
        shape, load = self.bench[name]
        return onnx_layout(load(), self._shape(name, shape), f"{self.right}: tensor {name!r}")


def _region(src: _Sources, name: str, fed: set[str]) -> tuple[Any, str]:
    """(region, note) of the layer whose output is tensor `name`: RegionError when it cannot be cut or fed."""
    om = src.model
    region = cut_region(om, fed - {name}, [name])
    notes = [f"model input {t} fed from the benchmark" for t in region.inputs if t not in src.device]
    missing = [t for t in region.inputs if t not in src.device and t not in src.bench]
    if missing:  # a model input the dump does not hold: the device was fed what the user fed, the benchmark's
        raise RegionError(f"model input {missing[0]!r} is neither in the dump nor in the benchmark")
    producer = om.producer[name]
    extra = [n for n in region.nodes if n != producer and n not in om.weight_only_nodes]
    if extra:
        notes.insert(0, f"replayed with {', '.join(extra)} (their outputs are not in the dump)")
    return region, "; ".join(notes)


def _feeds(src: _Sources, region: Any) -> dict[str, Any]:
    feeds = {}
    for t in region.inputs:
        if t in src.device:
            feeds[t] = src.device_values(t)
        else:
            truth = src.truth(t)
            dtype = src.model.dtype(t)
            feeds[t] = truth if dtype is None or truth.dtype == dtype else truth.astype(dtype)
    return feeds


def locate_sigmastar(model: str | os.PathLike[str] | OriginalModel, left: str | os.PathLike[str],
                     right: str | os.PathLike[str], *, threshold: float = 0.99, rrmse: float | None = None,
                     algorithms: str | Iterable[int | str] | None = None, batch_bytes: int = DEFAULT_BATCH_BYTES,
                     threads: int = 0, quiet: bool = True) -> LocateResult:
    """Replay the node(s) producing every tensor of the SigmaStar dump `left` on the dump's own inputs (module doc);
    `right` is the benchmark (a SigmaStar dump or `dumpcmp golden`'s tree). Options as `core.locate_runs`."""
    from dumpcmp.support.progress import Progress

    if not 0 < threshold <= 1:
        raise ConfigError(f"threshold {threshold}: a cosine similarity in (0, 1]")
    om = model if isinstance(model, OriginalModel) else OriginalModel.load(model)
    left, right = os.fspath(left), os.fspath(right)
    if isinstance(algorithms, str) and algorithms.strip().lower() == "all":
        algorithms = range(10)
    algos = tuple(parse_algorithms(algorithms)) if algorithms is not None else DEFAULT_ALGORITHMS
    limit = default_rrmse(threshold) if rrmse is None else float(rrmse)
    src = _Sources(om, left, right)
    names = list(src.device)
    known = [n for n in names if n in om.producer]
    if names and not known:
        where = om.path or "the model"
        raise ConfigError(f"{left}: none of its {len(names)} tensor names is a tensor of {where} (first: "
                          f"{names[0]!r}): give the ONNX model the SigmaStar model was converted from")
    producers = tensor_producers(om)
    fed = set(names) | set(om.graph_inputs)
    order = sorted(known, key=lambda n: producers[n][0]) + [n for n in names if n not in om.producer]
    rows: list[LocateRow] = []
    todo: list[tuple[LocateRow, int]] = []
    for k, name in enumerate(order):
        t = src.device[name]
        if name not in om.producer:
            what = "a model input" if name in om.graph_inputs else "no node of the ONNX model produces it"
            rows.append(LocateRow(k, name, t.op_type, output=name,
                                  note=f"not replayed: {what} (a tensor the SDK renamed or added?)"))
            continue
        _, node, op_type = producers[name]
        row = LocateRow(k, node, op_type, output=name)
        rows.append(row)
        try:
            row.region, row.note = _region(src, name, fed)
        except (DumpcmpError, ValueError, OSError) as error:
            row.note = f"not replayed: {error}"
            continue
        size = sum(src.device[i].size if i in src.device else 0 for i in row.region.inputs) + t.size
        todo.append((row, size * 4))  # decoded feeds and output, the replay, the benchmark's
    result = LocateResult(rows, run_name(left), threshold, limit, algos)
    with Progress(len(todo), "replaying", quiet=quiet) as progress:
        start, size = 0, 0
        for end, (_, est) in enumerate(todo, 1):
            size += est
            if size > batch_bytes or end == len(todo):
                _run_batch(src, [row for row, _ in todo[start:end]], algos, threads)
                progress.advance(end - start)
                start, size = end, 0
    verdicts(result)
    return result


def _run_batch(src: _Sources, batch: list[LocateRow], metrics: Iterable[int], threads: int) -> None:
    jobs = []
    for row in batch:
        try:
            jobs.append((row, Job(row.region, _feeds(src, row.region))))
        except (DumpcmpError, ValueError, OSError) as error:
            row.note = f"not replayed: cannot read its inputs: {error}"
    run_jobs(src.model, [job for _, job in jobs], threads)
    for row, job in jobs:
        if job.error:
            row.note = f"not replayed: {job.error}"
            continue
        try:
            device = src.device_values(row.output)
            row.own = measure(device, job.outputs[row.output], metrics)
        except (DumpcmpError, ValueError, OSError, KeyError) as error:
            row.note = f"not replayed: cannot compare: {error}"
            continue
        # the benchmark's side: a tensor it cannot give leaves that measure out (said in Note), never the own error
        problems = [row.note] if row.note else []
        try:
            truth = src.truth(row.output)
            row.total = measure(device, truth, DEFAULT_ALGORITHMS) if truth is not None else None
        except (DumpcmpError, ValueError, OSError) as error:
            problems.append(f"total not measured: {error}")
        for t in job.region.inputs:
            try:
                truth_in = src.truth(t) if t in src.device else None
                m = measure(job.feeds[t], truth_in, DEFAULT_ALGORITHMS) if truth_in is not None else None
            except (DumpcmpError, ValueError, OSError) as error:
                problems.append(f"input {t} not measured against the benchmark: {error}")
                continue
            if m is not None and (row.inherited is None or m.cosine < row.inherited.cosine):
                row.inherited = m
        row.note = "; ".join(problems)
