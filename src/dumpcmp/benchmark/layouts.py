"""Layout codec throughput: every device layout, decoded into its plain layout and encoded back, per data type and
thread count, next to baselines measured in the same run on the same number of bytes:

  memcpy      np.copyto of the plain tensor's bytes between preallocated buffers (one thread);
  read probe  one pass reading the plain tensor's bytes in C++ (`_core.metrics.read_probe`) on the same threads;
  numpy       the spec's reshape/transpose recipe (np.pad for the encode), into a preallocated array.

Figures are GB/s of the PLAIN tensor (bytes of the NCHW/NCDHW/ND side per second, 1 GB = 1e9 bytes) and elements/s:
the median of `repeats` timed runs after a warm-up, with the slowest and fastest. The ratios to memcpy and to the
read probe are what carries over between machines. Every kernel run is checked once, byte for byte, against the
NumPy recipe's result (into a destination first filled with a sentinel), so a wrong conversion is never timed.

    >>> from dumpcmp.benchmark import layouts
    >>> result = layouts.run(size_bytes=64 << 20, dtypes=("fp16",), formats=("NC1HWC0",))
    >>> print(layouts.format_table(result))

`run` returns a JSON-ready dict (schema in `dumpcmp.cli.bench`); input data is random bytes generated in memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dumpcmp.dumps import layout as L
from dumpcmp.support.native import core
from dumpcmp.support.progress import Progress
from dumpcmp.benchmark.common import (
    check_arrays,
    format_bytes,
    gb,
    machine_info,
    machine_line,
    parse_threads,
    ratio,
    require_memory,
    text_table,
    time_runs,
)

#: every device layout the codec has, with the plain layout of its family it is measured against
PLAIN_OF = {
    "NC1HWC0": "NCHW", "NC1HWC0_C04": "NCHW", "FRACTAL_Z": "NCHW", "FRACTAL_Z_C04": "NCHW",
    "NDC1HWC0": "NCDHW", "FRACTAL_Z_3D": "NCDHW", "FRACTAL_NZ": "ND",
}
ALL_FORMATS = tuple(PLAIN_OF)
DEFAULT_FORMATS = ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ")
DIRECTIONS = ("decode", "encode")

#: short names on the command line -> storage dtype names
DTYPES = {"fp16": "float16", "fp32": "float32", "int8": "int8", "bf16": "bfloat16"}
DEFAULT_DTYPES = ("fp16", "fp32")


def dtype_key(name: str) -> str:
    """'fp16' or 'float16' -> 'fp16'; ValueError naming the choices otherwise."""
    n = name.strip().lower()
    for key, full in DTYPES.items():
        if n in (key, full):
            return key
    raise ValueError(f"data type {name!r} is not one of {', '.join(DTYPES)}")


def storage_dtype(key: str) -> np.dtype:
    """The NumPy dtype holding the elements; bf16 without ml_dtypes is held as its 16-bit patterns (the codec
    moves bytes: only the element size matters to it)."""
    if key == "bf16":
        try:
            import ml_dtypes
        except ImportError:
            return np.dtype(np.uint16)
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(DTYPES[key])


def format_key(name: str) -> str:
    n = name.strip().upper()
    if n not in PLAIN_OF:
        raise ValueError(f"layout {name!r} is not one of {', '.join(ALL_FORMATS)}")
    return n


# ---- plain shapes that grow with the size, and the spec's NumPy recipes ---------------------------------------


def plain_shape_for(device: str, elements: int) -> tuple[int, ...]:
    """A typical tensor of the layout with about `elements` elements (at least one tile)."""
    e = max(1, elements)
    if device in ("NC1HWC0", "NC1HWC0_C04"):
        c, hw = (256, 56) if device == "NC1HWC0" else (3, 224)  # a ResNet activation; a first-layer image
        if e >= c * hw * hw:
            return (e // (c * hw * hw), c, hw, hw)
        return (1, c, max(1, math.isqrt(e // c)), max(1, math.isqrt(e // c)))
    if device == "NDC1HWC0":
        per = 64 * 8 * 28 * 28
        if e >= per:
            return (e // per, 64, 8, 28, 28)
        h = max(1, math.isqrt(e // 64))
        return (1, 64, 1, h, h)
    if device == "FRACTAL_Z":  # 3x3 weights, 2048 output channels, input channels a multiple of 16
        cin = (e // (2048 * 9)) // 16 * 16
        return (2048, cin, 3, 3) if cin >= 16 else (max(1, e // (16 * 9)), 16, 3, 3)
    if device == "FRACTAL_Z_C04":  # a 7x7 first-layer kernel over 3 channels
        return (max(1, e // (3 * 49)), 3, 7, 7)
    if device == "FRACTAL_Z_3D":
        cin = (e // (512 * 27)) // 16 * 16
        return (512, cin, 3, 3, 3) if cin >= 16 else (max(1, e // (16 * 27)), 16, 3, 3, 3)
    if device == "FRACTAL_NZ":  # batched 1024 x 1024 matrices
        if e >= 1 << 20:
            return (e >> 20, 1024, 1024)
        m = max(16, math.isqrt(e) // 16 * 16)
        return (1, m, m)
    raise ValueError(f"no benchmark shape for {device}")


def _pad(x: np.ndarray, target: Sequence[int]) -> np.ndarray:
    return np.pad(x, [(0, t - s) for s, t in zip(x.shape, target)])


def numpy_decode(device: str, dev: np.ndarray, out: np.ndarray) -> None:
    """The recipe of docs/formats.md#layouts: reshape, move axes, merge, crop; C0 is the device shape's last dim."""
    if device in ("NC1HWC0", "NC1HWC0_C04"):
        n, c1, h, w, c0 = dev.shape
        out[...] = dev.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, : out.shape[1]]
    elif device == "NDC1HWC0":
        n, d, c1, h, w, c0 = dev.shape
        out[...] = dev.transpose(0, 2, 5, 1, 3, 4).reshape(n, c1 * c0, d, h, w)[:, : out.shape[1]]
    elif device in ("FRACTAL_Z", "FRACTAL_Z_C04"):
        n, c, h, w = out.shape
        _, n1, n0, c0 = dev.shape
        c1 = dev.shape[0] // (h * w)
        six = dev.reshape(c1, h, w, n1, n0, c0).transpose(3, 4, 0, 5, 1, 2)
        out[...] = six.reshape(n1 * n0, c1 * c0, h, w)[:n, :c]
    elif device == "FRACTAL_Z_3D":
        n, c, d, h, w = out.shape
        _, n1, n0, c0 = dev.shape
        c1 = dev.shape[0] // (d * h * w)
        seven = dev.reshape(d, c1, h, w, n1, n0, c0).transpose(4, 5, 1, 6, 0, 2, 3)
        out[...] = seven.reshape(n1 * n0, c1 * c0, d, h, w)[:n, :c]
    elif device == "FRACTAL_NZ":
        b, n1, m1, m0, n0 = dev.shape
        out[...] = dev.transpose(0, 2, 3, 1, 4).reshape(b, m1 * m0, n1 * n0)[:, : out.shape[1], : out.shape[2]]
    else:
        raise ValueError(device)


