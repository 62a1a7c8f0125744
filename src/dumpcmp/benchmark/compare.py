"""Measuring the metrics kernel: throughput against a C++ memory-read probe and a NumPy reference, in the same run.

Cases (`size_bytes` is the fp32 ground truth per side; the device side has the same element count):

  fp16 vs fp32                    plain float16 array against float32 (compare_arrays): 10 metrics, without KLD,
                                  and "one pass" (without KLD and the cosine, whose float32 terms divide by the
                                  norms and so need a second read)
  fp32 vs fp32                    plain float32 against float32, likewise
  fp16 NC1HWC0 dump vs fp32 NCHW  a device dump written to a temporary folder, read through its layout plan by the
  fp16 FRACTAL_NZ dump vs fp32 ND engine (source_from_dump + compare_sources), 10 metrics

GB/s count the bytes of both sides (the dump's stored bytes, padding included); figures are the median of `repeat`
timed runs after a warm-up, with the slowest and fastest. The NumPy reference computes the ten metrics as the original
tool does (float32 terms, `numpy_reference32`) over the whole pair, chunk by chunk (decoding the dumps by the spec's
reshape/transpose recipe), and is timed once: it is also the check. Every kernel run (case, metric selection,
thread count) is checked once against it, as the original tool prints the values (`%.6f`); see
`common.check_metrics`.

Reused by bench/bench_metrics.py and `dumpcmp bench compare`. The temporary folder is removed afterwards.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from dumpcmp.support.native import core
from dumpcmp.comparison.metric_plugin import PLUGIN_PREFIX, MetricPlugin
from dumpcmp.errors import ConfigError
from dumpcmp.comparison.metrics import METRIC_INDEX, compare_arrays, parse_algorithms
from dumpcmp.support.progress import Progress
from dumpcmp.benchmark.common import (
    EPS,
    check_metrics,
    current_rss_bytes,
    format_bytes,
    gb,
    machine_info,
    machine_line,
    parse_size,
    parse_threads,
    peak_rss_bytes,
    ratio,
    require_memory,
    reset_peak_rss,
    text_table,
    time_runs,
)
from dumpcmp.benchmark.layouts import numpy_encode

__all__ = ["CompareBenchmark", "Measurement", "numpy_metrics", "numpy_reference", "parse_size",
           "run_compare_benchmark", "summary", "format_table"]

F32_EPS = float(np.finfo(np.float32).eps)
PROBE = "memory-read probe (C++)"
WITHOUT_KLD = "0,1,2,3,5,6,7,8,9"
#: the metrics that one read of the data gives (pass 1)
ONE_PASS = "1,2,3,5,6,7,8,9"
VARIANT_METRICS = {"10 metrics": None, "without KLD": WITHOUT_KLD, "one pass": ONE_PASS}


def dependent_reads(metrics: str | None) -> int:
    """How many times any exact implementation must read the data for `metrics` ("0,1,..." or None for all ten),
    when the tensor is larger than the caches: each read needs a whole-tensor result of the read before it.

    1. min, max and the norms (and every other metric's terms);
    2. the cosine's float32 terms `x/|x| * y/|y|` need the norms; KLD's `p = (d - min)/(max - min)` (summed in
       float32) need the minima and maxima;
    3. KLD's terms `P log(P/Q)` with `P = p / sum(p)` need those float32 sums.

    The read probe divided by this number is the ceiling of a case's throughput (`ceiling_gbps`)."""
    chosen = parse_algorithms(metrics)
    return (3 if METRIC_INDEX["KullbackLeiblerDivergence"] in chosen
            else 2 if METRIC_INDEX["CosineSimilarity"] in chosen else 1)


#: channels and a 2-D matrix width of the dump cases' tensors (H = W grow to the size, up to 32)
CHANNELS = 64


def numpy_metrics(x: np.ndarray, y: np.ndarray) -> list[float]:
    """The ten metrics written plainly in NumPy (float64 on the float32 values) on whole arrays."""
    X = x.astype(np.float32).astype(np.float64).ravel()
    Y = y.astype(np.float32).astype(np.float64).ravel()
    with np.errstate(all="ignore"):
        nx, ny = np.linalg.norm(X), np.linalg.norm(Y)
        if nx <= EPS and ny < EPS:
            cos = 1.0
        elif np.sqrt(nx) <= EPS or np.sqrt(ny) <= EPS:
            cos = float("nan")
        else:
            cos = float(min(np.sum((X / nx) * (Y / ny)), 1.0))
        diff = X - Y
        absd = np.abs(diff)
        rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - 1.0), 0.0)
        s = np.sum(Y * Y)
        red = 0.0 if np.sqrt(s) <= EPS else float(np.sqrt(np.sum(diff * diff) / s))

        def normalise(d: np.ndarray) -> np.ndarray:
            lo, hi = d.min(), d.max()
            if hi > lo:
                d = (d - lo) / (hi - lo)
            return np.maximum(d, F32_EPS)

        p, q = normalise(X), normalise(Y)
        P, Q = p / p.sum(), q / q.sum()
        kld = float(np.sum(P * np.log(P / Q)))
        return [cos, float(absd.max()), float(rel.sum()), red, kld, float(np.std(X)), float(absd.mean()),
                float(np.sqrt(np.mean(diff * diff))), float(rel.max()), float(rel.mean())]


Chunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]


def numpy_reference(chunks: Chunks, *, precise: bool = False) -> dict[int, object]:
    """The ten metrics from (x, y) chunks in compared order, as the original tool computes them (float32 terms:
    `numpy_reference32`), or in float64 with `precise`. Index 5 is (mean_x, std_x, mean_y, std_y); None marks a
    metric the original does not compute (an all-zero side's cosine). Formulas: docs/fidelity.md#the-metrics."""
    return numpy_reference64(chunks) if precise else numpy_reference32(chunks)


def _f32(v: float) -> float:
    """v rounded to float32 (inf beyond its range), as the original's float32 sums and quotients are."""
    with np.errstate(over="ignore"):
        return float(np.float32(v))


class _Sum32:
    """`np.sum` of the concatenated float32 chunks as NumPy 1.x (the original's NumPy) computes it: pairwise sums
    of blocks of 8192 elements, added in order in float32, whatever the chunks' sizes."""

    BLOCK = 8192

    def __init__(self) -> None:
        self.total: np.float32 | None = None
        self.carry = np.empty(0, np.float32)

    def _fold(self, block: np.ndarray) -> None:
        s = np.sum(block)
        self.total = s if self.total is None else np.float32(self.total + s)

    def add(self, a: np.ndarray) -> None:
        a = np.concatenate([self.carry, a.astype(np.float32, copy=False).ravel()]) if self.carry.size else a.ravel()
        whole = a.size - a.size % self.BLOCK
        for first in range(0, whole, self.BLOCK):
            self._fold(a[first:first + self.BLOCK])
        self.carry = np.array(a[whole:], np.float32)

    def value(self) -> float:
        if self.carry.size:
            self._fold(self.carry)
            self.carry = np.empty(0, np.float32)
        return float(np.float32(-0.0) if self.total is None else self.total)


