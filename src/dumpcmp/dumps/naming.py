"""File names of Ascend dumps, framework dumps and ground truth: parse, build, sanitise, hash.

Schemes (`classify(name)` returns which one, or None):

=============  ============================================================================================
``device``     NPU dump. The fields are split at ``.``; their number tells the layout:

               - 4: ``{op_type}.{op_name}.{task_id}.{timestamp}`` (offline model, documented form)
               - 5: ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` (what current runtimes write:
                 the AICPU dump task builds exactly this, and msaccucmp documents it as
                 ``op_type.op_name.task_id(.stream_id).timestamp``; the dump number then lives in the
                 ``{data_index}`` folder)
               - 6: ``{op_type}.{op_name}.{dump_number}.{task_id}.{stream_id}.{timestamp}`` (the spec's
                 "newer runtimes" form)
               - any of these followed by the FFTS+ suffix ``.{task_type}.{context_id}.{thread_id}.{device_id}``
                 (8, 9 or 10 fields). The spec writes the task type as ``FFTSPLUS``; msaccucmp's own example
                 (``...1670205071724946.4.487.0.0``) carries its number, 4 (0 AICORE, 1 AICPU, 2 DEBUG,
                 3 HCCL, 4 FFTSPLUS). Both spellings are accepted and kept as written.
``pb``         ``{op_name}.{output_index}.{timestamp}.pb``: Caffe (not quantized) or TensorFlow dump
``quant``      ``{op_name}.{output_index}.{timestamp}.quant``: quantized Caffe dump
``npy``        ``{op_name}.{output_index}.{timestamp}.npy``: NumPy ground truth (Caffe/TF/ONNX); key
               ``{op_name}.{output_index}``
``converted``  ``{original_file_name}.{output|input}.{index}.npy``, or with the shape
               ``{original_file_name}.{output|input}.{index}.{1x3x224x224}.npy``: an NPU dump converted to NumPy
=============  ============================================================================================

Op types and names are the runtime's sanitised names (``sanitize``: ``.``, ``/``, ``\\`` and spaces become ``_``).
Parsing is strict about structure (field counts, digits) and lenient about characters: any character but the
``.`` separator and ``/`` is accepted in op names, since files renamed by hand or written by other tools exist;
building always sanitises. Timestamps are microseconds since the epoch, 16 digits for any date from 2001 to 2286;
parsing accepts any run of digits (msaccucmp does too), `is_timestamp` checks the 16 digits.

Over-long names. A file name of 255 characters (or UTF-8 bytes) or more cannot be created. What Ascend tools do:

- In a dump folder, a file whose name is all digits is a hashed name; ``mapping.csv`` in the same folder
  resolves it: one row per file, two columns ``{hashed name},{original file name}``, no header (msaccucmp reads
  it with the csv module, skips rows that do not have two columns, and ignores ``mapping.csv`` and
  ``convert_failed_file_list.txt`` when listing dumps).
- For its single-operator result files msaccucmp writes ``simple_op_mapping.csv`` in the output folder, rows
  ``{new name},{old name}`` appended one by one, the new name being a UUID3 hex plus the kept suffix.

dumpcmp reads ``mapping.csv`` the same way (`read_mapping`, `resolve_hashed`). For its own outputs
`safe_file_name` replaces a name that is too long by a digits-only hash (so that msaccucmp's dump reader, which
requires ``isdigit()``, also recognises it when the file is a dump) followed by the caller's suffix, and appends
the row ``{hash},{name}`` to ``mapping.csv`` in that folder (same two-column format, so `read_mapping` resolves
both). The hash is the first 8 bytes of the name's SHA-256 as a 20-digit decimal: stable across runs, so writing
the same result twice reuses the same file and row.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Mapping, TypeVar, Union

from dumpcmp.errors import NamingError
from dumpcmp.support.native import core

__all__ = [
    "CONVERTED", "DEVICE", "MAPPING_FILE", "MAX_FILE_NAME", "NPY", "PB", "QUANT", "SCHEMES", "TASK_TYPES",
    "TIMESTAMP_DIGITS", "ConvertedName", "DeviceDumpName", "FftsSuffix", "FrameworkDumpName", "ParsedName",
    "build_bin_name", "build_converted_name", "build_device_dump_name", "build_msnpy_name",
    "build_framework_dump_name", "classify",
    "file_name_of", "ground_truth_key", "hashed_name", "is_hashed_name", "is_sanitized", "is_timestamp",
    "mapping_row", "newest_by_key", "parse_converted_name", "parse_device_dump_name", "parse_framework_dump_name",
    "parse_name", "planned_file_name", "read_mapping", "resolve_hashed", "run_path", "run_suffix", "safe_file_name",
    "sanitize", "timestamp_now", "too_long",
]

DEVICE, PB, QUANT, NPY, CONVERTED = "device", "pb", "quant", "npy", "converted"
SCHEMES = (DEVICE, PB, QUANT, NPY, CONVERTED)

#: Digits of a timestamp in microseconds (from 2001-09-09 to 2286-11-20).
TIMESTAMP_DIGITS = 16
#: Names this long (characters or UTF-8 bytes) or longer are replaced by a hash; 255 is the Linux NAME_MAX.
MAX_FILE_NAME = 255
#: The mapping table of hashed names, in the folder that holds the hashed files.
MAPPING_FILE = "mapping.csv"
#: Files of a dump folder that are not dumps and are not reported as skipped.
#: Files the tools write beside the dumps (not dumps, never reported as skipped): the hash mapping, convert's
#: failure list, `dumpcmp golden`'s index and run record, `dumpcmp simulate`'s graph JSON (its default name).
BOOKKEEPING_FILES = frozenset({MAPPING_FILE, "convert_failed_file_list.txt", "golden_index.csv", "golden_run.json",
                               "model.json"})
#: Task type numbers of the FFTS+ suffix (msaccucmp's table).
TASK_TYPES = {"0": "AICORE", "1": "AICPU", "2": "DEBUG", "3": "HCCL", "4": "FFTSPLUS"}

_SPEC_CHARS = re.compile(r"[A-Za-z0-9_-]+\Z")
_CONVERTED = re.compile(r"(?P<original>.+)\.(?P<kind>output|input)\.(?P<index>[0-9]+)"
                        r"(?:\.(?P<shape>[0-9]+(?:x[0-9]+)*))?\.npy\Z")
_FRAMEWORK_EXTENSIONS = ("pb", "quant", "npy")

_DEVICE_EXPECTED = ("{op_type}.{op_name}.{task_id}.{timestamp}, {op_type}.{op_name}.{task_id}.{stream_id}."
                    "{timestamp} or {op_type}.{op_name}.{dump_number}.{task_id}.{stream_id}.{timestamp}, "
                    "optionally followed by .{task_type}.{context_id}.{thread_id}.{device_id} (FFTS+)")
_FRAMEWORK_EXPECTED = "{op_name}.{output_index}.{timestamp}.pb|.quant|.npy"
_CONVERTED_EXPECTED = "{original_file_name}.output|input.{index}[.{shape like 1x3x224x224}].npy"


def sanitize(name: str) -> str:
    """The runtime's rule for model, op type and op names in paths: ``.``, ``/``, ``\\`` and spaces become ``_``."""
    return name.replace(".", "_").replace("/", "_").replace("\\", "_").replace(" ", "_")  # translate: 5x slower


