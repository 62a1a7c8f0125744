"""What every benchmark shares: machine info, timing (median, min, max of several runs), sizes, memory limits and
resident-memory probes, the reference check, tables.

The measuring modules of this package (layouts, compare, detail, model, dumps) build on it; so do the developer
scripts in bench/ and `dumpcmp bench`.
"""

from __future__ import annotations

import math
import os
import platform
import re
import resource
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from dumpcmp.support.native import core
from dumpcmp.errors import DumpcmpError

#: the vector extensions the kernels can dispatch to, as /proc/cpuinfo names them
SIMD_FLAGS = ("avx512f", "avx512dq", "avx512bw", "avx512vl", "avx2", "fma", "f16c")


class InsufficientMemory(DumpcmpError):
    """A benchmark size whose working set does not fit the memory the machine has available (exit code 2)."""


class CheckFailed(DumpcmpError):
    """A kernel run during benchmarking disagrees with its reference: its figures would be worthless."""


# ---- machine ---------------------------------------------------------------------------------------------------


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (empty when there is none)."""
    fields: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_simd_flags() -> list[str]:
    """The vector extensions the kernels can dispatch to that this CPU reports (Linux /proc/cpuinfo)."""
    flags = set(_cpuinfo().get("flags", "").split())
    return [name for name in SIMD_FLAGS if name in flags]


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes (empty when there is none)."""
    out: dict[str, int] = {}
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key] = int(parts[0]) * (1024 if len(parts) > 1 and parts[1] == "kB" else 1)
    except OSError:
        pass
    return out


def available_memory_bytes() -> int | None:
    """Memory a new working set can take without swapping: MemAvailable, None when the system does not say."""
    return meminfo().get("MemAvailable")


def physical_cores() -> int | None:
    """Distinct (physical id, core id) pairs of /proc/cpuinfo; None when it does not tell."""
    cores: set[tuple[str, str]] = set()
    current: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in list(f) + [""]:
                if not line.strip():
                    if "core id" in current:
                        cores.add((current.get("physical id", "0"), current["core id"]))
                    current = {}
                    continue
                key, _, value = line.partition(":")
                current[key.strip()] = value.strip()
    except OSError:
        return None
    return len(cores) or None