def _as_float32(chunks: Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]],
                dtype: type = np.float32) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The non-empty chunk pairs of `chunks()` as flat arrays of their float32 values (as the original tool converts
    both sides), held in `dtype`."""
    for xc, yc in chunks():
        x = xc.astype(np.float32).astype(dtype, copy=False).ravel()
        if x.size:
            yield x, yc.astype(np.float32).astype(dtype, copy=False).ravel()


def numpy_reference32(chunks: Chunks) -> dict[int, object]:
    """The original tool's formulas on float32 arrays, chunk by chunk in three passes of `chunks()` (min/max and
    norms; the terms; KLD's P log(P/Q) once the sums of p and q are known): every per-element term is a NumPy
    float32 operation as in the original, and so is every sum (NumPy 1.x's float32 sums: `_Sum32`)."""
    f32 = np.float32
    n = 0
    sx = sy = 0.0
    sxx, syy = _Sum32(), _Sum32()
    lo_x = lo_y = f32(np.inf)
    hi_x = hi_y = f32(-np.inf)
    with np.errstate(all="ignore"):
        for X, Y in _as_float32(chunks):
            n += X.size
            sx += float(X.sum(dtype=np.float64))
            sy += float(Y.sum(dtype=np.float64))
            sxx.add(X * X)
            syy.add(Y * Y)
            lo_x, hi_x = min(lo_x, X.min()), max(hi_x, X.max())
            lo_y, hi_y = min(lo_y, Y.min()), max(hi_y, Y.max())
    if n == 0:
        raise ValueError("the NumPy reference got no elements")
    mx, my = sx / n, sy / n
    sxx_v, syy_v = sxx.value(), syy.value()
    nx, ny = f32(np.sqrt(f32(sxx_v))), f32(np.sqrt(f32(syy_v)))
    cos_terms = not (nx <= EPS and ny < EPS) and not (math.sqrt(nx) <= EPS or math.sqrt(ny) <= EPS)
    with np.errstate(all="ignore"):
        range_x, range_y = f32(hi_x - lo_x), f32(hi_y - lo_y)

    def norm(d: np.ndarray, lo: np.float32, span: np.float32) -> np.ndarray:
        return np.maximum((d - lo) / span if span != 0 else d, f32(F32_EPS))

    scos, sdd, sabs, rel_sum, sp, sq, splq = (_Sum32() for _ in range(7))
    cx = cy = 0.0
    max_abs = rel_max = -math.inf
    with np.errstate(all="ignore"):
        for X, Y in _as_float32(chunks):
            a = np.abs(X - Y)
            rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - f32(1)), f32(0))
            if cos_terms:
                scos.add((X / nx) * (Y / ny))
            sdd.add(a * a)
            sabs.add(a)
            max_abs = max(max_abs, float(a.max()))
            rel_sum.add(rel)
            rel_max = max(rel_max, float(rel.max()))
            cx += float(np.sum((X.astype(np.float64) - mx) ** 2))
            cy += float(np.sum((Y.astype(np.float64) - my) ** 2))
            sp.add(norm(X, lo_x, range_x))
            sq.add(norm(Y, lo_y, range_y))
        sp32, sq32 = f32(sp.value()), f32(sq.value())
        for X, Y in _as_float32(chunks):
            P = norm(X, lo_x, range_x) / sp32
            Q = norm(Y, lo_y, range_y) / sq32
            splq.add(P * np.log(P / Q))
        if nx <= EPS and ny < EPS:
            cos: float | str | None = "1.0"  # the original's literal text
        elif not cos_terms:
            cos = None
        else:
            cos = min(scos.value(), 1.0)
        s32 = syy_v
        sdd_v, rel_v = sdd.value(), rel_sum.value()
        red = 0.0 if math.sqrt(s32) <= EPS else _f32(sdd_v / s32) ** 0.5  # NumPy 1.x: a float64 power
    kld = splq.value()
    return {0: cos, 1: max_abs, 2: rel_v, 3: red, 4: 0.0 if abs(kld) < EPS else kld,
            5: (mx, math.sqrt(cx / n), my, math.sqrt(cy / n)), 6: _f32(sabs.value() / n),
            7: float(np.sqrt(f32(_f32(sdd_v / n)))), 8: rel_max, 9: _f32(rel_v / n)}