def is_sanitized(name: str) -> bool:
    """True if `name` uses only ``[A-Za-z0-9_-]``, as the spec says op types and names in file names do."""
    return bool(_SPEC_CHARS.match(name))


def is_timestamp(text: str) -> bool:
    """True for a 16-digit timestamp (microseconds)."""
    return len(text) == TIMESTAMP_DIGITS and text.isascii() and text.isdigit()


def timestamp_now() -> int:
    """Now, in microseconds since the epoch: the device's timestamp unit."""
    return time.time_ns() // 1000


_RUN_FIELDS = {"time": "t", "device": "dev", "model": "", "model_id": "id", "iteration": "it"}


def run_suffix(run: str, runs: Iterable[str] = ()) -> str:
    """A short, file-name-safe tag of one run among `runs` (the runs one command writes a file each for): only the
    fields that differ between them, each as a short token (`time 2026...` -> `t2026...`, `device 0` -> `dev0`,
    `model resnet` -> `resnet`, `model_id 1` -> `id1`, `iteration 0` -> `it0`), joined by `_`. Without `runs`
    (or when no field tells them apart) every field of the run; a run that is not `key value / ...` (a folder) is
    kept whole. Characters other than letters, digits, `-` and `_` become `_`; when that makes two runs' tags
    equal (`model a/b`, `model a_b`), each gets its place among `runs` appended (`a_b_1`, `a_b_2`)."""
    runs = list(runs)
    tag = _run_tag(run, runs)
    if run in runs and sum(1 for r in dict.fromkeys(runs) if _run_tag(r, runs) == tag) > 1:
        tag += f"_{list(dict.fromkeys(runs)).index(run) + 1}"
    return tag


