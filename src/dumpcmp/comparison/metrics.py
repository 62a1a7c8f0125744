"""The original compare tool's ten metrics (plus MSE, SQNR and NaN/Inf counts) on a pair of tensors.

x is "My Output" (the device side), y is "Ground Truth". The C++ core streams both sides in chunks as float32 values,
computes every per-element term in float32 as the original tool does (float64 terms with `precise=True`),
accumulates in double and merges the chunks in order, so results never depend on the thread count.

    >>> r = compare_arrays(device_values, ground_truth)
    >>> r.cosine_similarity, r.formatted()
"""

from __future__ import annotations

from collections.abc import Iterable

from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core
from dumpcmp.errors import ConfigError

#: index -> name, in the result file's column order (the `-alg` indices)
METRICS: dict[int, str] = dict(enumerate(core.metrics.metric_names()))
#: name -> index
METRIC_INDEX: dict[str, int] = {name: index for index, name in METRICS.items()}

MetricResult = core.metrics.MetricResult
format_metric = core.metrics.format_metric

#: elements per chunk of the whole-array driver; results depend on it (rounding), never on threads
DEFAULT_CHUNK_ELEMENTS = 1 << 16


def parse_algorithms(text: str | Iterable[int | str] | None) -> tuple[int, ...]:
    """Metric indices from an `-alg 0,1,2` style selection (or names), sorted in column order, duplicates dropped.

    None or an empty selection means all ten.
    """
    if text is None:
        return tuple(METRICS)
    items = [part.strip() for part in text.split(",")] if isinstance(text, str) else list(text)
    chosen: set[int] = set()
    for item in items:
        if isinstance(item, str):
            if item == "":
                continue
            if item in METRIC_INDEX:
                chosen.add(METRIC_INDEX[item])
                continue
            try:
                index = int(item)
            except ValueError:
                raise ConfigError(_bad_metric(item)) from None
        else:
            index = int(item)
        if index not in METRICS:
            raise ConfigError(_bad_metric(item))
        chosen.add(index)
    return tuple(sorted(chosen)) if chosen else tuple(METRICS)


def _bad_metric(item: object) -> str:
    table = ", ".join(f"{i}={name}" for i, name in METRICS.items())
    return f"metric {item!r} is not one of the built-in metrics ({table})"


def compare_arrays(
    x: np.ndarray,
    y: np.ndarray,
    *,
    metrics: str | Iterable[int | str] | None = None,
    threads: int = 0,
    x_data_type: str | None = None,
    y_data_type: str | None = None,
    count: int | None = None,
    scalar: bool | None = None,
    chunk_elements: int = DEFAULT_CHUNK_ELEMENTS,
    precise: bool = False,
) -> MetricResult:
    """Compare x (My Output) with y (Ground Truth).

    Arrays of any NumPy numeric dtype (and ml_dtypes' bfloat16/float8) are read in place: no copy is made, and a
    non-contiguous array is refused rather than silently copied. Device bytes go in as a contiguous array of raw
    storage with `x_data_type`/`y_data_type` naming the dump data type ("BF16", "FLOAT16", "INT4", ...); packed
    sub-byte types need `count` when neither side says how many elements there are.

    `metrics`: indices or names (or an `-alg` string) of the metrics wanted; the others come back NaN.
    `scalar`: treat the pair as 0-d tensors (CosineSimilarity 1.0); default: either array is 0-d.
    `threads`: 0 = dumpcmp's default thread count.
    `precise`: per-element terms in float64 instead of the original tool's float32 (sums are double either way).
    """
    if threads < 0:
        raise ValueError(f"threads must be >= 0, got {threads}")
    if chunk_elements < 1:
        raise ValueError(f"chunk_elements must be >= 1, got {chunk_elements}")
    return core.metrics.compare_arrays(
        x,
        y,
        metrics=list(parse_algorithms(metrics)),
        threads=threads,
        x_data_type=x_data_type,
        y_data_type=y_data_type,
        count=count,
        scalar=scalar,
        chunk_elements=chunk_elements,
        precise=precise,
    )


__all__ = [
    "DEFAULT_CHUNK_ELEMENTS",
    "METRICS",
    "METRIC_INDEX",
    "MetricResult",
    "compare_arrays",
    "format_metric",
    "parse_algorithms",
]