def numpy_reference64(chunks: Chunks) -> dict[int, object]:
    """The ten metrics in float64 (`--precise`) from (x, y) chunks in compared order, in two passes of `chunks()`,
    with bounded memory: pass 1 gives the means, norms and min/max the second needs (std, cosine, KLD
    normalisation)."""
    n = 0
    sx = sy = sxx = syy = 0.0
    lo_x = lo_y = math.inf
    hi_x = hi_y = -math.inf
    for X, Y in _as_float32(chunks, np.float64):
        n += X.size
        sx += float(X.sum())
        sy += float(Y.sum())
        sxx += float(np.dot(X, X))
        syy += float(np.dot(Y, Y))
        lo_x, hi_x = min(lo_x, float(X.min())), max(hi_x, float(X.max()))
        lo_y, hi_y = min(lo_y, float(Y.min())), max(hi_y, float(Y.max()))
    if n == 0:
        raise ValueError("the NumPy reference got no elements")
    mx, my = sx / n, sy / n
    sxy = sdd = sabs = rel_sum = cx = cy = sp = sq = splq = 0.0
    max_abs = rel_max = -math.inf

    def norm(d: np.ndarray, lo: float, hi: float) -> np.ndarray:
        if hi > lo:
            d = (d - lo) / (hi - lo)
        return np.maximum(d, F32_EPS)

    with np.errstate(all="ignore"):
        for X, Y in _as_float32(chunks, np.float64):
            d = X - Y
            a = np.abs(d)
            rel = np.where(np.abs(Y) > EPS, np.abs(X / Y - 1.0), 0.0)
            sxy += float(np.dot(X, Y))
            sdd += float(np.dot(d, d))
            sabs += float(a.sum())
            max_abs = max(max_abs, float(a.max()))
            rel_sum += float(rel.sum())
            rel_max = max(rel_max, float(rel.max()))
            cx += float(np.sum((X - mx) ** 2))
            cy += float(np.sum((Y - my) ** 2))
            p, q = norm(X, lo_x, hi_x), norm(Y, lo_y, hi_y)
            sp += float(p.sum())
            sq += float(q.sum())
            splq += float(np.sum(p * np.log(p / q)))
        nx, ny = math.sqrt(sxx), math.sqrt(syy)
        if nx <= EPS and ny < EPS:
            cos: float | str | None = "1.0"  # the original's literal text
        elif math.sqrt(nx) <= EPS or math.sqrt(ny) <= EPS:
            cos = None
        else:
            cos = min(sxy / (nx * ny), 1.0)
        red = 0.0 if math.sqrt(syy) <= EPS else math.sqrt(sdd / syy)
        # sum(P log(P/Q)) with P = p/Sp, Q = q/Sq, rewritten so that one pass over p and q suffices
        kld = splq / sp - math.log(sp / sq)
    return {0: cos, 1: max_abs, 2: rel_sum, 3: red, 4: kld, 5: (mx, math.sqrt(cx / n), my, math.sqrt(cy / n)),
            6: sabs / n, 7: math.sqrt(sdd / n), 8: rel_max, 9: rel_sum / n}


@dataclass
class Measurement:
    name: str
    threads: int
    bytes: int
    seconds: float  # the median timed run
    elements: int = 0
    gbps_min: float | None = None
    gbps_max: float | None = None
    check: str = ""  # "checked" once the run's result agreed with the NumPy reference
    gb_per_s: float = field(init=False)

    def __post_init__(self) -> None:
        self.gb_per_s = self.bytes / self.seconds / 1e9


