"""Timing a real dump tree: indexing it and comparing it, next to a memory-read probe over the same files.

    >>> from dumpcmp.benchmark import dumps
    >>> result = dumps.run_dumps_benchmark("/data/dump", "/data/ground_truth", fusion_json="model.json")
    >>> print(dumps.format_table(result))

Measured, median of `repeat` runs after a warm-up (so on a warm page cache, like `bench compare`):
  index by name     scan(DIR): walking the tree and parsing every file name, files/s
  read headers      scan(DIR, read_headers=True): the same plus every dump header, files/s
  read probe        every byte of the files (dump tree and ground truth) read once in C++, GB/s
  compare           the model-level comparison (dumpcmp.compare_runs) of the tree with the ground truth, or with
                    itself (device vs device) without one; GB/s of the same files, files/s, tensors/s, and
                    "tensor GB/s": the stored bytes of both sides of the compared rows per second
  numpy reference   the checked rows recomputed in NumPy (docs/formats.md's recipes for the layout, the original's
                    float32 metrics), once;
                    tensor GB/s of those rows

The tree is only read: nothing is written anywhere. The comparison's rows are checked against the NumPy reference
(as printed, `%.6f`): every row by default, or the first `check_rows` (rows the recipes do not cover are counted
as not checked, with the reason).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from dumpcmp.support.native import core
from dumpcmp.errors import NotFoundError
from dumpcmp.support.progress import Progress
from dumpcmp.dumps.scan import scan
from dumpcmp.benchmark.common import (
    AnonPeak,
    check_metrics,
    format_bytes,
    gb,
    machine_info,
    machine_line,
    parse_threads,
    text_table,
    time_runs,
)
from dumpcmp.benchmark.compare import numpy_reference
from dumpcmp.benchmark.layouts import numpy_decode

#: plain layouts the engine decodes a device layout into when the graph does not say otherwise
_DEFAULT_PLAIN = {"NC1HWC0": "NCHW", "NC1HWC0_C04": "NCHW", "FRACTAL_Z": "NCHW", "FRACTAL_Z_C04": "NCHW",
                  "NDC1HWC0": "NCDHW", "FRACTAL_Z_3D": "NCDHW", "FRACTAL_NZ": "ND"}


def tree_files(root: str | os.PathLike[str]) -> list[Path]:
    return sorted(p for p in Path(root).rglob("*") if p.is_file())


def read_everything(paths: list[Path], threads: int = 0) -> int:
    """The probe: every byte of the files read once through read-only mappings, summed in C++."""
    total = 0
    for p in paths:
        if p.stat().st_size == 0:
            continue
        a = np.memmap(p, dtype=np.uint8, mode="r")
        total += core.metrics.read_probe(a, threads)
        del a
    return total


def _tensor(ref: Any, kind: str, index: int) -> Any:
    dump = getattr(ref, "dump", None)
    if dump is None:
        return None
    tensors = dump.inputs if kind == "input" else dump.outputs
    return tensors[index] if index < len(tensors) else None


def _side_bytes(ref: Any, kind: str, index: int) -> int:
    t = _tensor(ref, kind, index)
    if t is not None:
        return int(t.size)
    path = getattr(ref, "path", None)
    return os.path.getsize(path) if path else 0


def row_bytes(row: Any) -> int:
    """Stored bytes of both sides of a compared row."""
    pair = row.pair
    return _side_bytes(pair.npu_ref, pair.kind, pair.index or 0) + \
        _side_bytes(pair.ground_truth_ref, pair.kind, pair.index or 0)


def _values(ref: Any, kind: str, index: int) -> tuple[np.ndarray, str, tuple[int, ...], Any]:
    """(values as stored, format, shape, tensor or None) of one side."""
    t = _tensor(ref, kind, index)
    if t is not None:
        return np.asarray(t.array()), t.format, tuple(t.shape), t
    data = ref.open()
    if isinstance(data, np.ndarray):
        return data, "ND", tuple(data.shape), None
    outs = data.outputs
    t = outs[ref.output_index if ref.output_index < len(outs) else 0]
    return np.asarray(t.array()), t.format, tuple(t.original_shape or t.shape), None


def reference_for_row(row: Any, device_vs_device: bool, chunk: int = 1 << 20) -> tuple[dict | None, str]:
    """The NumPy reference metrics of a compared row, or None and why it cannot be checked."""
    pair = row.pair
    if row.result is None or row.result.scalar:
        return None, "scalar or not compared"
    x, fmt, _, t = _values(pair.npu_ref, pair.kind, pair.index or 0)
    y, _, yshape, _ = _values(pair.ground_truth_ref, pair.kind, pair.index or 0)
    if x.dtype.kind not in "fiub" or y.dtype.kind not in "fiub" or x.dtype == bool or y.dtype == bool:
        return None, f"data type {x.dtype}/{y.dtype} is not checked"
    if fmt in _DEFAULT_PLAIN and not device_vs_device:
        origin = (pair.origin_format or "").upper()
        plain = _DEFAULT_PLAIN[fmt]
        if (origin and origin not in ("ND", plain) and fmt != "FRACTAL_NZ") or (t is not None and t.sub_format > 1):
            return None, f"{fmt} into {origin} is not covered by the NumPy recipes"
        want = 5 if plain == "NCDHW" else 4
        if fmt != "FRACTAL_NZ" and len(yshape) != want:
            return None, f"{fmt} against a {len(yshape)}-D ground truth is not covered by the NumPy recipes"
        if fmt == "FRACTAL_NZ":
            if len(yshape) < 2:
                return None, "FRACTAL_NZ against a 1-D ground truth is not covered by the NumPy recipes"
            dev = x.reshape((-1,) + x.shape[-4:])
            out = np.empty((dev.shape[0],) + yshape[-2:], x.dtype)
        else:
            dev = x
            out = np.empty(yshape, x.dtype)
        try:
            numpy_decode(fmt, dev, out)
        except ValueError as error:
            return None, f"the NumPy recipe cannot decode {fmt} {list(x.shape)} into {list(yshape)}: {error}"
        x = out
    x1, y1 = x.reshape(-1), np.asarray(y).reshape(-1)
    if x1.size != y1.size:
        return None, "element counts differ"
    if not (np.isfinite(x1.astype(np.float32)).all() and np.isfinite(y1.astype(np.float32)).all()):
        return None, "NaN or inf in the data"
    return numpy_reference(lambda: ((x1[a:a + chunk], y1[a:a + chunk]) for a in range(0, x1.size, chunk))), ""


def run_dumps_benchmark(dump_dir: str | os.PathLike[str], ground_truth: str | os.PathLike[str] | None = None, *,
                        fusion_json: str | os.PathLike[str] | None = None, threads: Any = None, repeat: int = 3,
                        check_rows: int | None = None, quiet: bool = True) -> dict:
    """Index, probe and compare the tree (against `ground_truth`, or itself), each thread count; check up to
    `check_rows` compared rows against NumPy (None = every row). Returns the JSON-ready dict."""
    from dumpcmp.comparison.compare import compare_runs

    root = Path(dump_dir)
    if not root.is_dir():
        raise NotFoundError(f"{root}: not a folder of dumps")
    if ground_truth is not None and not Path(ground_truth).is_dir():
        raise NotFoundError(f"{ground_truth}: not a folder of ground truth")
    thread_counts = parse_threads(threads)
    right = Path(ground_truth) if ground_truth is not None else root
    device_vs_device = ground_truth is None
    files = tree_files(root)
    gt_files = tree_files(right) if not device_vs_device else []
    file_bytes = sum(p.stat().st_size for p in files + gt_files)
    steps = 3 + 2 * len(thread_counts) + 1
    results: list[dict] = []
    with Progress(steps, "bench dumps", quiet=quiet) as progress:
        t_names = time_runs(lambda: scan(root), repeat)
        index = scan(root)
        dumps = index.dump_count
        results.append({"step": "index by name", "threads": 1, "files": dumps, "seconds": t_names.median,
                        "files_per_s": dumps / t_names.median, "gbps": None})
        progress.advance()
        t_headers = time_runs(lambda: scan(root, read_headers=True), repeat)
        results.append({"step": "read headers", "threads": core.num_threads(), "files": dumps,
                        "seconds": t_headers.median, "files_per_s": dumps / t_headers.median, "gbps": None})
        progress.advance()

        def compare_all(t: int) -> list:
            return compare_runs(root, right, fusion_json=fusion_json, threads=t)

        references: dict[int, tuple[dict | None, str]] = {}
        failed_reasons: dict[str, int] = {}
        reference_seconds = 0.0
        reference_bytes = 0
        counts: dict[str, int] = {}
        compared_bytes = 0
        peak_extra = 0
        unchecked: dict[str, int] = {}
        for t in thread_counts:
            probe = time_runs(lambda t=t: read_everything(files + gt_files, t), repeat)
            results.append({"step": "read probe", "threads": t, "files": len(files) + len(gt_files),
                            "seconds": probe.median, "files_per_s": (len(files) + len(gt_files)) / probe.median,
                            "gbps": probe.gbps(file_bytes)})
            progress.advance()
            with AnonPeak() as peak:
                runs = compare_all(t)  # the warm-up run, whose rows are checked
            peak_extra = max(peak_extra, peak.peak - peak.base)
            rows = [row for run in runs for row in run.rows]
            counts = {}
            failed_reasons: dict[str, int] = {}
            for row in rows:
                counts[row.status] = counts.get(row.status, 0) + 1
                if row.status == "failed":
                    failed_reasons[row.fail_reason] = failed_reasons.get(row.fail_reason, 0) + 1
            compared = [row for row in rows if row.result is not None]
            compared_bytes = sum(row_bytes(row) for row in compared)
            checked = 0
            for k, row in enumerate(compared):
                if check_rows is not None and len(references) >= check_rows and k not in references:
                    continue
                if k not in references:
                    start = time.perf_counter()
                    references[k] = reference_for_row(row, device_vs_device)
                    reference_seconds += time.perf_counter() - start
                    if references[k][0] is not None:
                        reference_bytes += row_bytes(row)
                    else:
                        unchecked[references[k][1]] = unchecked.get(references[k][1], 0) + 1
                ref, _ = references[k]
                if ref is not None:
                    check_metrics(row.result, ref, f"{row.tensor_index or row.npu_dump} ({t} thread(s))")
                    checked += 1
            timing = time_runs(lambda t=t: compare_all(t), repeat, warmup=False)
            results.append({"step": "compare", "threads": t, "files": len(files) + len(gt_files),
                            "seconds": timing.median, "files_per_s": (len(files) + len(gt_files)) / timing.median,
                            "tensors": len(compared), "tensors_per_s": len(compared) / timing.median,
                            "gbps": timing.gbps(file_bytes), "tensor_gbps": compared_bytes / timing.median / 1e9,
                            "check": f"checked {checked} of {len(compared)} rows" if checked else "not checked"})
            progress.advance()
        if reference_seconds > 0 and reference_bytes:
            g = reference_bytes / reference_seconds / 1e9
            # only tensor bytes: the reference reads the checked rows' tensors, not whole files
            results.append({"step": "numpy reference", "threads": 1, "files": None, "seconds": reference_seconds,
                            "files_per_s": None, "gbps": None, "tensor_gbps": g,
                            "check": f"reference for {len([r for r in references.values() if r[0] is not None])}"
                                     f" rows"})
        progress.advance()
    return {
        "benchmark": "dumps", "machine": machine_info(),
        "parameters": {"dump_dir": os.fspath(root), "ground_truth": None if device_vs_device else os.fspath(right),
                       "fusion_json": os.fspath(fusion_json) if fusion_json else None,
                       "device_vs_device": device_vs_device, "threads": list(thread_counts), "repeats": repeat,
                       "check_rows": check_rows},
        "unit": "GB/s of the files' bytes (dump tree + ground truth, 1 GB = 1e9 bytes), median of the timed runs",
        "files": len(files), "dumps": dumps, "ground_truth_files": len(gt_files), "file_bytes": file_bytes,
        "rows": counts, "failed_reasons": failed_reasons, "compared_bytes": compared_bytes,
        "anon_peak_extra_bytes": max(peak_extra, 0),
        "checked": bool(references) and all(r[0] is not None for r in references.values()),
        "checked_rows": sum(1 for r in references.values() if r[0] is not None), "unchecked": unchecked,
        "results": results,
    }


def format_table(result: dict) -> str:
    head = ["step", "thr", "seconds", "files/s", "GB/s", "min-max", "tensor GB/s", "tensors/s", "check"]
    rows = []
    for r in result["results"]:
        g = r.get("gbps")
        rows.append([r["step"], str(r["threads"]), f"{r['seconds']:.4f}",
                     "-" if r.get("files_per_s") is None else f"{r['files_per_s']:,.0f}",
                     gb(g["median"]) if g else "-", f"{g['min']:.2f}-{g['max']:.2f}" if g else "-",
                     gb(r.get("tensor_gbps")),
                     f"{r['tensors_per_s']:,.0f}" if "tensors_per_s" in r else "-", r.get("check", "")])
    p = result["parameters"]
    against = "itself (device vs device)" if p["device_vs_device"] else p["ground_truth"]
    rows_text = ", ".join(f"{v} {k}" for k, v in sorted(result["rows"].items())) or "no rows"
    lines = [f"dump tree {p['dump_dir']} against {against}: {result['dumps']} dumps, "
             f"{format_bytes(result['file_bytes'])} in {result['files'] + result['ground_truth_files']} files; "
             f"{machine_line(result['machine'])}",
             text_table(head, rows, left=1),
             f"rows: {rows_text}; {format_bytes(result['compared_bytes'])} of tensors compared per run; "
             f"extra anonymous memory at peak {format_bytes(result['anon_peak_extra_bytes'])}"]
    for reason, n in result["unchecked"].items():
        lines.append(f"not checked: {n} row(s): {reason}")
    if not result["rows"].get("compared"):
        lines.append("warning: no tensor was compared, so the compare figures time pairing and opening only")
    if result["rows"].get("failed"):
        lines.append("note: failed rows are not compared, so they are not in the figures; most common reasons:")
        for reason, n in sorted(result["failed_reasons"].items(), key=lambda kv: -kv[1])[:3]:
            lines.append(f"  {n} row(s): {reason}")
    return "\n".join(lines)