def _run_tag(run: str, runs: list[str]) -> str:
    def fields(text: str) -> list[tuple[str, str]] | None:
        out = []
        for part in text.split(" / "):
            key, _, value = part.partition(" ")
            if key not in _RUN_FIELDS or not value:
                return None
            out.append((key, value))
        return out

    def safe(text: str) -> str:
        return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)

    mine = fields(run)
    if mine is None:
        return safe(run)
    others = [f for f in (fields(r) for r in runs) if f is not None]
    differ = {key for key, value in mine if any(dict(f).get(key) != value for f in others)}
    keep = [(key, value) for key, value in mine if key in differ] or mine
    return "_".join(safe(_RUN_FIELDS[key] + value) for key, value in keep)


def run_path(path: str | os.PathLike[str], run: str, runs: Iterable[str] = ()) -> Path:
    """The file of one run when a command writes one file a run: `{stem}_{suffix}{suffix of path}` beside `path`,
    the user's name kept and `run_suffix(run, runs)` added (`-o fp16.csv` on iterations 0 and 1: `fp16_it0.csv`,
    `fp16_it1.csv`)."""
    path = Path(path)
    return path.with_name(f"{path.stem}_{run_suffix(run, list(runs))}{path.suffix}")


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _check_part(value: str, what: str) -> None:
    # '.' would shift every field after it and '/' cannot be in a file name at all
    if not value or "." in value or "/" in value:
        raise NamingError(f"{what} {value!r} cannot be part of a file name: it must be non-empty and hold no "
                          "'.' or '/' (sanitize() it first)")


def _check_number(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise NamingError(f"{what} must be a non-negative integer, not {value!r}")


@dataclass(frozen=True, slots=True)
class FftsSuffix:
    """The FFTS+ tail of a device dump name: ``.{task_type}.{context_id}.{thread_id}.{device_id}``.

    `task_type` is kept as written: a number (``4``) or a name (``FFTSPLUS``).
    """

    task_type: str
    context_id: int
    thread_id: int
    device_id: int

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]+", self.task_type):
            raise NamingError(f"FFTS+ task type {self.task_type!r} must be a number or a name like FFTSPLUS")
        for field in ("context_id", "thread_id", "device_id"):
            _check_number(getattr(self, field), field)

    @property
    def task_type_name(self) -> str:
        """``FFTSPLUS`` for both ``4`` and ``FFTSPLUS``; an unknown number stays as it is."""
        return TASK_TYPES.get(self.task_type, self.task_type)

    def build(self) -> str:
        return f"{self.task_type}.{self.context_id}.{self.thread_id}.{self.device_id}"