@dataclass
class CompareBenchmark:
    size_bytes: int
    elements: int
    reference_elements: int  # elements per chunk of the NumPy reference
    machine: dict
    results: list[Measurement] = field(default_factory=list)
    peak_extra_rss_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)
    repeat: int = 0

    def to_dict(self) -> dict:
        """The shared JSON schema (see dumpcmp.cli.bench): one result row per kernel run and thread count."""
        by = {(m.name, m.threads): m for m in self.results}
        rows = []
        for m in self.results:
            if not m.name.startswith("kernel "):
                continue
            case, _, variant = m.name[len("kernel "):].rpartition(", ")
            probe = by.get((PROBE, m.threads))
            ref = by.get((f"numpy reference {case}, 10 metrics", 1))
            # a metric plug-in (--metric plugin:Name) reads each window once
            reads = 1 if variant.startswith(PLUGIN_PREFIX) else dependent_reads(VARIANT_METRICS[variant])
            ceiling = probe.gb_per_s / reads if probe else None
            rows.append({
                "case": case, "metrics": variant, "threads": m.threads, "bytes": m.bytes, "elements": m.elements,
                "gbps": {"median": m.gb_per_s, "min": m.gbps_min, "max": m.gbps_max},
                "elements_per_s": m.elements / m.seconds,
                "read_probe_gbps": probe.gb_per_s if probe else None,
                "numpy_gbps": ref.gb_per_s if ref else None,
                "vs_read_probe": m.gb_per_s / probe.gb_per_s if probe else None,
                "reads": reads,
                "ceiling_gbps": ceiling,
                "vs_ceiling": m.gb_per_s / ceiling if ceiling else None,
                "x_numpy": m.gb_per_s / ref.gb_per_s if ref else None,
                "check": m.check,
            })
        return {"benchmark": "compare", "machine": self.machine,
                "parameters": {"size_bytes": self.size_bytes, "elements": self.elements, "threads": self.threads,
                               "repeats": self.repeat, "reference_chunk_elements": self.reference_elements},
                "unit": "GB/s of both sides' bytes (1 GB = 1e9 bytes), median of the timed runs",
                "checked": all(r["check"] == "checked" for r in rows if not r["metrics"].startswith(PLUGIN_PREFIX)),
                "results": rows,
                "measurements": [asdict(m) for m in self.results],
                "peak_extra_rss_bytes": self.peak_extra_rss_bytes, "notes": self.notes}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


# ---- the synthetic pair and its dumps --------------------------------------------------------------------------


