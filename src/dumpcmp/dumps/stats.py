"""Statistics dumps: the CSV files a runtime writes instead of the tensors (acl.json ``"dump_data": "stats"``).

    >>> from dumpcmp.dumps.stats import read_stats
    >>> f = read_stats("dump/20240101120000/0/resnet50/1/0/statistic.csv")
    >>> [(r.op_name, r.kind, r.slot, r.max, r.l2norm) for r in f.records]

One record per tensor (an input or output slot of one op execution). Columns are found by their header names, not
their positions, and every column set the public sources show is read (docs/formats.md, "Statistics dumps"): the
runtime's ``Op Type, Op Name, Task ID, Stream ID, Timestamp, IO, Slot, Data Size, Data Type, [Format,] Shape,
Max Value, Min Value, Avg Value, L2Norm Value`` with the optional counts (``Count, NaN Count, Negative Inf Count,
Positive Inf Count, Zero Count, Negative Zero Count, Positive Zero Count``), and the ATB probe's ``Op Name, Op Type,
Input/Output, Index, Dtype, Format, Shape, Max, Min, Mean, Norm``. Header names are matched ignoring case, spaces,
``_``, ``-`` and ``/``. A value is a number, ``nan``, ``inf``, ``-inf``, ``True``/``False`` (a bool tensor's
max and min), or empty / ``N/A`` / ``null`` (not captured: None). A row that cannot be read raises
`dumpcmp.errors.DumpError` naming the file, the line and what is wrong.
"""

from __future__ import annotations

import csv
import io
import os
import re
import stat
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from dumpcmp.errors import DumpError

__all__ = ["STATS_FILE", "STAT_FIELDS", "COUNT_FIELDS", "WRITTEN_COLUMNS", "StatsFile", "StatsRecord",
           "is_stats_file_name", "read_stats", "stats_csv_text", "stats_record"]

STATS_FILE = "statistic.csv"
"""The name the runtime gives a statistics dump (one per dump folder)."""

STAT_FIELDS = ("max", "min", "mean", "l2norm")
"""The statistics a record can carry, in the order the tables show them."""
COUNT_FIELDS = ("count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count", "neg_zero_count",
                "pos_zero_count")
"""The element counts a record can carry (None when the file has no such column)."""

# normalised header name -> record field
_ALIASES = {
    "optype": "op_type", "opname": "op_name", "taskid": "task_id", "streamid": "stream_id",
    "timestamp": "timestamp", "io": "kind", "inputoutput": "kind", "slot": "slot", "index": "slot",
    "datasize": "data_size", "datatype": "data_type", "dtype": "data_type", "format": "format", "shape": "shape",
    "maxvalue": "max", "max": "max", "minvalue": "min", "min": "min", "avgvalue": "mean", "meanvalue": "mean",
    "mean": "mean", "avg": "mean", "l2normvalue": "l2norm", "l2norm": "l2norm", "norm": "l2norm",
    "count": "count", "nancount": "nan_count", "negativeinfcount": "neg_inf_count",
    "positiveinfcount": "pos_inf_count", "zerocount": "zero_count", "negativezerocount": "neg_zero_count",
    "positivezerocount": "pos_zero_count",
    # the ATB probe's bookkeeping columns
    "deviceandpid": "device_pid", "executioncount": "execution", "opid": "op_id", "tensorpath": "tensor_path",
}
_INT_FIELDS = ("task_id", "stream_id", "timestamp", "slot", "data_size") + COUNT_FIELDS
_TEXT_FIELDS = ("op_type", "data_type", "format", "device_pid", "execution", "op_id", "tensor_path")
_REQUIRED = ("op_name", "kind", "slot")
_NOT_CAPTURED = frozenset({"", "n/a", "na", "null", "none", "-"})
_NORMALISE = re.compile(r"[\s_\-/]+")
_SHAPE_SEPARATORS = re.compile(r"[,x×*\s]+")


def is_stats_file_name(name: str) -> bool:
    """True for ``statistic.csv`` and names ending in it (``..._statistic.csv``), any case."""
    if name[-4:].lower() != ".csv":  # every file of a scan passes here: the whole name lowered only for a CSV
        return False
    lower = name.lower()
    return lower == STATS_FILE or (lower.endswith(STATS_FILE) and lower[-len(STATS_FILE) - 1] in "._-")