def machine_info() -> dict:
    """Where the figures were measured, for sharing them: CPU, cores, memory, versions, instruction set."""
    from dumpcmp import __version__

    cpu = _cpuinfo().get("model name") or platform.processor() or platform.machine()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    mem = meminfo()
    return {
        "cpu": cpu,
        "cores_logical": os.cpu_count(),
        "cores_physical": physical_cores(),
        "cores_usable": usable,
        "memory_total_bytes": mem.get("MemTotal"),
        "memory_available_bytes": mem.get("MemAvailable"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "dumpcmp": __version__,
        "simd_level": core.simd_level(),
        "cpu_simd_flags": cpu_simd_flags(),
        # caps the kernels' instruction set (scalar, avx2, avx512); unset = the best the CPU has
        "DUMPCMP_SIMD": os.environ.get("DUMPCMP_SIMD", ""),
        "dumpcmp_threads": core.num_threads(),
    }


def machine_line(machine: dict) -> str:
    mem = machine.get("memory_total_bytes")
    parts = [str(machine.get("cpu")), f"{machine.get('cores_usable')} usable cores"]
    if mem:
        parts.append(f"{mem / 2**30:.1f} GiB")
    parts.append(f"kernels: {machine.get('simd_level')}")
    return ", ".join(parts)


# ---- sizes and lists -------------------------------------------------------------------------------------------

_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([KMGT]?)(I?B)?\s*", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """'512MB', '2GB', '100M', '1GiB', '4096' -> bytes (powers of 1024)."""
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise ValueError(f"size {text!r} is not like 512MB or 2GB")
    value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if value <= 0:
        raise ValueError(f"size {text!r} is not positive")
    return value


def format_bytes(n: float) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def parse_threads(text: str | Sequence[int] | None) -> tuple[int, ...]:
    """'1,2' -> (1, 2); None -> 1 and all of dumpcmp's threads. 0 means all threads."""
    if text is None:
        return tuple(sorted({1, core.num_threads()}))
    items = [t.strip() for t in text.split(",") if t.strip()] if isinstance(text, str) else list(text)
    out = []
    for t in items:
        try:
            n = int(t)
        except (TypeError, ValueError):
            raise ValueError(f"thread count {t!r} is not an integer") from None
        if n < 0:
            raise ValueError(f"thread count {n} is negative")
        out.append(n or core.num_threads())
    if not out:
        raise ValueError("no thread count given")
    return tuple(dict.fromkeys(out))


# ---- timing ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds of the timed runs of one measurement (after the warm-up)."""

    runs: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def worst(self) -> float:
        return max(self.runs)

    def rate(self, amount: float) -> dict[str, float]:
        """amount per second: the median run, the slowest (min) and the fastest (max)."""
        return {"median": amount / self.median, "min": amount / self.worst, "max": amount / self.best}

    def gbps(self, nbytes: float) -> dict[str, float]:
        return {k: v / 1e9 for k, v in self.rate(nbytes).items()}


def time_runs(fn: Callable[[], object], repeats: int, *, warmup: bool = True) -> Timing:
    """Time `repeats` calls of fn; a first untimed call faults the pages in and starts the threads."""
    if warmup:
        fn()
    runs = []
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return Timing(tuple(runs))


def best_time(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` runs after a warm-up."""
    return time_runs(fn, repeats).best


# ---- memory ----------------------------------------------------------------------------------------------------

#: the share of MemAvailable a benchmark may plan to use: the rest is for the page cache, Python and the system
MEMORY_SHARE = 0.9


def require_memory(need_bytes: int, what: str, *, available: int | None = None) -> None:
    """Refuse a working set larger than the machine can hold without swapping (InsufficientMemory)."""
    if available is None:
        available = available_memory_bytes()
    if available is None:
        return  # no /proc/meminfo: nothing to judge by
    if need_bytes > available * MEMORY_SHARE:
        raise InsufficientMemory(
            f"{what} needs about {format_bytes(need_bytes)} of memory, but only {format_bytes(available)} is "
            f"available (MemAvailable); choose a smaller --size (benchmarks are never run into swap)")


def peak_rss_bytes() -> int:
    """The high-water mark of resident memory: VmHWM (resettable), else getrusage's ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def reset_peak_rss() -> bool:
    """Start a new high-water mark (Linux: writing 5 to clear_refs), so freed set-up temporaries do not hide growth."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def current_rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def anon_rss_bytes() -> int:
    """Anonymous resident memory (heap, stacks): what the process holds beyond page-cache-backed file mappings."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class AnonPeak:
    """Samples RssAnon every few milliseconds in a thread while a block runs; `.peak` is the largest seen."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.base = 0
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> "AnonPeak":
        self.base = anon_rss_bytes()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, anon_rss_bytes())
            time.sleep(self.interval)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, anon_rss_bytes())


# ---- checking results against references -----------------------------------------------------------------------

EPS = float(np.finfo(np.float64).eps)

#: two differently ordered float64 sums of the same terms agree to about this; printed digits beyond it are noise
SUM_RTOL = 1e-9
#: the default float32 results: a sum rounded to float32 may land one float32 step (<= 1.2e-7) away; KLD's P, Q
#: and log rounded to float32 by NumPy but not by the kernel move it by far less than a printed digit
F32_RTOL, F32_ATOL = 3e-7, 5e-8


def printed_metric(index: int, value: float | Sequence[float]) -> str:
    """A metric as the original tool prints it (docs/fidelity.md#the-metrics), from the NumPy reference's value;
    StandardDeviation takes (mean_x, std_x, mean_y, std_y). None (not computed) prints `NaN`; a computed NaN or
    inf prints as Python's "%.6f" does (`nan`, `inf`)."""
    if value is None:
        return "NaN"
    if isinstance(value, str):  # a literal the original prints as it is ("1.0" for two zero norms)
        return value
    if index == 5:
        values = list(value)  # type: ignore[arg-type]
        return "(%s;%s),(%s;%s)" % tuple("%.3f" % (0.0 if abs(v) < 0.001 else v) for v in values)
    v = float(value)  # type: ignore[arg-type]
    if index == 4 and math.isfinite(v):
        return "%.6f" % (0.0 if abs(v) < EPS else v)  # the original prints -0.000000 just below zero
    return "%.6f" % v


def check_metrics(result, reference: dict[int, object], label: str) -> dict:
    """The kernel's MetricResult against the NumPy reference, metric by metric, as printed.

    A printed value may differ only where the digits lie below what a different summation order changes (within
    SUM_RTOL): AccumulatedRelativeError over a billion elements prints 15 significant digits. Anything else raises
    CheckFailed. Returns how many metrics matched exactly as printed and which only within SUM_RTOL.
    """
    exact, close = 0, []
    for index in result.metrics:
        ref = reference[index]
        got_text = result.format(index)
        want_text = printed_metric(index, ref)  # type: ignore[arg-type]
        if got_text == want_text:
            exact += 1
            continue
        got = result.standard_deviation if index == 5 else result.value(index)
        if ref is None:
            raise CheckFailed(f"{label}: metric {index} is {got_text} but the NumPy reference gives {want_text}")
        a = np.atleast_1d(np.asarray(got, np.float64))
        b = np.atleast_1d(np.asarray(ref, np.float64))
        rtol, atol = (SUM_RTOL, 0.0) if result.precise or index == 5 else (F32_RTOL, F32_ATOL)
        if a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            close.append(index)
            continue
        raise CheckFailed(f"{label}: metric {index} is {got_text} but the NumPy reference gives {want_text}")
    return {"status": "checked", "printed_equal": exact, "within_rtol": close}


def check_arrays(got: np.ndarray, want: np.ndarray, label: str) -> dict:
    """A conversion's output against the reference's, byte for byte."""
    if got.shape != want.shape or not np.array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8)):
        bad = "shape" if got.shape != want.shape else \
            f"{int(np.count_nonzero(got.reshape(-1).view(np.uint8) != want.reshape(-1).view(np.uint8)))} bytes"
        raise CheckFailed(f"{label}: the kernel's output differs from the NumPy reference ({bad} differ)")
    return {"status": "checked"}


# ---- output ----------------------------------------------------------------------------------------------------


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1) -> str:
    """Columns padded to their widest cell; the first `left` columns left-aligned, the numbers right-aligned."""
    lines = [list(header)] + [list(r) for r in rows]
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    out = []
    for k, row in enumerate(lines):
        out.append("  ".join(str(c).ljust(w) if j < left else str(c).rjust(w)
                             for j, (c, w) in enumerate(zip(row, widths))).rstrip())
        if k == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def gb(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def ratio(value: float | None, base: float | None) -> str:
    return "-" if not value or not base else f"{value / base:.0%}"