def image_shape(elements: int) -> tuple[int, int, int, int]:
    """NCHW with CHANNELS channels and H = W up to 32, its element count close to `elements`."""
    per = CHANNELS * 32 * 32
    if elements >= per:
        return (elements // per, CHANNELS, 32, 32)
    h = max(1, math.isqrt(max(elements, 1) // CHANNELS))
    return (1, CHANNELS, h, h)


def _pair(n: int, seed: int, chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """fp32 ground truth and a device side 1% off, made chunk by chunk so no full-size temporary is needed."""
    rng = np.random.default_rng(seed)
    truth = rng.standard_normal(n, dtype=np.float32)
    device = np.empty(n, np.float32)
    for a in range(0, n, chunk):
        noise = rng.standard_normal(min(chunk, n - a), dtype=np.float32)
        noise *= np.float32(0.01)
        np.add(truth[a:a + len(noise)], noise, out=device[a:a + len(noise)])
    return device, truth


def _plain_chunks(x: np.ndarray, y: np.ndarray, chunk: int) -> Chunks:
    x1, y1 = x.reshape(-1), y.reshape(-1)
    return lambda: ((x1[a:a + chunk], y1[a:a + chunk]) for a in range(0, x1.size, chunk))


def _nc1hwc0_chunks(dev: np.ndarray, truth: np.ndarray, chunk: int) -> Chunks:
    """Batches of images, the spec's NC1HWC0 -> NCHW recipe against the same images of the ground truth."""
    n, c1, h, w, c0 = dev.shape
    c = truth.shape[1]
    step = max(1, chunk // max(1, c * h * w))

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a in range(0, n, step):
            b = min(n, a + step)
            plain = dev[a:b].transpose(0, 1, 4, 2, 3).reshape(b - a, c1 * c0, h, w)[:, :c]
            yield np.ascontiguousarray(plain), truth[a:b]
    return gen


def _nz_chunks(dev: np.ndarray, truth: np.ndarray, chunk: int) -> Chunks:
    """Blocks of 16-row tiles, the spec's FRACTAL_NZ -> ND recipe against the same rows of the ground truth."""
    m, k = truth.shape
    n1, m1, m0, n0 = dev.shape
    step = max(1, chunk // max(1, n1 * n0 * m0))

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a in range(0, m1, step):
            b = min(m1, a + step)
            rows = dev[:, a:b].transpose(1, 2, 0, 3).reshape((b - a) * m0, n1 * n0)
            top = min(b * m0, m) - a * m0
            yield rows[:top, :k], truth[a * m0: a * m0 + top]
    return gen


def _write_dumps(folder: str, device16: np.ndarray, shape: tuple[int, ...]):
    """The fp16 device side as an NC1HWC0 dump (NCHW `shape`) and a FRACTAL_NZ dump (ND (N*C, H*W)), encoded by
    the NumPy recipe so the codec under test does not make its own input. Returns [(case, dump, plain, shape)]."""
    from dumpcmp.dumps import layout as L
    from dumpcmp.dumps.dump import TensorData, open_dump, write_dump

    out = []
    n, c, h, w = shape
    for device, plain, pshape in (("NC1HWC0", "NCHW", shape), ("FRACTAL_NZ", "ND", (n * c, h * w))):
        dshape = L.device_shape(device, plain, pshape, c0=16)
        src = device16.reshape(pshape if device != "FRACTAL_NZ" else (1,) + pshape)
        dev = np.empty(dshape if device != "FRACTAL_NZ" else (1,) + tuple(dshape), np.float16)
        numpy_encode(device, src, dev)
        if device == "FRACTAL_NZ":
            dev = dev[0]
        path = write_dump(os.path.join(folder, f"Conv2D.bench_{device.lower()}.1.1700000000000000"),
                          op_name=f"bench_{device.lower()}",
                          outputs=[TensorData(dev, data_type="FLOAT16", format=device, original_shape=pshape)])
        del dev
        out.append((f"fp16 {device} dump vs fp32 {plain}", open_dump(path), plain, pshape))
    return out


def working_set_bytes(size_bytes: int, chunk: int = 1 << 20) -> int:
    """Ground truth, fp32 and fp16 device sides, two fp16 dumps (page cache) and an encoding buffer, plus the
    NumPy reference's float64 chunk temporaries."""
    n = max(size_bytes // 4, 1)
    return 16 * n + 16 * 8 * chunk


def run_compare_benchmark(size_bytes: int, *, threads: Iterable[int] | str | None = (1, 2), repeat: int = 3,
                          reference_elements: int = 1 << 20, seed: int = 0, dumps: bool = True,
                          folder: str | None = None, quiet: bool = True,
                          plugins: Sequence[MetricPlugin] = ()) -> CompareBenchmark:
    """Every case at `size_bytes` of fp32 ground truth per side, each thread count; `reference_elements` is the
    chunk of the NumPy reference; `dumps=False` leaves the dump cases out; the dumps go to a temporary folder
    (under `folder` if given) that is removed before returning; `plugins`: metric plug-ins timed on every case
    beside the built-ins (rows "plugin:Name", not checked: their values are the user's). Raises InsufficientMemory
    up front when the working set does not fit, CheckFailed when a kernel result differs from the reference,
    ConfigError when a plug-in fails."""
    thread_counts = parse_threads(threads if not isinstance(threads, (list, tuple)) else list(threads))
    chunk = max(int(reference_elements), 1)
    require_memory(working_set_bytes(size_bytes, chunk), f"bench compare at --size {format_bytes(size_bytes)}")
    device32, truth = _pair(image_shape_elements(size_bytes), seed)
    n = truth.size
    device16 = device32.astype(np.float16)
    bench = CompareBenchmark(size_bytes, n, chunk, machine_info(), threads=list(thread_counts), repeat=repeat)
    work = tempfile.mkdtemp(prefix="dumpcmp-bench-compare-", dir=folder)
    try:
        shape = image_shape(n)
        dump_cases = _write_dumps(work, device16, shape) if dumps else []
        steps = 1 + (2 + len(dump_cases)) * (1 + len(thread_counts) * (1 + len(plugins)))
        with Progress(steps, "bench compare", quiet=quiet) as progress:
            # cases: name -> (kernel call taking (metrics, threads), NumPy chunks, bytes, variants)
            cases: list[tuple[str, Callable[[str | None, int], object], Chunks, int, tuple[str, ...]]] = []
            sources: dict[str, tuple[object, object]] = {}  # the engine sources of each case, for the plug-ins
            for name, x in (("fp16 vs fp32", device16), ("fp32 vs fp32", device32)):
                sources[name] = (core.compare.source_from_array(x), core.compare.source_from_array(truth))
                cases.append((name, lambda m, t, x=x: compare_arrays(x, truth, threads=t, metrics=m),
                              _plain_chunks(x, truth, chunk), x.nbytes + truth.nbytes,
                              ("10 metrics", "without KLD", "one pass")))
            for name, dump, plain, pshape in dump_cases:
                raw = dump.outputs[0].array()
                xs = core.compare.source_from_dump(dump._file, "output", 0, plain, list(pshape))
                ys = core.compare.source_from_array(truth.reshape(pshape))
                sources[name] = (xs, ys)
                chunks = (_nc1hwc0_chunks(raw, truth.reshape(pshape), chunk) if plain == "NCHW"
                          else _nz_chunks(raw, truth.reshape(pshape), chunk))
                cases.append((name, lambda m, t, xs=xs, ys=ys: core.compare.compare_sources(
                    xs, ys, metrics=None if m is None else [int(i) for i in m.split(",")], threads=t),
                    chunks, dump.outputs[0].size + truth.nbytes, ("10 metrics",)))
            progress.advance()

            references = {}
            for name, _, chunks, nbytes, _ in cases:
                start = time.perf_counter()
                references[name] = numpy_reference(chunks)
                seconds = time.perf_counter() - start
                bench.results.append(Measurement(f"numpy reference {name}, 10 metrics", 1, nbytes, seconds, n,
                                                 check="reference"))
                progress.advance()

            if not reset_peak_rss():
                bench.notes.append("could not reset the RSS high-water mark: peak extra memory is a lower bound")
            rss_before, peak_before = current_rss_bytes(), peak_rss_bytes()
            for t in thread_counts:
                probe = time_runs(lambda t=t: (core.metrics.read_probe(device32, t), core.metrics.read_probe(truth, t)),
                                  repeat)
                nb = device32.nbytes + truth.nbytes
                g = probe.gbps(nb)
                bench.results.append(Measurement(PROBE, t, nb, probe.median, 2 * n, g["min"], g["max"]))
                for name, kernel, _, nbytes, variants in cases:
                    for variant in variants:
                        metrics = VARIANT_METRICS[variant]
                        result = kernel(metrics, t)  # the warm-up run is the checked one
                        check = check_metrics(result, references[name], f"{name}, {variant}, {t} thread(s)")
                        timing = time_runs(lambda k=kernel, m=metrics, t=t: k(m, t), repeat, warmup=False)
                        g = timing.gbps(nbytes)
                        bench.results.append(Measurement(f"kernel {name}, {variant}", t, nbytes, timing.median, n,
                                                         g["min"], g["max"], check["status"]))
                    progress.advance()
                    for plugin in plugins:
                        xs, ys = sources[name]
                        _, message = plugin.compute(xs, ys, t)  # the warm-up run: a plug-in that fails stops here
                        if message:
                            raise ConfigError(f"--metric {PLUGIN_PREFIX}{plugin.name} fails on the case {name}, "
                                              f"{t} thread(s): {message}")
                        timing = time_runs(lambda p=plugin, xs=xs, ys=ys, t=t: p.compute(xs, ys, t), repeat,
                                           warmup=False)
                        g = timing.gbps(nbytes)
                        bench.results.append(Measurement(f"kernel {name}, {PLUGIN_PREFIX}{plugin.name}", t, nbytes,
                                                         timing.median, n, g["min"], g["max"], "plug-in"))
                        progress.advance()
            # the kernel's own memory: growth of the high-water mark beyond the inputs (which existed before)
            bench.peak_extra_rss_bytes = max(peak_rss_bytes() - max(peak_before, rss_before), 0)
        bench.notes.append("the NumPy reference is the original's float32 formulas, chunk by chunk over the whole "
                           "pair, timed once; it checks every kernel run as the values print (%.6f)")
        return bench
    finally:
        shutil.rmtree(work, ignore_errors=True)


def image_shape_elements(size_bytes: int) -> int:
    """Elements of the pair at `size_bytes` of fp32 ground truth: a whole number of NCHW images."""
    return math.prod(image_shape(max(size_bytes // 4, 1)))


def summary(bench: CompareBenchmark) -> str:
    """The developer script's listing: every measurement, then ratios to the probe and NumPy."""
    lines = [f"{bench.elements} elements per side ({bench.size_bytes / 2**20:.0f} MiB of fp32 ground truth); "
             f"CPU {', '.join(bench.machine.get('cpu_simd_flags', [])) or 'no AVX'}"
             + (f", DUMPCMP_SIMD={bench.machine['DUMPCMP_SIMD']}" if bench.machine.get("DUMPCMP_SIMD") else "")]
    for r in bench.results:
        lines.append(f"  {r.name:<55} threads={r.threads}  {r.gb_per_s:7.2f} GB/s  ({r.seconds * 1e3:8.1f} ms)"
                     + (f"  {r.check}" if r.check == "checked" else ""))
    lines.append(f"  peak RSS beyond the inputs during kernel runs: {bench.peak_extra_rss_bytes / 2**20:.1f} MiB")
    for row in bench.to_dict()["results"]:
        lines.append(f"  {row['case']}, {row['metrics']:<11}, {row['threads']} thread(s): "
                     f"{row['vs_read_probe']:6.1%} of the read probe, {row['vs_ceiling']:6.1%} of its "
                     f"{row['reads']}-read ceiling, {row['x_numpy']:6.1f}x NumPy (10 metrics)")
    lines.extend(f"  note: {n}" for n in bench.notes)
    return "\n".join(lines)


def format_table(result: dict) -> str:
    """The user's table from `CompareBenchmark.to_dict()`."""
    head = ["case", "metrics", "thr", "GB/s", "min-max", "Gelem/s", "read", "/read", "reads", "/ceil", "numpy",
            "x numpy", "check"]
    rows = []
    for r in result["results"]:
        g = r["gbps"]
        rows.append([r["case"], r["metrics"], str(r["threads"]), gb(g["median"]), f"{g['min']:.2f}-{g['max']:.2f}",
                     f"{r['elements_per_s'] / 1e9:.2f}", gb(r["read_probe_gbps"]),
                     ratio(g["median"], r["read_probe_gbps"]), str(r["reads"]),
                     ratio(g["median"], r["ceiling_gbps"]), gb(r["numpy_gbps"]),
                     f"{r['x_numpy']:.1f}" if r["x_numpy"] else "-", r["check"]])
    p = result["parameters"]
    title = (f"metrics kernel, {p['elements']} elements per side ({format_bytes(p['size_bytes'])} of fp32 ground "
             f"truth), GB/s of both sides, median of {p['repeats']} runs; {machine_line(result['machine'])}")
    return (title + "\n" + text_table(head, rows, left=3)
            + f"\npeak memory beyond the inputs during kernel runs: {format_bytes(result['peak_extra_rss_bytes'])}"
            + "\nreads: how often any exact implementation must read both sides (the float32 cosine needs the norms, "
              "KLD's terms the sums of p and q); /ceil: the share of the read probe divided by that, a ceiling for "
              "tensors larger than the caches (smaller ones are read again from the caches)")