@dataclass(frozen=True, slots=True)
class StatsRecord:
    """One tensor's statistics: one row of a statistics file. Fields the file has no column for are None."""

    path: str
    line: int
    op_name: str
    kind: str
    """'input' or 'output'."""
    slot: int
    op_type: str | None = None
    task_id: int | None = None
    stream_id: int | None = None
    timestamp: int | None = None
    data_size: int | None = None
    data_type: str | None = None
    format: str | None = None
    shape: tuple[int, ...] | None = None
    max: float | None = None
    min: float | None = None
    mean: float | None = None
    l2norm: float | None = None
    count: int | None = None
    nan_count: int | None = None
    neg_inf_count: int | None = None
    pos_inf_count: int | None = None
    zero_count: int | None = None
    neg_zero_count: int | None = None
    pos_zero_count: int | None = None
    execution: str | None = None
    """The ATB probe's execution round, when the file has it."""

    @property
    def tensor_index(self) -> str:
        """``{op_name}:{kind}:{slot}``, as the tensor compare names a tensor."""
        return f"{self.op_name}:{self.kind}:{self.slot}"

    def order(self) -> tuple[Any, ...]:
        """Execution order: timestamp, task id, then the file's own order."""
        return (-1 if self.timestamp is None else self.timestamp, -1 if self.task_id is None else self.task_id,
                self.path, self.line)


@dataclass
class StatsFile:
    """A statistics file read whole: its columns (record fields, in header order) and its records in file order."""

    path: str
    columns: list[str] = field(default_factory=list)
    records: list[StatsRecord] = field(default_factory=list)

    def __iter__(self) -> Iterator[StatsRecord]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    @property
    def op_names(self) -> list[str]:
        """The ops the file has records of, in first-seen order."""
        return list(dict.fromkeys(r.op_name for r in self.records))


def _header(path: str, row: list[str]) -> dict[int, str]:
    columns: dict[int, str] = {}
    seen: dict[str, int] = {}
    for i, name in enumerate(row):
        key = _ALIASES.get(_NORMALISE.sub("", name.strip().lower()))
        if key is None:
            continue  # a column this reader does not use
        if key in seen:
            raise DumpError(f"{path}: line 1: columns {seen[key] + 1} and {i + 1} are both {key!r} "
                            f"({row[seen[key]]!r}, {name!r})")
        seen[key] = i
        columns[i] = key
    missing = [k for k in _REQUIRED if k not in seen]
    if missing or not any(k in seen for k in STAT_FIELDS):
        want = ", ".join(missing) if missing else "a statistic (Max/Min/Avg/L2Norm Value)"
        raise DumpError(f"{path}: line 1: not a statistics file header (no column for {want}): "
                        f"{','.join(row)[:200]!r}")
    return columns


def _float(text: str) -> float | None:
    t = text.strip()
    low = t.lower()
    if low in _NOT_CAPTURED:
        return None
    if low == "true":
        return 1.0
    if low == "false":
        return 0.0
    try:
        return float(t)  # nan, inf, -inf, +inf, 1e-3 too
    except ValueError:
        raise ValueError("not a number") from None


def _int(text: str) -> int | None:
    t = text.strip()
    if t.lower() in _NOT_CAPTURED:
        return None
    if not (t.isascii() and t.isdigit()):
        raise ValueError("not a non-negative integer")
    return int(t)


def _shape(text: str) -> tuple[int, ...] | None:
    t = text.strip()
    if t.lower() in _NOT_CAPTURED:
        return None
    if t[:1] in "([" and t[-1:] in ")]":
        t = t[1:-1]
    dims = [d for d in _SHAPE_SEPARATORS.split(t) if d]
    if not all(d.isascii() and d.isdigit() for d in dims):
        raise ValueError("not a shape like (2,3), [2, 3] or 2x3")
    return tuple(int(d) for d in dims)


def _kind(text: str) -> str:
    t = text.strip().lower()
    if t not in ("input", "output"):
        raise ValueError("neither input nor output")
    return t