@dataclass(frozen=True, slots=True)
class DeviceDumpName:
    """A parsed NPU dump file name. `stream_id` is None in the 4-field form, `dump_number` is set only in the
    6-field form, `ffts` only with the FFTS+ suffix. `build()` (or `str()`) gives the name back."""

    op_type: str
    op_name: str
    task_id: int
    timestamp: int
    stream_id: int | None = None
    dump_number: int | None = None
    ffts: FftsSuffix | None = None

    def __post_init__(self) -> None:
        _check_part(self.op_type, "op type")
        _check_part(self.op_name, "op name")
        _check_number(self.task_id, "task_id")
        _check_number(self.timestamp, "timestamp")
        if self.stream_id is not None:
            _check_number(self.stream_id, "stream_id")
        if self.dump_number is not None:
            _check_number(self.dump_number, "dump_number")
            if self.stream_id is None:
                raise NamingError("a device dump name with a dump_number also has a stream_id (6-field form)")

    scheme = DEVICE

    @property
    def key(self) -> str:
        """What dumps of one operator share: the op name."""
        return self.op_name

    @property
    def fields(self) -> int:
        """4, 5 or 6: the layout of the name without the FFTS+ suffix."""
        return 4 if self.stream_id is None else 5 if self.dump_number is None else 6

    def build(self) -> str:
        if self.stream_id is None:
            name = f"{self.op_type}.{self.op_name}.{self.task_id}.{self.timestamp}"
        elif self.dump_number is None:
            name = f"{self.op_type}.{self.op_name}.{self.task_id}.{self.stream_id}.{self.timestamp}"
        else:
            name = (f"{self.op_type}.{self.op_name}.{self.dump_number}.{self.task_id}.{self.stream_id}."
                    f"{self.timestamp}")
        return name if self.ffts is None else f"{name}.{self.ffts.build()}"

    __str__ = build


@dataclass(frozen=True, slots=True)
class FrameworkDumpName:
    """``{op_name}.{output_index}.{timestamp}.{extension}``: a Caffe/TensorFlow dump (``pb``, ``quant``) or NumPy
    ground truth (``npy``)."""

    op_name: str
    output_index: int
    timestamp: int
    extension: str = NPY

    def __post_init__(self) -> None:
        _check_part(self.op_name, "op name")
        _check_number(self.output_index, "output_index")
        _check_number(self.timestamp, "timestamp")
        if self.extension not in _FRAMEWORK_EXTENSIONS:
            raise NamingError(f"extension must be one of {', '.join(_FRAMEWORK_EXTENSIONS)}, not {self.extension!r}")

    @property
    def scheme(self) -> str:
        return self.extension

    @property
    def key(self) -> str:
        """``{op_name}.{output_index}``: how the ground truth of one output is looked up."""
        return f"{self.op_name}.{self.output_index}"

    def build(self) -> str:
        return f"{self.op_name}.{self.output_index}.{self.timestamp}.{self.extension}"

    __str__ = build


@dataclass(frozen=True, slots=True)
class ConvertedName:
    """``{original}.{kind}.{index}[.{shape}].npy``: one tensor of an NPU dump converted to NumPy.
    `kind` is ``input`` or ``output``; `shape` is None when the name has none."""

    original: str
    kind: str
    index: int
    shape: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.original or "/" in self.original:
            raise NamingError(f"original file name {self.original!r} must be non-empty and hold no '/'")
        if self.kind not in ("input", "output"):
            raise NamingError(f"tensor kind must be 'input' or 'output', not {self.kind!r}")
        _check_number(self.index, "index")
        if self.shape is not None:
            if len(self.shape) == 0:
                raise NamingError("a shape in a converted file name has at least one dimension")
            for d in self.shape:
                _check_number(d, "shape dimension")

    scheme = CONVERTED

    @property
    def device(self) -> DeviceDumpName | None:
        """The original name parsed as a device dump name, or None if it is not one."""
        try:
            return parse_device_dump_name(self.original)
        except NamingError:
            return None

    @property
    def key(self) -> str:
        """``{original}.{kind}.{index}``: the tensor this file holds."""
        return f"{self.original}.{self.kind}.{self.index}"

    def build(self) -> str:
        shape = "" if self.shape is None else "." + "x".join(str(d) for d in self.shape)
        return f"{self.original}.{self.kind}.{self.index}{shape}.npy"

    __str__ = build


ParsedName = Union[DeviceDumpName, FrameworkDumpName, ConvertedName]


