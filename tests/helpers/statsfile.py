"""Statistics dumps (``statistic.csv``) for tests, in every column set docs/formats.md lists, written from
records or computed from arrays with NumPy (an independent reference for dumpcmp's own statistics)."""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np

#: column sets: header name -> record key
COLUMN_SETS: dict[str, list[tuple[str, str]]] = {
    # MindSpore / GE statistic.csv (msprobe's tests and readers)
    "runtime": [("Op Type", "op_type"), ("Op Name", "op_name"), ("Task ID", "task_id"), ("Stream ID", "stream_id"),
                ("Timestamp", "timestamp"), ("IO", "kind"), ("Slot", "slot"), ("Data Size", "data_size"),
                ("Data Type", "data_type"), ("Shape", "shape"), ("Max Value", "max"), ("Min Value", "min"),
                ("Avg Value", "mean"), ("L2Norm Value", "l2norm")],
    # the CANN column list with Format and Input/Output, and the counts
    "counts": [("Op Type", "op_type"), ("Op Name", "op_name"), ("Task Id", "task_id"), ("Stream Id", "stream_id"),
               ("Timestamp", "timestamp"), ("Input/Output", "kind"), ("Slot", "slot"), ("Data Size", "data_size"),
               ("Data Type", "data_type"), ("Format", "format"), ("Shape", "shape"), ("Max Value", "max"),
               ("Min Value", "min"), ("Avg Value", "mean"), ("Count", "count"), ("Negative Zero Count", "neg_zero"),
               ("Positive Zero Count", "pos_zero"), ("NaN Count", "nan_count"),
               ("Negative Inf Count", "neg_inf_count"), ("Positive Inf Count", "pos_inf_count"),
               ("Zero Count", "zero_count"), ("L2Norm Value", "l2norm")],
    # the ATB probe's
    "atb": [("Device and PID", "device_pid"), ("Execution Count", "execution"), ("Op Name", "op_name"),
            ("Op Type", "op_type"), ("Op Id", "op_id"), ("Input/Output", "kind"), ("Index", "slot"),
            ("Dtype", "data_type"), ("Format", "format"), ("Shape", "shape"), ("Max", "max"), ("Min", "min"),
            ("Mean", "mean"), ("Norm", "l2norm"), ("Tensor Path", "tensor_path")],
}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "(" + ",".join(str(d) for d in value) + ")"
    return str(value)


def write_stats(path: str | Path, records: Iterable[dict[str, Any]], columns: str = "runtime",
                trailing_comma: bool = False) -> Path:
    """Write `records` (dicts keyed like `COLUMN_SETS`' record keys; missing keys: empty cells)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names = COLUMN_SETS[columns]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        w = csv.writer(handle, lineterminator="\n")
        w.writerow([h for h, _ in names])
        for r in records:
            row = [_cell(r.get(k)) for _, k in names]
            w.writerow(row + [""] if trailing_comma else row)
    return path


def numpy_stats(array: np.ndarray) -> dict[str, Any]:
    """The reference statistics of an array: every element as float32 (as dumpcmp reads it), max/min/mean/L2 norm
    as NumPy gives them in float64 from those values (NaN and inf propagate), and the counts."""
    with np.errstate(all="ignore"):
        return _numpy_stats(np.asarray(array).astype(np.float32).ravel())


def _numpy_stats(x: np.ndarray) -> dict[str, Any]:
    d = x.astype(np.float64)
    return {"count": int(x.size), "max": float(d.max()) if x.size else math.nan,
            "min": float(d.min()) if x.size else math.nan, "mean": float(d.mean()) if x.size else math.nan,
            "l2norm": float(np.sqrt(np.sum(d * d))), "nan_count": int(np.isnan(x).sum()),
            "neg_inf_count": int(np.isneginf(x).sum()), "pos_inf_count": int(np.isposinf(x).sum()),
            "zero_count": int((x == 0).sum())}


def record_of(op_name: str, kind: str, slot: int, array: np.ndarray, *, op_type: str = "Op", timestamp: int = 0,
              task_id: int = 0, **extra: Any) -> dict[str, Any]:
    """A record of `array`'s statistics as a runtime would write it."""
    rec = {"op_type": op_type, "op_name": op_name, "task_id": task_id, "stream_id": 0, "timestamp": timestamp,
           "kind": kind, "slot": slot, "data_size": int(np.asarray(array).nbytes),
           "data_type": str(np.asarray(array).dtype), "format": "ND", "shape": tuple(np.asarray(array).shape)}
    rec.update(numpy_stats(array))
    rec.update(extra)
    return rec
