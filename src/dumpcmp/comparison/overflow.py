"""The OverFlow column of the original tool's `compare -overflow_detection` (dumpcmp: --overflow-like-original):
for a float16 device tensor, YES when its largest magnitude as stored reaches float16's largest finite value
(65504, so an inf counts; a NaN anywhere makes the largest magnitude NaN, which the original reads as NO), else NO;
NaN for every other data type and for a row without a device tensor. dumpcmp's own --overflow (YES when the device
side holds NaN or inf, any data type) is kept apart.
"""

from __future__ import annotations

from typing import Any

from dumpcmp.support.lazy_numpy import np

__all__ = ["FP16_MAX", "original_overflow"]

FP16_MAX = 65504.0


def original_overflow(row: Any) -> str:
    pair = row.pair
    dump = getattr(getattr(pair, "npu_ref", None), "dump", None)
    if row.unmatched or dump is None or pair.index is None:
        return "NaN"
    tensors = dump.inputs if pair.kind == "input" else dump.outputs
    if pair.index >= len(tensors) or tensors[pair.index].data_type != "FLOAT16":
        return "NaN"
    t = tensors[pair.index]
    if t.problem():
        return "NaN"
    values = np.asarray(t.array())
    if values.size == 0:
        return "NaN"
    with np.errstate(invalid="ignore"):
        return "YES" if np.abs(values).max() >= FP16_MAX else "NO"
