"""Ground truth on disk: reading one ground-truth tensor, and the index that `dumpcmp golden` writes beside its
tensors (golden_index.csv).

In: a ground-truth file (``{op}.{output_index}.{timestamp}.npy``, or a framework dump ``.pb``/``.quant``) or folder.
Out: the tensor (a source for the engine, an array, or the dump tensor it holds), or the index records (which op
and output each file holds, and which files are weights only). Every reader of ground truth in dumpcmp (compare,
single-op compare, locate, extract, convert, histogram) reads it here, as does every other reader of a ``.npy``
(golden's model inputs, info), by these rules:

* a ``.npy`` has its header checked against the file's size before anything is read or mapped (`npy_header`); a
  plain one (little-endian numbers in C order) is mapped by the core without NumPy (`plain_npy`, `mapped_npy`);
* a framework dump holds the tensor as its output ``output_index``, or as its output 0 when it has fewer outputs
  (`framework_output`): the one output-index rule.

The index is the mapping from original op names to files; a comparison pairs through it.
"""

from __future__ import annotations

import csv
import json
import math
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from dumpcmp.dumps import naming
from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NotFoundError
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core

__all__ = [
    "CONSTANT_MARK", "INDEX_COLUMNS", "INDEX_NAME", "GoldenRecord", "NpyHeader", "PlainNpy",
    "dtype_name", "framework_output", "ground_truth_data", "ground_truth_source", "has_values", "load_npy",
    "ground_truth_sources",
    "mapped_npy", "npy_header", "open_npy", "plain_npy", "read_golden_index", "keys_by_index",
]

# ---- .npy files ---------------------------------------------------------------------------------------------------

_NPY_MAGIC = b"\x93NUMPY"


def open_npy(path: str | os.PathLike[str]) -> Any:
    """A ``.npy`` file as a read-only memory-mapped array (the data is not read); DumpError naming the file if it
    is not a NumPy file, is truncated or holds Python objects."""
    import numpy as np

    text = os.fspath(path)
    with open(text, "rb") as handle:
        magic = handle.read(len(_NPY_MAGIC))
    if magic != _NPY_MAGIC:
        raise DumpError(f"{text}: not a .npy file (it does not start with the NumPy magic bytes)")
    npy_header(text)
    try:
        return np.load(text, mmap_mode="r", allow_pickle=False)
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as error:
        raise DumpError(f"{text}: cannot map the .npy file: {error}") from None


@dataclass(frozen=True, slots=True)
class NpyHeader:
    """What a ``.npy`` header says, checked against the file's size: the data is ``shape`` elements of ``dtype``
    from byte ``offset`` to the end of the file."""

    dtype: Any
    shape: tuple[int, ...]
    fortran_order: bool
    offset: int


def npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """The header of a ``.npy`` file, checked against the file's size before anything is allocated: DumpError
    naming the file when it is empty, not a .npy file, holds Python objects, or holds fewer or more bytes than its
    header claims (a header claiming 4 TiB in a 100-byte file)."""
    import tokenize

    import numpy as np

    text = os.fspath(path)
    plain = plain_npy(text)  # a plain header, read without NumPy's parser (which compiles it: ~100 us a file)
    if plain is not None:
        return NpyHeader(np.dtype(plain.descr), plain.shape, False, plain.offset)
    try:
        with open(text, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise DumpError(f"{text}: empty file (0 bytes): not a .npy file")
            try:
                version = np.lib.format.read_magic(handle)
                reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    np.lib.format.read_array_header_2_0
                shape, fortran, dtype = reader(handle, max_header_size=1 << 16)
            except (ValueError, EOFError, SyntaxError, TypeError, tokenize.TokenError) as error:  # a cut header
                raise DumpError(f"{text}: not a readable .npy file: {error}") from None
            data_start = handle.tell()
    except OSError as error:
        raise DumpError(f"{text}: cannot read: {error.strerror or error}") from None
    if dtype.hasobject:
        raise DumpError(f"{text}: holds Python objects (dtype {dtype}); only plain arrays are read")
    if any(type(d) is not int for d in shape):  # NumPy takes True and False for 1 and 0, then fails mapping them
        raise DumpError(f"{text}: its header's shape {shape!r} holds something other than whole numbers")
    if any(not 0 <= int(d) < 2**63 for d in shape):  # NumPy's own limit (a zero dim hid 2**63 from the size check)
        raise DumpError(f"{text}: its header's shape {list(shape)} has a dimension outside 0 .. 2**63-1")
    need = math.prod(int(d) for d in shape) * dtype.itemsize
    if need != size - data_start:
        raise DumpError(f"{text}: its header says {dtype} {list(shape)} ({need} bytes) but the file holds "
                        f"{size - data_start} bytes of data")
    return NpyHeader(dtype, tuple(int(d) for d in shape), bool(fortran), data_start)


# NumPy's descr of a bool, integer or float .npy -> the core's data type stored that way. The core's table records
# each type's descr; where several share one (INT8, DUAL_SUB_INT8, QINT8) the lowest-numbered, the plain type, wins.
_PLAIN_NPY = {t["numpy"]: t["name"] for t in reversed(core.dtype.data_types())
              if t["repr"] == "native" and t["numpy"][1:2] in ("b", "i", "u", "f")}


@dataclass(frozen=True, slots=True)
class PlainNpy:
    """A ``.npy`` file whose data the core maps as it is: little-endian numbers in C order, at least one element,
    and exactly as many bytes after the header as the header says."""

    data_type: str  # the core's name (FLOAT, FLOAT16, ...)
    shape: tuple[int, ...]
    offset: int  # where the data starts
    descr: str = ""  # NumPy's ('<f4', '|b1', ...)


def plain_npy(path: str | os.PathLike[str]) -> PlainNpy | None:
    """The header of a plain ``.npy`` file (the NumPy format, versions 1-3, a header as NumPy writes it), read by
    the core without NumPy: importing NumPy takes longer than reading a whole model's headers. One open and one read
    (`core.compare.npy_heads`, the rule `ground_truth_sources` maps files by). None for any other file or any doubt
    (Fortran order, big-endian, structured or object data, empty, a size that disagrees, a broken or long header):
    `npy_header` and np.load then read it, with their checks and messages."""
    got = core.compare.npy_heads([os.fsencode(path)], _PLAIN_NPY)[0]
    if got is None:
        return None
    data_type, shape, offset, descr = got
    return PlainNpy(data_type, shape, offset, descr)


def load_npy(path: str | os.PathLike[str]) -> Any:
    """A ``.npy`` file read into memory after `npy_header`'s checks; DumpError naming the file otherwise."""
    import numpy as np

    npy_header(path)
    text = os.fspath(path)
    try:
        return np.load(text, allow_pickle=False)
    except (ValueError, EOFError, OSError, MemoryError) as error:
        raise DumpError(f"{text}: cannot read the .npy file: {error}") from None



# ---- one ground-truth tensor ------------------------------------------------------------------------------------

_DTYPE_NAMES = {
    "FLOAT": "float32", "FLOAT16": "float16", "DOUBLE": "float64", "BF16": "bfloat16", "BOOL": "bool",
    "INT8": "int8", "UINT8": "uint8", "INT16": "int16", "UINT16": "uint16", "INT32": "int32", "UINT32": "uint32",
    "INT64": "int64", "UINT64": "uint64",
}


def dtype_name(data_type: str) -> str:
    """The dtype name a result shows for a dump data type (FLOAT -> float32; others lower-cased)."""
    return _DTYPE_NAMES.get(data_type, data_type.lower())


def has_values(dtype: Any) -> bool:
    """A NumPy dtype the metrics compare: bool, integer or float, in the machine's byte order."""
    return dtype.kind in "biuf" and dtype.byteorder != ">"


def mapped_npy(path: str) -> tuple[Any, Any, str] | None:
    """A plain .npy (little-endian numbers in C order) mapped by the core after one read of its header, without
    NumPy: a whole model's ground truth opens in a fraction of np.load's time (which reads the header twice and
    builds a memmap). None for anything else (Fortran order, empty, a bad file), which takes the general path and its
    messages."""
    h = plain_npy(path)
    if h is None:
        return None
    # bytes: any file name, UTF-8 or not (a str holding surrogateescape's bytes is refused by the binding)
    source = core.compare.source_from_file(os.fsencode(path), h.offset, h.data_type, math.prod(h.shape))
    return source, h.shape, dtype_name(h.data_type)


def framework_output(dump: Any, output_index: int, path: str) -> tuple[int, Any]:
    """(index, tensor) of the output of a framework dump (``.pb``/``.quant``) that holds ground truth
    ``{op}.{output_index}``: output `output_index`, or output 0 when the dump has fewer outputs (a dump holding the
    one output its name gives). DumpcmpError naming `path` when the dump has no output or that output's bytes do
    not fit its dtype and shape."""
    outputs = dump.outputs
    if not outputs:
        raise DumpcmpError(f"{path}: the dump holds no output")
    index = output_index if output_index < len(outputs) else 0
    t = outputs[index]
    problem = t.problem()
    if problem:
        raise DumpcmpError(f"{path}: {problem}")
    return index, t


def _is_npy(entry: Any) -> bool:
    return entry.name.extension == naming.NPY


def ground_truth_source(entry: Any) -> tuple[Any, Any, str]:
    """(engine source, shape, dtype name) of a ground-truth file (a `dumpcmp.dumps.scan.GroundTruthEntry`): a plain
    .npy mapped without NumPy, any other .npy mapped by NumPy, a framework dump's output in its stored order with its
    original shape. DumpcmpError naming the file when it cannot be read or holds no values the metrics compare."""
    if _is_npy(entry):
        mapped = mapped_npy(entry.path)
        if mapped is not None:
            return mapped
    data = entry.open()
    if isinstance(data, np.ndarray):
        a = data if data.flags.c_contiguous else np.ascontiguousarray(data)
        if not has_values(a.dtype):
            raise DumpcmpError(f"{entry.path}: ground truth of dtype {a.dtype} has no values the metrics compare")
        return core.compare.source_from_array(a), a.shape, a.dtype.name
    index, t = framework_output(data, entry.output_index, entry.path)
    return core.compare.source_from_dump(data._file, "output", index), tuple(t.original_shape or t.shape), \
        dtype_name(t.data_type)


def ground_truth_sources(entries: Sequence[Any]) -> list[tuple[Any, Any, str] | None]:
    """`ground_truth_source`'s result for each plain .npy of `entries` (a header as NumPy writes it), all opened in
    one call of the core; None for every other entry and on any doubt: the caller then calls `ground_truth_source`,
    whose reading and messages are the general ones (a model's worth of files: 10^5 of them)."""
    out: list[tuple[Any, Any, str] | None] = [None] * len(entries)
    wanted = [k for k, e in enumerate(entries) if _is_npy(e)]
    if wanted:
        opened = core.compare.npy_sources([os.fsencode(entries[k].path) for k in wanted], _PLAIN_NPY)
        for k, got in zip(wanted, opened):
            if got is not None:
                out[k] = (got[0], got[1], dtype_name(got[2]))
    return out


def ground_truth_data(entry: Any, *, whole_below: int = 0) -> Any:
    """The data of a ground-truth file: a .npy's array (read whole when the file is smaller than `whole_below`
    bytes, else memory-mapped), or the `dumpcmp.dumps.dump.Tensor` a framework dump holds it in
    (`framework_output`), still in its dump layout. DumpcmpError naming the file when it cannot be read."""
    if _is_npy(entry):
        if whole_below and os.path.getsize(entry.path) < whole_below:
            return load_npy(entry.path)
        return open_npy(entry.path)
    return framework_output(entry.open(), entry.output_index, entry.path)[1]


# ---- the index ----------------------------------------------------------------------------------------------------

INDEX_NAME = "golden_index.csv"
INDEX_COLUMNS = ("order", "op_name", "file_op_name", "op_type", "output_index", "tensor_name", "file", "shape",
                 "dtype", "note")
CONSTANT_MARK = "constant (weights only)"  # in a record's note: a weight or constant, not a layer's output


@dataclass
class GoldenRecord:
    """One row of the index: an output of an op (or a model input), written to `file` or skipped (`file` "")."""

    order: int
    op_name: str
    file_op_name: str
    op_type: str
    output_index: int
    tensor_name: str
    file: str = ""
    shape: tuple[int, ...] | None = None
    dtype: str = ""
    note: str = ""

    def row(self) -> list[str]:
        return [str(self.order), self.op_name, self.file_op_name, self.op_type, str(self.output_index),
                self.tensor_name, self.file, "" if self.shape is None else json.dumps(list(self.shape)),
                self.dtype, self.note]


def read_golden_index(path: str | os.PathLike[str]) -> list[GoldenRecord]:
    """The records of a `golden_index.csv`."""
    p = Path(path)
    if p.is_dir():
        p = p / INDEX_NAME
    try:
        with open(p, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as error:
        raise NotFoundError(f"{p}: cannot read the golden index: {error.strerror or error}") from error
    except (csv.Error, UnicodeDecodeError) as error:
        raise ConfigError(f"{p}: not a golden index (not UTF-8 CSV: {error})") from None
    if not rows or tuple(rows[0]) != INDEX_COLUMNS:
        raise ConfigError(f"{p}: not a golden index (expected the header {','.join(INDEX_COLUMNS)})")
    records = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(INDEX_COLUMNS):
            raise ConfigError(f"{p}: line {line} has {len(row)} fields, expected {len(INDEX_COLUMNS)}")
        try:
            shape = tuple(int(d) for d in json.loads(row[7])) if row[7] else None
            records.append(GoldenRecord(int(row[0]), row[1], row[2], row[3], int(row[4]), row[5], row[6], shape,
                                        row[8], row[9]))
        except (ValueError, TypeError, RecursionError):
            raise ConfigError(f"{p}: line {line}: order and output_index must be whole numbers and shape a JSON "
                              "list of them") from None
    return records


def keys_by_index(files: Mapping[str, Any], notes: list[str] | None = None) -> dict[str, Any]:
    """Ground-truth files (`{op}.{output_index}` -> an entry with a `path`) keyed by the op that wrote them, as the
    `golden_index.csv` beside each file says: `golden` renames a file whose op name sanitises to one already taken
    (`a/b` and `a_b` both to `a_b`: the second is written as `a_b_1`), so a file name is not the op's name. Files
    no readable index lists keep their key. An index key wins over a file-name key it collides with. An index that
    is there but unreadable is said in `notes` (its folder's files then pair by their names)."""
    indexes: dict[str, dict[str, GoldenRecord]] = {}
    keyed: list[tuple[str, Any, bool]] = []
    for key, entry in files.items():
        path = getattr(entry, "path", None)
        rec = None
        if path is not None:
            folder = os.path.dirname(os.fspath(path))
            if folder not in indexes:
                indexes[folder] = {}
                index_path = os.path.join(folder, INDEX_NAME)
                problem = None
                if os.path.isfile(index_path):
                    try:
                        indexes[folder] = {r.file: r for r in read_golden_index(folder) if r.file}
                    except DumpcmpError as error:  # not golden's index: the file names are the keys
                        problem = str(error)
                elif os.path.lexists(index_path):  # a folder, a device, a FIFO or a broken link: never opened
                    problem = f"{index_path}: not a regular file"
                if problem is not None and notes is not None:
                    notes.append(f"ground truth: {problem}; its folder's files pair by their file names (a file "
                                 "golden renamed, such as a_b_1 for a/b beside a_b, pairs wrongly)")
            listed = indexes[folder]
            rec = listed.get(os.path.basename(os.fspath(path))) if listed else None
        keyed.append((key, entry, False) if rec is None else (f"{rec.op_name}.{rec.output_index}", entry, True))
    from_index = {k for k, _, indexed in keyed if indexed}
    if not from_index:  # no file listed by an index (no index at all, mostly): every file keeps its key
        return dict(files)
    return {k: e for k, e, indexed in keyed if indexed or k not in from_index}
