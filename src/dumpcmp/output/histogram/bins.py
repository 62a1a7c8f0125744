"""Per-layer histograms: binned counts of a tensor's values (and of its ground truth), drawn one PNG per layer.

In: a TensorSource (a dump tensor through its layout plan, or a ground-truth array), or a compared Row of a
`dumpcmp.compare()` result. Out: `Hist` records (counts over equal-width bins with the range, NaN/inf counts and
the values outside the bins) computed by the C++ core in at most two passes over the mapped data (pass one: range,
pass two: counts), and PNG files drawn with matplotlib (counts in blue, min and max as red dashed lines, ground
truth overlaid). The bins are numpy.histogram's on the same range, so the counts can be checked against NumPy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from dumpcmp.dumps.sigmastar import read_min_max
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core
from dumpcmp.errors import ConfigError, DumpcmpError

__all__ = ["DEFAULT_BINS", "Hist", "common_range", "histogram", "lookup_min_max", "pair_histograms", "read_min_max",
           "row_sources", "top_errors"]

DEFAULT_BINS = 64


@dataclass
class Hist:
    """Counts of the finite values in `len(counts)` equal bins over [lo, hi]; min/max of the finite values (None
    when there are none); NaN, +inf, -inf counts; finite values outside [lo, hi] (`below`, `above`)."""

    counts: np.ndarray
    lo: float
    hi: float
    min: float | None
    max: float | None
    finite: int
    nan: int
    pos_inf: int
    neg_inf: int
    below: int = 0
    above: int = 0

    @property
    def edges(self) -> np.ndarray:
        return np.linspace(self.lo, self.hi, len(self.counts) + 1)

    @property
    def total(self) -> int:
        return self.finite + self.nan + self.pos_inf + self.neg_inf

    def to_dict(self) -> dict[str, Any]:
        return {"counts": [int(c) for c in self.counts], "lo": self.lo, "hi": self.hi, "min": self.min,
                "max": self.max, "finite": self.finite, "nan": self.nan, "pos_inf": self.pos_inf,
                "neg_inf": self.neg_inf, "below": self.below, "above": self.above}

    def share_outside(self, lo: float, hi: float) -> float:
        """Share of the finite values in bins lying wholly outside [lo, hi] (from the counts: bin resolution)."""
        if self.finite == 0:
            return 0.0
        e = self.edges
        outside = (e[1:] <= lo) | (e[:-1] >= hi)
        return float(self.counts[outside].sum() + self.below + self.above) / self.finite


def _from_core(d: dict[str, Any]) -> Hist:
    return Hist(counts=np.asarray(d["counts"], dtype=np.uint64), lo=float(d["lo"]), hi=float(d["hi"]),
                min=d["min"], max=d["max"], finite=int(d["finite"]), nan=int(d["nan"]), pos_inf=int(d["pos_inf"]),
                neg_inf=int(d["neg_inf"]), below=int(d["below"]), above=int(d["above"]))


def histogram(source: Any, bins: int = DEFAULT_BINS, range: tuple[float, float] | None = None,
              threads: int = 0) -> Hist:
    """Histogram of one TensorSource (or a NumPy array): over `range` in one pass, else over the data's own range
    in two (a constant tensor: value -0.5 .. +0.5; no finite value: 0 .. 1, as NumPy)."""
    if bins < 1:
        raise ConfigError(f"bins must be at least 1, not {bins}")
    if isinstance(source, np.ndarray):
        source = core.compare.source_from_array(np.ascontiguousarray(source))
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"histogram range must be finite with min < max, not {range}")
        return _from_core(core.histogram.histogram(source, int(bins), (lo, hi), threads))
    return _from_core(core.histogram.histogram(source, int(bins), None, threads))


def common_range(*ranges: tuple[float | None, float | None]) -> tuple[float, float]:
    """The union of finite ranges (None ends ignored), widened as NumPy widens a single value."""
    los = [r[0] for r in ranges if r[0] is not None and math.isfinite(r[0])]
    his = [r[1] for r in ranges if r[1] is not None and math.isfinite(r[1])]
    if not los or not his:
        return 0.0, 1.0
    lo, hi = min(los), max(his)
    if not lo < hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def pair_histograms(x: Any, y: Any, bins: int = DEFAULT_BINS, threads: int = 0,
                    extra_range: tuple[float, float] | None = None) -> tuple[Hist, Hist]:
    """Histograms of the device side `x` and the ground truth `y` over one common range (both ranges' union, and
    `extra_range` when given: a tensor_min_max.txt entry), so the two can be overlaid bin for bin."""
    rx, ry = core.histogram.value_range(x, threads), core.histogram.value_range(y, threads)
    lo, hi = common_range((rx["min"], rx["max"]), (ry["min"], ry["max"]), extra_range or (None, None))
    return histogram(x, bins, (lo, hi), threads), histogram(y, bins, (lo, hi), threads)


def row_sources(row: Any, device_vs_device: bool, custom: Any = None) -> tuple[Any, Any]:
    """(device source, ground-truth source) of a compared Row, read exactly as the comparison read them (layout
    decoded and cropped to the ground truth's shape). DumpcmpError when the row cannot be read."""
    from dumpcmp.comparison.sources import Sides  # the comparison's own reading rules
    from dumpcmp.dumps.ground_truth import ground_truth_source

    if getattr(row, "sources", None) is not None:  # compared from arrays (a SigmaStar dump)
        a, b = row.sources()
        x, y = (core.compare.source_from_array(np.ascontiguousarray(v, dtype=np.float32).reshape(-1)) for v in (a, b))
        return x, y
    pair = row.pair
    if pair is None or pair.npu_ref is None or pair.ground_truth_ref is None:
        raise DumpcmpError(f"row {row.index}: no pair of tensors to read")
    sides = Sides(custom)
    index = pair.index or 0
    if device_vs_device:
        x, _ = sides.device(pair.npu_ref, pair.kind, index, pair, None)
        y, _ = sides.device(pair.ground_truth_ref, pair.kind, index, pair, None)
    else:
        y, shape, _ = ground_truth_source(pair.ground_truth_ref)
        x, _ = sides.device(pair.npu_ref, pair.kind, index, pair, tuple(shape))
    if x.count != y.count:
        raise DumpcmpError(f"row {row.index}: {x.count} device elements against {y.count} of ground truth")
    return x, y


def top_errors(x: Any, y: Any, n: int = 10, threads: int = 0) -> list[dict[str, float]]:
    """The `n` largest |device - ground truth| elements (index in the compared order, both values, the error)."""
    return [{"index": int(i), "npu": float(a), "ground_truth": float(b), "abs_error": float(e)}
            for i, a, b, e in core.histogram.top_errors(x, y, int(n), threads)]


def lookup_min_max(table: dict[str, tuple[float, float]], names: Sequence[str]) -> tuple[float, float] | None:
    """The entry of the first name found (tensor name as written, or its op name before ':')."""
    for name in names:
        if not name:
            continue
        for key in (name, name.split(":")[0]):
            if key in table:
                return table[key]
    return None
