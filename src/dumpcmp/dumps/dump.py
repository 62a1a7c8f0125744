"""Ascend dump files: open (header only, tensors mapped on demand), read tensors as NumPy arrays, write.

    >>> d = dumpcmp.open_dump("Conv2D.conv1.3.1700000000000000")
    >>> d.outputs[0].format, d.outputs[0].shape
    ('NC1HWC0', (1, 1, 56, 56, 16))
    >>> a = d.outputs[0].array()      # float16, zero-copy view of the mapped file

Arrays of NumPy's own dtypes share the mapping (read-only); bf16, fp8, fp6, fp4 and HiFloat8 come decoded to
float32, packed int4/int2/uint2/uint1 unpacked to one int8/uint8 per element, COMPLEX32 as complex64.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

from dumpcmp.support import files as _io
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core
from dumpcmp.errors import DumpError

KINDS = ("input", "output", "buffer", "workspace")

#: name -> number of every data type of the spec, and the reverse
DATA_TYPES: dict[str, int] = {t["name"]: t["value"] for t in core.dtype.data_types()}
#: name -> number of every format of the spec
FORMATS: dict[str, int] = dict(core.dtype.formats())
_TYPE_INFO = {t["name"]: t for t in core.dtype.data_types()}

# NumPy dtype -> the spec's data type, for writing arrays without an explicit data_type.
_FROM_NUMPY = {
    "float32": "FLOAT", "float16": "FLOAT16", "float64": "DOUBLE", "int8": "INT8", "uint8": "UINT8",
    "int16": "INT16", "uint16": "UINT16", "int32": "INT32", "int64": "INT64", "uint32": "UINT32",
    "uint64": "UINT64", "bool": "BOOL", "complex64": "COMPLEX64", "complex128": "COMPLEX128",
    # ml_dtypes arrays carry their bits as-is
    "bfloat16": "BF16", "float8_e5m2": "FLOAT8_E5M2", "float8_e4m3fn": "FLOAT8_E4M3FN",
    "float8_e8m0fnu": "FLOAT8_E8M0",
}


def data_type_of(array: np.ndarray) -> str:
    """The spec's data type name for a NumPy array's dtype (float16 -> FLOAT16, ...)."""
    name = _FROM_NUMPY.get(np.dtype(array.dtype).name)
    if name is None:
        raise DumpError(f"no dump data type for NumPy dtype {array.dtype}")
    return name


def numpy_dtype(data_type: str) -> np.dtype:
    """The dtype of the arrays dumpcmp hands out for a data type (BF16 -> float32, INT4 -> int8, ...)."""
    info = _TYPE_INFO.get(data_type)
    if info is None:
        raise DumpError(f"unknown data type {data_type!r}")
    if not info["numpy"]:
        raise DumpError(f"data type {data_type} has no numeric value")
    return np.dtype(info["numpy"])


class Tensor:
    """One input, output, buffer or workspace of a dump. Metadata is read; bytes are mapped on `array()`."""

    __slots__ = ("_file", "desc")

    def __init__(self, file: core.dump.DumpFile, desc: core.dump.TensorDesc) -> None:
        self._file = file
        self.desc = desc

    kind = property(lambda self: self.desc.kind)
    index = property(lambda self: self.desc.index)
    data_type = property(lambda self: self.desc.data_type, doc="the spec's name, e.g. 'FLOAT16'")
    format = property(lambda self: self.desc.format, doc="device layout, e.g. 'NC1HWC0'")
    shape = property(lambda self: self.desc.shape, doc="shape as stored (device layout)")
    original_shape = property(lambda self: self.desc.original_shape, doc="the framework's shape, or None")
    sub_format = property(lambda self: self.desc.sub_format, doc="group count of grouped FRACTAL_Z weights")
    size = property(lambda self: self.desc.size, doc="bytes of raw data")
    address = property(lambda self: self.desc.address)
    file_offset = property(lambda self: self.desc.file_offset, doc="where the raw bytes start in the file")
    original_op = property(lambda self: self.desc.original_op)

    @property
    def name(self) -> str:
        """`output.0`, `input.1`, ...: how this tensor is named in file names and messages."""
        return f"{self.kind}.{self.index}"

    @property
    def path(self) -> str:
        return self._file.path

    def array(self) -> np.ndarray:
        """The tensor in its stored layout and shape (read-only; zero-copy where NumPy has the dtype)."""
        return self._file.array(self.kind, self.index)

    def raw(self) -> np.ndarray:
        """The raw stored bytes (uint8, read-only, zero-copy)."""
        return self._file.raw(self.kind, self.index)

    def problem(self) -> str:
        """Empty if the bytes fit the dtype and shape; else what is wrong."""
        desc = self.desc
        return self._file.check(desc.kind, desc.index)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "index": self.index, "data_type": self.data_type, "format": self.format,
            "shape": list(self.shape),
            "original_shape": None if self.original_shape is None else list(self.original_shape),
            "sub_format": self.sub_format, "size": self.size, "address": self.address,
            "file_offset": self.file_offset, "original_op": self.original_op,
        }

    def __repr__(self) -> str:
        orig = "" if self.original_shape is None else f" original_shape={list(self.original_shape)}"
        return (f"<Tensor {self.name} {self.data_type} {self.format} shape={list(self.shape)}{orig} "
                f"{self.size} bytes>")


class Dump:
    """A dump file. `inputs`, `outputs`, `buffers`, `workspaces` are lists of `Tensor`."""

    __slots__ = ("_file", "_tensors")

    def __init__(self, file: core.dump.DumpFile) -> None:
        self._file = file
        self._tensors: dict[str, list[Tensor]] = {}  # built on first use: scans open thousands of headers

    def _kind(self, kind: str) -> list[Tensor]:
        ts = self._tensors.get(kind)
        if ts is None:
            ts = self._tensors[kind] = [Tensor(self._file, t) for t in self._file.tensors(kind)]
        return ts

    inputs = property(lambda self: self._kind("input"))
    outputs = property(lambda self: self._kind("output"))
    buffers = property(lambda self: self._kind("buffer"))
    workspaces = property(lambda self: self._kind("workspace"))

    path = property(lambda self: self._file.path)
    op_name = property(lambda self: self._file.op_name)
    version = property(lambda self: self._file.version)
    dump_time = property(lambda self: self._file.dump_time)
    attrs = property(lambda self: self._file.attrs)
    legacy = property(lambda self: self._file.legacy, doc="True for the old inline-data format")
    file_size = property(lambda self: self._file.file_size)
    header_size = property(lambda self: self._file.header_size)

    def tensors(self, kind: str | None = None) -> list[Tensor]:
        if kind is None:
            return self.inputs + self.outputs + self.buffers + self.workspaces
        if kind not in KINDS:
            raise ValueError(f"tensor kind must be one of {KINDS}, not {kind!r}")
        return getattr(self, kind + "s")

    def descs(self) -> list[core.dump.TensorDesc]:
        """The core's records of every tensor (inputs, outputs, buffers, workspaces, as `tensors()` orders them):
        their metadata without a `Tensor` made for each (`dumpcmp info` on a tree of 10^6 dumps)."""
        return [t for kind in KINDS for t in self._file.tensors(kind)]

    def tensor(self, kind: str, index: int) -> Tensor:
        ts = self.tensors(kind)
        if not 0 <= index < len(ts):
            raise IndexError(f"{self.path}: no {kind} {index} (the dump has {len(ts)} {kind}s)")
        return ts[index]

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self.tensors())

    def __repr__(self) -> str:
        return (f"<Dump {os.path.basename(self.path)} op={self.op_name!r} inputs={len(self.inputs)} "
                f"outputs={len(self.outputs)}>")


class HeadDump(Dump):
    """A dump held as its header's inputs and outputs only (`core.dump.DumpHead`, less than half the memory of a Dump
    whose Tensors were read; issue #35): what a run of 10^5 dumps keeps of each until its pairs are compared. The
    Dump API is the same: its Tensors are made on each use (not kept), their bytes read on first use; what is not
    kept (the op name, version, time, attributes, buffers and workspaces) is read from the file again when asked
    for."""

    __slots__ = ()

    def __init__(self, file: core.dump.DumpHead) -> None:
        self._file = file  # no Tensor cache: 10^5 of them are held

    def _kind(self, kind: str) -> list[Tensor]:
        if kind in ("buffer", "workspace"):  # not kept: read again, when the dump has any
            return self.full()._kind(kind) if self._file.count(kind) else []
        file = self._file
        return [Tensor(file, t) for t in file.tensors(kind)]

    def count(self, kind: str) -> int:
        """How many inputs, outputs, buffers or workspaces the dump has (no Tensor made)."""
        return self._file.count(kind)

    def full(self) -> Dump:
        """The dump opened whole (its header read from the file again)."""
        return open_dump(os.fsdecode(self._file.path))

    def descs(self) -> list[core.dump.TensorDesc]:
        kept = self._file.tensors("input") + self._file.tensors("output")
        if not (self._file.count("buffer") or self._file.count("workspace")):
            return kept
        return kept + [t for t in self.full().descs() if t.kind in ("buffer", "workspace")]

    def __repr__(self) -> str:  # from what is kept: a repr never reads the file (which may have changed since)
        return (f"<HeadDump {os.path.basename(self.path)} inputs={self.count('input')} "
                f"outputs={self.count('output')}>")

    op_name = property(lambda self: self.full().op_name)
    version = property(lambda self: self.full().version)
    dump_time = property(lambda self: self.full().dump_time)
    attrs = property(lambda self: self.full().attrs)


def open_dump(path: str | os.PathLike[str]) -> Dump:
    """Open a dump file (current or old format). Reads the header only; raises DumpError naming the file."""
    return Dump(core.dump.DumpFile(os.fsencode(path)))  # bytes: any file name, UTF-8 or not


def open_dumps(paths: Sequence[str | os.PathLike[str]], threads: int = 0) -> list[Dump | DumpError]:
    """Open many dump headers in parallel: a Dump, or the DumpError, per path (never raises for one bad file)."""
    out: list[Dump | DumpError] = []
    for item in core.dump.read_headers([os.fsencode(p) for p in paths], threads):
        out.append(DumpError(item) if isinstance(item, str) else Dump(item))
    return out


def open_heads(paths: Sequence[str | os.PathLike[str]], threads: int = 0) -> list[HeadDump | DumpError]:
    """`open_dumps`, each dump held small (HeadDump): for runs of many dumps whose headers are kept."""
    return [DumpError(item) if isinstance(item, str) else HeadDump(item)
            for item in core.dump.read_heads([os.fsencode(p) for p in paths], threads)]


@dataclass
class TensorData:
    """A tensor to write: values plus the metadata the device records.

    `array` holds values in dumpcmp's NumPy representation of `data_type` (float32 for BF16 and the fp8/fp6/fp4
    types, int8/uint8 for packed sub-byte ints) or, with `raw=True`, the storage bytes themselves.
    `shape` defaults to the array's shape (the stored, device-layout shape).
    """

    array: Any
    data_type: str | None = None
    format: str = "ND"
    shape: Sequence[int] | None = None
    original_shape: Sequence[int] | None = None
    sub_format: int = 0
    address: int = 0
    offset: int = 0
    original_op: dict[str, Any] | None = None
    dim_range: Sequence[tuple[int, int]] = field(default_factory=tuple)
    arg_index: int = 0
    input_type: int = 0
    raw: bool = False


def _storage_bytes(t: TensorData, where: str) -> tuple[str, np.ndarray, tuple[int, ...]]:
    array = t.array if isinstance(t.array, np.ndarray) else np.asarray(t.array)
    data_type = t.data_type or data_type_of(array)
    info = _TYPE_INFO.get(data_type)
    if info is None:
        raise DumpError(f"{where}: unknown data type {data_type!r}")
    shape = tuple(int(d) for d in (array.shape if t.shape is None else t.shape))
    if t.raw or info["repr"] == "none":
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return data_type, data, shape
    if np.dtype(array.dtype).name in ("bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e8m0fnu"):
        return data_type, np.ascontiguousarray(array).reshape(-1).view(np.uint8), shape
    want = np.dtype(info["numpy"])
    values = np.ascontiguousarray(array, dtype=want).reshape(-1)
    if values.size != int(np.prod(shape, dtype=np.int64)):
        raise DumpError(f"{where}: {values.size} values do not fill shape {list(shape)}")
    if info["repr"] == "native":
        return data_type, values.view(np.uint8), shape
    return data_type, core.dtype.encode(data_type, values), shape


def write_dump(
    path: str | os.PathLike[str],
    *,
    op_name: str = "",
    inputs: Iterable[TensorData | np.ndarray] = (),
    outputs: Iterable[TensorData | np.ndarray] = (),
    buffers: Iterable[np.ndarray | bytes] = (),
    workspaces: Iterable[np.ndarray | bytes] = (),
    version: str = "2.0",
    dump_time: int | None = None,
    attrs: Iterable[tuple[str, str]] = (),
    dfx_message: str = "",
    force: bool = True,
) -> str:
    """Write a dump file as the device does (length-prefixed header, then raw inputs, outputs, buffers, workspaces).

    The file appears whole or not at all (written in a private temporary folder beside it, then moved into place,
    never through a symlink); with force=False an existing `path` is an error instead of being replaced.
    Returns the path.
    """
    path = os.fspath(path)
    tensors: list[dict[str, Any]] = []
    for kind, items in (("input", inputs), ("output", outputs)):
        for i, item in enumerate(items):
            t = item if isinstance(item, TensorData) else TensorData(item)
            where = f"{path}: {kind} {i}"
            data_type, data, shape = _storage_bytes(t, where)
            if t.format not in FORMATS:
                raise DumpError(f"{where}: unknown format {t.format!r}")
            tensors.append({
                "kind": kind, "data_type": DATA_TYPES[data_type], "format": FORMATS[t.format], "shape": shape,
                "original_shape": None if t.original_shape is None else tuple(int(d) for d in t.original_shape),
                "sub_format": int(t.sub_format), "address": int(t.address), "offset": int(t.offset),
                "original_op": t.original_op, "dim_range": [tuple(r) for r in t.dim_range],
                "arg_index": int(t.arg_index), "input_type": int(t.input_type), "sub_type": 0, "data": data,
            })
    for kind, items in (("buffer", buffers), ("workspace", workspaces)):
        for item in items:
            data = np.frombuffer(item, dtype=np.uint8) if isinstance(item, (bytes, bytearray)) else \
                np.ascontiguousarray(item).reshape(-1).view(np.uint8)
            tensors.append({
                "kind": kind, "data_type": 0, "format": 0, "shape": (), "original_shape": None, "sub_format": 0,
                "address": 0, "offset": 0, "original_op": None, "dim_range": [], "arg_index": 0, "input_type": 0,
                "sub_type": 0, "data": data,
            })
    if dump_time is None:
        dump_time = time.time_ns() // 1000
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise DumpError(f"{path}: cannot write: the folder {folder} does not exist")
    def write(tmp: str) -> None:
        try:
            core.dump.write_dump(os.fsencode(tmp), version, int(dump_time),  # bytes: names not UTF-8 too
                                 op_name.encode("utf-8", "surrogateescape"), list(attrs), dfx_message, tensors)
        except core.DumpError as error:  # named by the user's path, not the private temporary's
            raise type(error)(str(error).replace(tmp, path)) from None

    _io.atomic_write_path(path, write, force=force, what="dump")
    return path