def _fail(name: str, what: str, expected: str) -> NamingError:
    return NamingError(f"file name {name!r} is not {what}: expected {expected}")


def _parse(base: str) -> DeviceDumpName | FrameworkDumpName | None:
    # the device dump and framework rules live in C++ only (the scan's folder listing parses with them too)
    return core.scan.parse_name(base, DeviceDumpName, FftsSuffix, FrameworkDumpName)


def parse_device_dump_name(name: str) -> DeviceDumpName:
    """Parse an NPU dump file name (4, 5 or 6 fields, optional FFTS+ suffix); NamingError if it is none."""
    base = os.path.basename(name)
    parsed = _parse(base)
    if parsed is None or parsed.scheme != DEVICE:
        raise _fail(base, "an NPU dump name", _DEVICE_EXPECTED)
    return parsed


def parse_framework_dump_name(name: str, extensions: Iterable[str] = _FRAMEWORK_EXTENSIONS) -> FrameworkDumpName:
    """Parse ``{op_name}.{output_index}.{timestamp}.pb|quant|npy`` (restricted to `extensions`)."""
    base = os.path.basename(name)
    extensions = tuple(extensions)
    parsed = _parse(base)
    if parsed is None or parsed.scheme == DEVICE or parsed.extension not in extensions:
        raise _fail(base, "a framework dump or ground-truth name",
                    "{op_name}.{output_index}.{timestamp}." + "|.".join(extensions))
    return parsed


def parse_converted_name(name: str) -> ConvertedName:
    """Parse ``{original}.output|input.{index}[.{shape}].npy``."""
    base = os.path.basename(name)
    m = _CONVERTED.match(base)
    if m is None:
        raise _fail(base, "a converted NPU dump name", _CONVERTED_EXPECTED)
    shape = m.group("shape")
    return ConvertedName(m.group("original"), m.group("kind"), int(m.group("index")),
                         None if shape is None else tuple(int(d) for d in shape.split("x")))


def classify(name: str) -> str | None:
    """The scheme a file name fits (`DEVICE`, `PB`, `QUANT`, `NPY`, `CONVERTED`), or None."""
    try:
        return parse_name(name).scheme
    except NamingError:
        return None


def parse_name(name: str) -> ParsedName:
    """Parse a file name of any scheme; NamingError naming the file and every scheme it does not fit.

    The device dump and framework rules are the C++ core's; a converted name (``.npy``) fits neither of them.
    """
    base = name.rpartition("/")[2] if "/" in name else name
    parsed = _parse(base)
    if parsed is not None:
        return parsed
    if base.endswith(".npy"):
        if _CONVERTED.match(base):
            return parse_converted_name(base)
        raise NamingError(f"file name {base!r} fits no naming scheme: expected {_FRAMEWORK_EXPECTED} "
                          f"(ground truth) or {_CONVERTED_EXPECTED}")
    raise NamingError(f"file name {base!r} fits no naming scheme: expected an NPU dump name "
                      f"({_DEVICE_EXPECTED}) or {_FRAMEWORK_EXPECTED}")


def build_device_dump_name(op_type: str, op_name: str, task_id: int, timestamp: int, *,
                           stream_id: int | None = None, dump_number: int | None = None,
                           ffts: FftsSuffix | None = None) -> str:
    """The file name the device gives a dump; op type and name are sanitised first."""
    return DeviceDumpName(sanitize(op_type), sanitize(op_name), task_id, timestamp, stream_id, dump_number,
                          ffts).build()


def build_framework_dump_name(op_name: str, output_index: int, timestamp: int, extension: str = NPY) -> str:
    """``{op_name}.{output_index}.{timestamp}.{extension}`` with the op name sanitised."""
    return FrameworkDumpName(sanitize(op_name), output_index, timestamp, extension).build()


def build_converted_name(original: str, kind: str, index: int, shape: Iterable[int] | None = None) -> str:
    """``{original}.{kind}.{index}[.{shape}].npy``; `original` is a file name (its folder is dropped)."""
    return ConvertedName(os.path.basename(original), kind, index,
                         None if shape is None else tuple(int(d) for d in shape)).build()