def numpy_encode(device: str, x: np.ndarray, out: np.ndarray) -> None:
    """The inverse recipe: zero-pad to whole tiles, split the axes, move them into the device order."""
    if device in ("NC1HWC0", "NC1HWC0_C04"):
        n, c, h, w = x.shape
        c1, c0 = out.shape[1], out.shape[4]
        out[...] = _pad(x, (n, c1 * c0, h, w)).reshape(n, c1, c0, h, w).transpose(0, 1, 3, 4, 2)
    elif device == "NDC1HWC0":
        n, c, d, h, w = x.shape
        c1, c0 = out.shape[2], out.shape[5]
        out[...] = _pad(x, (n, c1 * c0, d, h, w)).reshape(n, c1, c0, d, h, w).transpose(0, 3, 1, 4, 5, 2)
    elif device in ("FRACTAL_Z", "FRACTAL_Z_C04"):
        n, c, h, w = x.shape
        _, n1, n0, c0 = out.shape
        c1 = out.shape[0] // (h * w)
        padded = _pad(x, (n1 * n0, c1 * c0, h, w))
        out[...] = padded.reshape(n1, n0, c1, c0, h, w).transpose(2, 4, 5, 0, 1, 3).reshape(out.shape)
    elif device == "FRACTAL_Z_3D":
        n, c, d, h, w = x.shape
        _, n1, n0, c0 = out.shape
        c1 = out.shape[0] // (d * h * w)
        padded = _pad(x, (n1 * n0, c1 * c0, d, h, w))
        out[...] = padded.reshape(n1, n0, c1, c0, d, h, w).transpose(4, 2, 5, 6, 0, 1, 3).reshape(out.shape)
    elif device == "FRACTAL_NZ":
        b, m, n = x.shape
        n1, m1, m0, n0 = out.shape[1:]
        out[...] = _pad(x, (b, m1 * m0, n1 * n0)).reshape(b, m1, m0, n1, n0).transpose(0, 3, 1, 2, 4)
    else:
        raise ValueError(device)