def _record(path: str, line: int, columns: dict[int, str], row: list[str], width: int) -> StatsRecord:
    if len(row) > width and any(c.strip() for c in row[width:]):
        raise DumpError(f"{path}: line {line}: {len(row)} fields, the header has {width}")
    if len(row) < width:
        raise DumpError(f"{path}: line {line}: {len(row)} fields, the header has {width}")
    values: dict[str, Any] = {}
    for i, key in columns.items():
        cell = row[i]
        try:
            if key in _INT_FIELDS:
                values[key] = _int(cell)
            elif key in STAT_FIELDS:
                values[key] = _float(cell)
            elif key == "shape":
                values[key] = _shape(cell)
            elif key == "kind":
                values[key] = _kind(cell)
            elif key == "op_name":
                if not cell.strip():
                    raise ValueError("empty")
                values[key] = cell.strip()
            elif key in _TEXT_FIELDS:
                values[key] = cell.strip() or None
        except ValueError as error:
            raise DumpError(f"{path}: line {line}: column {i + 1} ({key}): {cell[:80]!r} is {error}") from None
    if values.get("slot") is None:
        raise DumpError(f"{path}: line {line}: no slot (tensor index)")
    for key in ("device_pid", "op_id", "tensor_path"):
        values.pop(key, None)
    return StatsRecord(path=path, line=line, **values)


def read_stats(path: str | os.PathLike[str]) -> StatsFile:
    """Every record of a statistics file, in file order. DumpError naming the file (and line) when it cannot be
    read: missing, not UTF-8, empty (no header line), a header without the needed columns, or a bad row."""
    text_path = os.fspath(path)
    out = StatsFile(text_path)
    line = 0
    try:
        # opened without blocking and checked to be a regular file: a FIFO or device named statistic.csv never hangs
        fd = os.open(text_path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise DumpError(f"{text_path}: not a regular file")
        with open(fd, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle, strict=True)
            columns: dict[int, str] | None = None
            width = 0
            for row in reader:
                line = reader.line_num
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # a blank line
                if columns is None:
                    columns = _header(text_path, row)
                    width = len(row)
                    while width > 0 and not row[width - 1].strip() and (width - 1) not in columns:
                        width -= 1  # a trailing comma after the header's last name
                    out.columns = [columns[i] for i in sorted(columns)]
                    continue
                out.records.append(_record(text_path, line, columns, row, width))
            if columns is None:
                raise DumpError(f"{text_path}: empty statistics file (no header line)")
    except csv.Error as error:
        raise DumpError(f"{text_path}: line {line + 1}: not valid CSV ({error})") from None
    except UnicodeDecodeError as error:
        raise DumpError(f"{text_path}: after line {line}: not UTF-8 text (byte {error.start} of a read block)") \
            from None
    except OSError as error:
        raise DumpError(f"{text_path}: cannot read: {error.strerror or error}") from None
    return out



# --- writing: what `dumpcmp simulate` (dump_data stats) and `dumpcmp golden --stats` write -----------------------

WRITTEN_COLUMNS = (
    ("Op Type", "op_type"), ("Op Name", "op_name"), ("Task ID", "task_id"), ("Stream ID", "stream_id"),
    ("Timestamp", "timestamp"), ("IO", "kind"), ("Slot", "slot"), ("Data Size", "data_size"),
    ("Data Type", "data_type"), ("Format", "format"), ("Shape", "shape"), ("Max Value", "max"),
    ("Min Value", "min"), ("Avg Value", "mean"), ("L2Norm Value", "l2norm"), ("Count", "count"),
    ("NaN Count", "nan_count"), ("Negative Inf Count", "neg_inf_count"), ("Positive Inf Count", "pos_inf_count"),
    ("Zero Count", "zero_count"),
)
"""The header dumpcmp writes (the runtime's columns, docs/formats.md "Statistics columns", with Format and the
counts), as (header name, record field)."""

_CORE_KEYS = ("count", "max", "min", "mean", "l2norm", "nan_count", "pos_inf_count", "neg_inf_count", "zero_count")


def stats_record(stats: Any, **fields: Any) -> StatsRecord:
    """A record of one tensor from the core's statistics (a dict of `_core.compare.stats_many`) and the record's
    other fields (op_name, kind, slot, ...)."""
    fields.setdefault("path", "")
    fields.setdefault("line", 0)
    return StatsRecord(**fields, **{k: stats[k] for k in _CORE_KEYS})


def _written(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)  # nan, inf, -inf, or the shortest text that reads back to the same float64
    if isinstance(value, tuple):
        return "(" + ",".join(str(d) for d in value) + ")"
    return str(value)


def stats_csv_text(records: Iterable[StatsRecord]) -> str:
    """A statistics file of `records`, in `WRITTEN_COLUMNS` (what `read_stats` reads back to equal values)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([name for name, _ in WRITTEN_COLUMNS])
    for r in records:
        writer.writerow([_written(getattr(r, key)) for _, key in WRITTEN_COLUMNS])
    return buf.getvalue()