def build_bin_name(original: str, kind: str, index: int, shape: Iterable[int], dtype: str, fmt: str) -> str:
    """``{original}.{kind}.{index}.{1_3_224_224}.{dtype}.{format}.bin`` (the original tool's ``convert -t bin``: raw
    C-order values); `original` is a file name (its folder is dropped)."""
    dims = "_".join(str(int(d)) for d in shape)
    return f"{os.path.basename(original)}.{kind}.{int(index)}.{dims}.{dtype}.{fmt}.bin"


def build_msnpy_name(original: str, op_name: str, kind: str, index: int, fmt: str) -> str:
    """``{original}.{kind}.{index}.{format}.npy`` (the original tool's ``convert -t msnpy``); in a five-part name
    ``{op_type}.{op_name}.{task_id}.{stream_id}.{timestamp}`` the op name part becomes the last ``/`` part of the
    dump's own op name."""
    parts = os.path.basename(original).split(".")
    if len(parts) == 5 and op_name:
        parts[1] = op_name.split("/")[-1]
    return f"{'.'.join(parts)}.{kind}.{int(index)}.{fmt}.npy"


def ground_truth_key(op_name: str, output_index: int) -> str:
    """``{op_name}.{output_index}`` with the op name sanitised as ground-truth file names have it."""
    return f"{sanitize(op_name)}.{int(output_index)}"


T = TypeVar("T")


def newest_by_key(items: Iterable[T], key: Callable[[T], Hashable], timestamp: Callable[[T], int],
                  tie: Callable[[T], Any] = str) -> dict[Hashable, T]:
    """Newest wins: for each key, the item with the largest timestamp.

    Equal timestamps are settled by the largest `tie` value (the path, usually) so that the choice does not
    depend on the order the file system lists files in.
    """
    best: dict[Hashable, T] = {}
    for item in items:
        k = key(item)
        old = best.get(k)
        if old is None or (timestamp(item), tie(item)) > (timestamp(old), tie(old)):
            best[k] = item
    return best


# --- hashed names -------------------------------------------------------------------------------------------------

def is_hashed_name(name: str) -> bool:
    """True for a hashed name: digits only, or digits followed by ``.npy`` (msaccucmp's rule; dumpcmp's own
    converted files are hashed that way too). How tools name a file whose real name is too long."""
    base = os.path.basename(name)
    stem, dot, extension = base.rpartition(".")
    return _digits(base) or (dot == "." and extension == NPY and _digits(stem))


def hashed_name(name: str) -> str:
    """The digits-only stand-in dumpcmp writes for an over-long name: 20 decimal digits of its SHA-256."""
    return f"{int.from_bytes(hashlib.sha256(name.encode('utf-8')).digest()[:8], 'big'):020d}"


def too_long(name: str) -> bool:
    """True for a name the file system cannot hold (255 characters or UTF-8 bytes or more): it is written hashed."""
    return len(name) >= MAX_FILE_NAME or len(name.encode("utf-8", "surrogateescape")) >= MAX_FILE_NAME


def planned_file_name(name: str, suffix: str = "") -> str:
    """The name `safe_file_name` gives `name`, without writing its mapping row (to check for files in the way)."""
    return hashed_name(name) + suffix if too_long(name) else name