@dataclass
class Case:
    device: str
    direction: str
    dtype: str  # short name: fp16, fp32, int8, bf16
    plain_shape: tuple[int, ...]
    device_shape: tuple[int, ...]
    itemsize: int

    @property
    def plain(self) -> str:
        return PLAIN_OF[self.device]

    @property
    def name(self) -> str:
        return f"{self.device}->{self.plain}" if self.direction == "decode" else f"{self.plain}->{self.device}"

    @property
    def plain_bytes(self) -> int:
        return math.prod(self.plain_shape) * self.itemsize

    @property
    def device_bytes(self) -> int:
        return math.prod(self.device_shape) * self.itemsize

    @property
    def working_set(self) -> int:
        """Source, destination, the reference result, and NumPy's temporaries (a padded copy, a merged copy)."""
        p, d = self.plain_bytes, self.device_bytes
        return 2 * p + 2 * d if self.direction == "decode" else p + 4 * d


def make_cases(size_bytes: int, dtypes: Sequence[str], formats: Sequence[str],
               directions: Sequence[str] = DIRECTIONS) -> list[Case]:
    cases = []
    for key in (dtype_key(d) for d in dtypes):
        dtype = storage_dtype(key)
        for device in (format_key(f) for f in formats):
            shape = plain_shape_for(device, size_bytes // dtype.itemsize)
            c0 = L.default_c0(device, dtype)
            dev_shape = L.device_shape(device, PLAIN_OF[device], shape, c0=c0)
            for direction in directions:
                if direction not in DIRECTIONS:
                    raise ValueError(f"direction {direction!r} is not decode or encode")
                cases.append(Case(device, direction, key, tuple(shape), tuple(dev_shape), dtype.itemsize))
    return cases


def _random(shape: Sequence[int], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Random bytes viewed as the dtype: every bit pattern moves through the codec alike, NaNs included."""
    n = math.prod(shape) * dtype.itemsize
    return rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape)


def measure_case(case: Case, threads: Sequence[int], repeats: int, numpy_repeats: int,
                 seed: int = 0) -> list[dict]:
    """One layout, direction and dtype: baselines once, then the kernel (checked, then timed) per thread count."""
    dtype = storage_dtype(case.dtype)
    rng = np.random.default_rng(seed)
    plain = _random(case.plain_shape, dtype, rng)
    if case.direction == "decode":
        src = np.empty(case.device_shape, dtype)
        numpy_encode(case.device, plain, src)  # the device tensor, made without the codec under test
        del plain
        dst_shape = case.plain_shape
        plan = L.make_plan(case.device, case.device_shape, case.plain, case.plain_shape, itemsize=dtype.itemsize)

        def recipe(out: np.ndarray) -> None:
            numpy_decode(case.device, src, out)
    else:
        src = plain
        dst_shape = case.device_shape
        plan = L.make_plan(case.plain, case.plain_shape, case.device, case.device_shape, itemsize=dtype.itemsize)

        def recipe(out: np.ndarray) -> None:
            numpy_encode(case.device, src, out)
    dst = np.empty(dst_shape, dtype)
    nbytes = case.plain_bytes
    elements = math.prod(case.plain_shape)

    # baselines on the plain tensor's bytes, in the buffers the kernel uses (both hold at least that many)
    src_bytes = src.reshape(-1).view(np.uint8)[:nbytes]
    dst_bytes = dst.reshape(-1).view(np.uint8)[:nbytes]
    memcpy = time_runs(lambda: np.copyto(dst_bytes, src_bytes), repeats).gbps(nbytes)["median"]
    reference = np.empty(dst_shape, dtype)
    recipe(reference)  # also the NumPy path's warm-up
    numpy_timing = time_runs(lambda: recipe(dst), numpy_repeats, warmup=False)

    rows = []
    for t in threads:
        probe = time_runs(lambda: core.metrics.read_probe(src_bytes, t), repeats).gbps(nbytes)["median"]
        dst.reshape(-1).view(np.uint8)[:] = 0xA5  # a kernel that skips elements cannot pass on stale results
        plan.run(src, dst, t)  # the checked run is the warm-up of the timed ones
        check = check_arrays(dst, reference, f"{case.name} {case.dtype} with {t} thread(s)")
        timing = time_runs(lambda: plan.run(src, dst, t), repeats, warmup=False)
        speed = timing.gbps(nbytes)
        rows.append({
            "case": case.name, "layout": case.device, "direction": case.direction, "dtype": case.dtype,
            "plain_format": case.plain, "plain_shape": list(case.plain_shape), "device_shape": list(case.device_shape),
            "plain_bytes": nbytes, "device_bytes": case.device_bytes, "elements": elements, "kernel": plan.kernel,
            "threads": t, "gbps": speed, "elements_per_s": elements / timing.median,
            "memcpy_gbps": memcpy, "read_probe_gbps": probe, "numpy_gbps": numpy_timing.gbps(nbytes)["median"],
            "vs_memcpy": speed["median"] / memcpy, "vs_read_probe": speed["median"] / probe,
            "x_numpy": speed["median"] / numpy_timing.gbps(nbytes)["median"], "check": check["status"],
        })
    return rows


def run(size_bytes: int = 256 << 20, dtypes: Sequence[str] = DEFAULT_DTYPES,
        threads: Sequence[int] | str | None = None, repeats: int = 5, numpy_baseline: bool = True, *,
        formats: Sequence[str] = DEFAULT_FORMATS, directions: Sequence[str] = DIRECTIONS, quiet: bool = True,
        seed: int = 0) -> dict:
    """Measure every layout and direction for every dtype and thread count (default: 1 and all of dumpcmp's).

    numpy_baseline=False times the NumPy recipe once instead of `repeats` times (it still checks every kernel run).
    Raises InsufficientMemory before allocating anything when a case's working set does not fit, CheckFailed when a
    kernel's output differs from the recipe's.
    """
    thread_counts = parse_threads(threads)
    cases = make_cases(size_bytes, dtypes, formats, directions)
    biggest = max(cases, key=lambda c: c.working_set)
    require_memory(biggest.working_set, f"the {biggest.name} {biggest.dtype} case at --size {format_bytes(size_bytes)}")
    rows: list[dict] = []
    with Progress(len(cases), "bench layouts", quiet=quiet) as progress:
        for k, case in enumerate(cases):
            rows += measure_case(case, thread_counts, repeats, repeats if numpy_baseline else 1, seed + k)
            progress.advance()
    return {
        "benchmark": "layouts", "machine": machine_info(),
        "parameters": {"size_bytes": size_bytes, "dtypes": [dtype_key(d) for d in dtypes],
                       "formats": [format_key(f) for f in formats], "directions": list(directions),
                       "threads": list(thread_counts), "repeats": repeats},
        "unit": "GB/s of the plain tensor (1 GB = 1e9 bytes), median of the timed runs",
        "checked": True, "results": rows,
        "notes": ["memcpy is NumPy's single-threaded copy; the read probe runs on the row's threads",
                  "every kernel run was checked byte for byte against the NumPy recipe's result"],
    }


def format_table(result: dict) -> str:
    head = ["case", "dtype", "thr", "kernel", "GB/s", "min-max", "Gelem/s", "memcpy", "read", "numpy",
            "/memcpy", "/read", "x numpy", "check"]
    rows = []
    for r in result["results"]:
        g = r["gbps"]
        rows.append([r["case"], r["dtype"], str(r["threads"]), r["kernel"], gb(g["median"]),
                     f"{g['min']:.2f}-{g['max']:.2f}", f"{r['elements_per_s'] / 1e9:.2f}", gb(r["memcpy_gbps"]),
                     gb(r["read_probe_gbps"]), gb(r["numpy_gbps"]), ratio(g["median"], r["memcpy_gbps"]),
                     ratio(g["median"], r["read_probe_gbps"]), f"{r['x_numpy']:.1f}", r["check"]])
    p = result["parameters"]
    title = (f"layout codec, GB/s of the plain tensor (~{format_bytes(p['size_bytes'])}), median of {p['repeats']} "
             f"runs; {machine_line(result['machine'])}")
    return title + "\n" + text_table(head, rows, left=4)


def plot_series(result: dict) -> tuple[list[str], dict[str, list[float]]]:
    """Bar labels (case and dtype) and, per thread count and for memcpy, the median GB/s of each, for a plot."""
    labels: list[str] = []
    series: dict[str, dict[str, float]] = {f"{t} thread(s)": {} for t in result["parameters"]["threads"]}
    series["memcpy"] = {}
    for r in result["results"]:
        label = f"{r['case']} {r['dtype']}"
        if label not in labels:
            labels.append(label)
        series[f"{r['threads']} thread(s)"][label] = r["gbps"]["median"]
        series["memcpy"][label] = r["memcpy_gbps"]
    return labels, {name: [values.get(lab, 0.0) for lab in labels] for name, values in series.items()}
