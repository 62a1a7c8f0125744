"""The original tool's `msaccucmp overflow`: read the OpDebug files of a `"dump_debug": "on"` run, find each
overflowing operator's dump by its task and stream ids (and FFTS+ context and thread ids when the record sets
them), and summarise the first N, oldest first: the overflow status line(s), the OpDebug file's timestamp, the op
type and name, and for each input then output its format, shape, dtype, max, min and mean (docs/overflow.md).

The text equals the original's overflow_summary_{time}.txt; dumpcmp does not also write the .npy and .json files
the original leaves in its output folder on the way.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from dumpcmp.dumps.dump import open_dump
from dumpcmp.dumps.naming import DeviceDumpName, file_name_of, parse_device_dump_name, read_mapping
from dumpcmp.dumps.opdebug import INVALID_ID, OPDEBUG_NAME, OPDEBUG_TYPE, Overflow, read_opdebug
from dumpcmp.errors import DumpError, NamingError
from dumpcmp.support.lazy_numpy import np

__all__ = ["MAX_DEPTH", "OverflowSummary", "analyse_overflow", "find_overflow_files", "numpy_text",
           "summary_file_name", "tensor_summary"]

MAX_DEPTH = 30  # folders below the dump folder that are searched, as the original


@dataclass(frozen=True)
class _Found:
    path: str
    name: DeviceDumpName


@dataclass
class OverflowSummary:
    found: int  # OpDebug files in the folder
    shown: int
    entries: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(entry + "\n" for entry in self.entries)

    def console(self) -> list[str]:
        if not self.found:
            return ["[Overflow] Find [0] overflow node!"]
        return [f"[Overflow] Find [{self.found}] overflow ops. Will show the top {self.shown}.",
                "[Overflow] The overflow analyse result:", " " + self.text()]


def summary_file_name(now: float | None = None) -> str:
    return "overflow_summary_%s.txt" % time.strftime("%Y%m%d%H%M%S", time.localtime(now))


def find_overflow_files(folder: str) -> tuple[list[_Found], list[_Found]]:
    """(OpDebug files, other device dumps) under `folder`, names resolved through each folder's mapping.csv."""
    debug, dumps = [], []
    top = folder.rstrip(os.sep).count(os.sep)
    for dir_path, dirs, files in os.walk(folder):
        if dir_path.count(os.sep) - top >= MAX_DEPTH:
            dirs[:] = []
        mapping = read_mapping(dir_path, problems=[]) if "mapping.csv" in files else {}
        for file in sorted(files):
            try:
                name = parse_device_dump_name(file_name_of(file, mapping))
            except NamingError:
                continue
            found = _Found(os.path.join(dir_path, file), name)
            if name.op_type == OPDEBUG_TYPE and name.op_name == OPDEBUG_NAME:
                debug.append(found)
            elif name.op_type != OPDEBUG_TYPE:
                dumps.append(found)
    return debug, dumps


def _matches(name: DeviceDumpName, overflow: Overflow) -> bool:
    if name.task_id != overflow.task_id or (name.stream_id or 0) != overflow.stream_id:
        return False
    context = name.ffts.context_id if name.ffts else None
    thread = name.ffts.thread_id if name.ffts else None
    # an id of 0 or 65535 (not set) is not compared, as the original
    if overflow.context_id not in (0, INVALID_ID) and context != overflow.context_id:
        return False
    if overflow.thread_id not in (0, INVALID_ID) and thread != overflow.thread_id:
        return False
    return True


def numpy_text(value: object) -> str:
    """`str(value)` of a NumPy scalar as NumPy 1.26 writes it, whichever NumPy runs: the original's files come
    from that version, and NumPy 2 writes float16 differently (65504 as 6.55e+04, not 65500.0). Positional between
    1e-4 and 1e16 (and 0), else scientific, each with the fewest digits that read back to the same value."""
    if not isinstance(value, np.floating):
        return str(value)
    if np.isnan(value):
        return "nan"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    size = abs(float(value))
    if size == 0 or 1e-4 <= size < 1e16:
        return np.format_float_positional(value, unique=True, trim="0")
    return np.format_float_scientific(value, unique=True, trim="-")


def tensor_summary(values: np.ndarray) -> str:
    """`[Shape: (1, 16)] [Dtype: float16] [Max: ..] [Min: ..] [Mean: ..]` as the original writes them."""
    if values.size == 0:
        return "[Shape: %s] [Dtype: %s] empty tensor" % (values.shape, values.dtype)
    with np.errstate(all="ignore"):
        return "[Shape: %s] [Dtype: %s] [Max: %s] [Min: %s] [Mean: %s]" % (
            values.shape, values.dtype, numpy_text(np.max(values)), numpy_text(np.min(values)),
            numpy_text(values.mean()))


def _delimited(index: int, lines: list[str]) -> str:
    return "\n".join(["=" * 49 + f"[{index}]" + "=" * 50] + lines)


def _entry(index: int, debug: _Found, dumps: list[_Found], warnings: list[str]) -> str:
    records = read_opdebug(debug.path)
    if len(records) != 1:
        raise DumpError(f"{debug.path}: OpDebug file with {len(records)} outputs; one overflow record expected")
    record = records[0]
    warnings.extend(record.warnings)
    lines = [f" [{o.kind}][TaskId:{o.task_id}][StreamId:{o.stream_id}][Status:{o.status}]" for o in record.overflows]
    lines.append(f" [timestamp:{debug.name.timestamp}]")
    overflow = record.overflows[-1]
    folder = os.path.dirname(debug.path)
    candidates = [d for d in dumps if d.path.startswith(folder + os.sep) and _matches(d.name, overflow)]
    if not candidates:
        warnings.append(f"[Overflow] Can't find the dump file corresponding to the debug file: "
                        f"{os.path.basename(debug.path)}")
        return _delimited(index, lines)
    found = min(candidates, key=lambda d: d.name.timestamp)
    try:
        dump = open_dump(found.path)
    except DumpError as error:  # one unreadable dump does not stop the summary of the others
        warnings.append(f"[Overflow] {error}")
        return _delimited(index, lines)
    base = os.path.basename(found.path)
    for tensor in dump.inputs + dump.outputs:
        problem = tensor.problem()
        lines.append(f" {base}.{tensor.kind}.{tensor.index}.npy")
        if problem:
            lines.append(f" -[Format: {tensor.format}] unreadable: {problem}")
            warnings.append(f"{found.path}: {tensor.name}: {problem}")
            continue
        # as the .npy the original summarises: a 0-d tensor is saved with shape (1,) (ascontiguousarray's rule)
        lines.append(f" -[Format: {tensor.format}] {tensor_summary(np.ascontiguousarray(tensor.array()))}")
    return _delimited(index, [f"[{found.name.op_type}] {dump.op_name}"] + lines)


def analyse_overflow(folder: str | os.PathLike[str], top: int = 1) -> OverflowSummary:
    """Summarise the first `top` overflowing operators of a dump folder (oldest OpDebug file first)."""
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise DumpError(f"{folder}: not a folder of dumps")
    debug, dumps = find_overflow_files(folder)
    debug.sort(key=lambda d: d.name.timestamp)
    summary = OverflowSummary(len(debug), min(top, len(debug)))
    for i, item in enumerate(debug[:summary.shown]):
        summary.entries.append(_entry(i + 1, item, dumps, summary.warnings))
    return summary