def read_mapping(path: str | os.PathLike[str], problems: list[str] | None = None) -> dict[str, str]:
    """Read a mapping file (``{hashed name},{original name}`` rows): hashed name -> original name.

    `path` is the file or the folder holding ``mapping.csv``; a missing file gives an empty mapping. A row that
    does not have two non-empty columns, or names no file (a '/' or a NUL in it), raises NamingError naming the
    file and line, or, when `problems` is a list, is described there and skipped (a scan should not lose every
    hashed name for one bad row).
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, MAPPING_FILE)
    names: dict[str, str] = {}
    try:
        handle = open(path, newline="", encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return names
    with handle:
        try:
            reader = csv.reader(handle)
            for row in reader:
                if not row:
                    continue
                if len(row) != 2 or not row[0].strip() or not row[1].strip():
                    message = (f"{path}: line {reader.line_num}: expected two columns "
                               f"'hashed name,original name', got {row!r}")
                elif any(c in cell for cell in row for c in ("/", "\0")):
                    message = f"{path}: line {reader.line_num}: {row!r} is not a file name (holds '/' or NUL)"
                else:
                    names[row[0].strip()] = row[1].strip()
                    continue
                if problems is None:
                    raise NamingError(message)
                problems.append(message)
        except csv.Error as error:
            message = f"{path}: not a valid CSV mapping file: {error}"
            if problems is None:
                raise NamingError(message) from None
            problems.append(message)
    return names


def file_name_of(path: str | os.PathLike[str], mapping: Mapping[str, str] | None = None) -> str:
    """The name a file stands for, wherever a command reads a dump's name from a path: its own name, or for a
    hashed name (`is_hashed_name`) the ``mapping.csv`` row of its folder (`mapping`: that file already read with
    `read_mapping`). A hashed name without a row (or without mapping.csv) is returned as it is."""
    path = os.fspath(path)
    base = os.path.basename(path)
    if not is_hashed_name(base):
        return base
    if mapping is None:
        folder = os.path.dirname(path) or "."
        mapping = read_mapping(os.path.join(folder, MAPPING_FILE), problems=[]) \
            if os.path.isfile(os.path.join(folder, MAPPING_FILE)) else {}
    return mapping.get(base, base)


def resolve_hashed(name: str, mapping: dict[str, str]) -> str:
    """The original name of a hashed file name, from a mapping read by `read_mapping`; NamingError if absent."""
    base = os.path.basename(name)
    original = mapping.get(base)
    if original is None:
        raise NamingError(f"file name {base!r} is a hashed name but {MAPPING_FILE} has no row for it")
    return original


def mapping_row(short: str, name: str) -> str:
    """One line of a mapping file: ``{hashed name},{original name}`` as the csv module writes it."""
    row = io.StringIO()
    csv.writer(row, lineterminator="\n").writerow([short, name])
    return row.getvalue()


def safe_file_name(name: str, folder: str | os.PathLike[str], suffix: str = "",
                   mapping_file: str = MAPPING_FILE) -> str:
    """A file name for `name` that the file system accepts, for a file to be written in `folder`.

    A name shorter than 255 characters (and UTF-8 bytes) comes back as it is. A longer one becomes
    ``hashed_name(name) + suffix`` and the row ``{that},{name}`` is appended to `mapping_file` in `folder`
    (once: an existing row for it is not repeated). Pass the extension as `suffix` (``.csv``) when readers need
    it; dump files take none, so that readers resolve them as digits-only names.
    """
    if "/" in name or "\0" in name:
        raise NamingError(f"{name!r} is a path, not a file name")
    if not too_long(name):
        return name
    short = hashed_name(name) + suffix
    if too_long(short):
        raise NamingError(f"suffix {suffix[:40]!r}... is too long for a file name")
    from dumpcmp.support import files as _io

    folder = os.fspath(folder)
    mapping_path = os.path.join(folder, mapping_file)
    os.makedirs(folder, exist_ok=True)
    with _io.folder_lock(folder):  # two writers adding rows at once: neither row is lost
        if os.path.islink(mapping_path):
            raise NamingError(f"{mapping_path}: is a symbolic link; not written through")
        existing = read_mapping(mapping_path, problems=[])
        if existing.get(short) == name:
            return short
        if short in existing:
            raise NamingError(f"{mapping_path}: hashed name {short} already stands for another name")
        try:
            with open(mapping_path, "rb") as handle:
                old = handle.read()
        except FileNotFoundError:
            old = b""
        if old and not old.endswith(b"\n"):
            old += b"\n"
        row = mapping_row(short, name)
        # the old rows plus the new one, replacing the file (never through a link) whole
        _io.atomic_write(mapping_path, lambda f: f.write(old + row.encode("utf-8", "surrogateescape")),
                         force=True, what="mapping file")
    return short
