"""SigmaStar DumpDebug files: the tensor dumps of SGS_IPU_SDK's simulator and of its ONNX/Caffe dump scripts
(`sigma_outtensor_dump.bin`, `onnx_NHWC_outtensor_dump.bin`, their `dumpasstring` / `.txt` forms) and the
calibrator's `tensor_min_max.txt`. The format and where each fact comes from: docs/formats.md, "SigmaStar DumpDebug".

In: a dump file. Out: its tensors (`SigmaTensor`: header fields) and their values (`SigmaDump.values`: float32,
cropped to the shape, fixed point dequantised as real = (q - z) * s). A binary payload is read through a memory
mapping of the file (`SigmaDump.raw` is a NumPy view on it); a text dump's values are parsed from the mapping.

Every malformed file raises `DumpError` naming the file, the tensor (index and name) and what is wrong.
`write_sigmastar_dump` writes one (binary or text, any trailer variant) through support/files.py's safe writer.

    >>> dump = open_sigmastar("sigma_outtensor_dump.bin")
    >>> [(t.name, t.shape) for t in dump.tensors]; dump.values(dump.tensors[0])
"""

from __future__ import annotations

import math
import mmap
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from dumpcmp.errors import ConfigError, DumpcmpError, DumpError
from dumpcmp.support.lazy_numpy import np

__all__ = [
    "DTYPES", "SigmaDump", "SigmaTensor", "TensorSpec", "TRAILERS", "is_sigmastar_dump", "one_line", "open_sigmastar",
    "read_min_max", "write_sigmastar_dump",
]

#: the first bytes of every SigmaStar dump (`isFloat: 0|1`)
MAGIC = b"isFloat:"
#: the trailers the SDK's writers put after a payload (the simulator `\n};\n`, others `};\n` or nothing)
TRAILERS = ("\n};\n", "};\n", "")
#: header type -> little-endian NumPy dtype of a payload when isFloat is 0 (isFloat 1: float32 for every type)
DTYPES = {"float": "<f4", "SGS_S8": "i1", "SGS_U8": "u1", "SGS_S16": "<i2", "SGS_U16": "<u2", "SGS_S32": "<i4",
          "SGS_U32": "<u4", "SGS_BOOL": "u1"}

_HEADER = re.compile(
    rb"//(out|in) (-?\d+) s: (\S+) z: (\S+) type: (\S+) name: (.*) bConstant:(\d+) shape:\[([^\]]*)\] dims:(\d+)\s*")
_OP = re.compile(rb"(\w+)\[(-?\d+)\] (.*) = \{\s*")
_SIZE = re.compile(rb"//buffer data size: (\d+)\s*")
_TRAILER_LINE = re.compile(rb"\s*(\};?)?\s*")
_CLOSE = re.compile(rb"^[ \t\r]*\};?[ \t\r]*$", re.MULTILINE)
#: the longest header or text line read (a file without line breaks is refused, never copied whole)
MAX_LINE = 1 << 16


@dataclass(frozen=True)
class SigmaTensor:
    """One tensor's header. `index`: its position in the file (0-based); `direction` "out" or "in" and `slot` (the
    number after `//out`); `op_kind`, `op_index`, `op_type` from the `op_out[k] TYPE = {` line; `size`: the payload
    bytes the file declares; `offset`, `end`: where its payload (binary) or its value text (text dump) lies."""

    index: int
    direction: str
    slot: int
    scale: float
    zero_point: int
    data_type: str
    name: str
    constant: bool
    shape: tuple[int, ...]
    op_kind: str
    op_index: int
    op_type: str
    size: int
    offset: int
    end: int

    @property
    def label(self) -> str:
        """`{k}.{name}.xx.output{i}`: the folder name the SDK's splitter gives the tensor (name up to its first
        space, '/' as '_', ':' dropped)."""
        name = (self.name.split() or [""])[0].replace("/", "_").replace(":", "")
        kind = f"output{self.slot}" if self.direction == "out" else "inputs"
        return f"{self.op_index}.{name}.xx.{kind}"

    def describe(self) -> str:
        return f"tensor {self.index} ({self.name!r})"


class SigmaDump:
    """A SigmaStar dump file, parsed: `is_float`, `text` (a `dumpasstring` dump) and `tensors` in file order."""

    def __init__(self, path: str, is_float: bool, text: bool, tensors: list[SigmaTensor], data: Any) -> None:
        self.path = path
        self.is_float = is_float
        self.text = text
        self.tensors = tensors
        self._data = data  # the mapping (or bytes of an empty file)

    @property
    def file_size(self) -> int:
        return len(self._data)

    def payload_dtype(self, t: SigmaTensor) -> Any:
        return np.dtype("<f4" if self.is_float else DTYPES[t.data_type])

    def raw(self, t: SigmaTensor) -> Any:
        """The payload as stored, flat (padding included): a read-only view on the mapping for a binary dump, the
        parsed numbers (float64, or int64 for an integer type) for a text dump."""
        dtype = self.payload_dtype(t)
        count = t.size // dtype.itemsize
        if not self.text:
            return np.frombuffer(self._data, dtype=dtype, count=count, offset=t.offset)
        block = bytes(self._data[t.offset:t.end]).replace(b",", b" ").split()
        kind = np.float64 if dtype.kind == "f" else np.int64
        try:
            values = np.array(block, dtype=kind) if block else np.zeros(0, kind)
        except (ValueError, OverflowError):
            bad = next((b for b in block if not _number_ok(b, kind)), block[0])
            raise self._error(t, f"bad number {bad.decode('ascii', 'replace')!r} in its values") from None
        if values.size != count:
            raise self._error(t, f"{values.size} values, but the declared {t.size} bytes of {t.data_type} hold "
                                 f"{count}")
        return values

    def values(self, t: SigmaTensor) -> Any:
        """The tensor's real values, float32 in its shape: padding of the innermost dimension cropped; integers
        dequantised as (q - z) * s when the dump holds fixed point (isFloat 0; a scale of 0 leaves q as it is)."""
        raw = self.raw(t)
        n = math.prod(t.shape)
        if raw.size != n:
            last = t.shape[-1] if t.shape else 0
            outer = n // last if last else 0
            if raw.size < n or not outer or raw.size % outer:
                raise self._error(t, f"the payload holds {raw.size} {t.data_type} values; the shape "
                                     f"{list(t.shape)} needs {n} (more only as padding of the innermost dimension)")
            raw = raw.reshape(outer, raw.size // outer)[:, :last]
        if raw.dtype.kind in "iub" and t.scale != 0:
            with np.errstate(over="ignore", invalid="ignore"):  # out of float32's range: inf, as a cast gives
                out = ((raw.astype(np.float64) - t.zero_point) * t.scale).astype(np.float32)
        else:
            out = np.ascontiguousarray(raw, dtype=np.float32)
        return out.reshape(t.shape)

    def _error(self, t: SigmaTensor, what: str) -> DumpError:
        return DumpError(f"{self.path}: {t.describe()}: {what}")


def _number_ok(token: bytes, kind: Any) -> bool:
    try:
        (float if kind is np.float64 else int)(token)
        return True
    except ValueError:
        return False


def is_sigmastar_dump(path: str | os.PathLike[str]) -> bool:
    """A regular file that starts with `isFloat:` (what every SigmaStar dump starts with)."""
    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def _map(path: str) -> Any:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                return b""
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as error:
        raise DumpError(f"{path}: cannot read: {error.strerror or error}") from None


def open_sigmastar(path: str | os.PathLike[str], *, text: bool | None = None) -> SigmaDump:
    """Parse a SigmaStar dump. `text`: a `dumpasstring` dump (default: the file name ends with .txt)."""
    path = os.fspath(path)
    if text is None:
        text = path.lower().endswith(".txt")
    data = _map(path)
    end = len(data)

    def line_at(pos: int) -> tuple[bytes, int]:
        stop = data.find(b"\n", pos, pos + MAX_LINE)
        if stop < 0:
            if end - pos > MAX_LINE:
                where = f"after {dump.tensors[-1].describe()}" if dump.tensors else "in its header"
                raise DumpError(f"{path}: a line longer than {MAX_LINE} bytes at offset {pos} {where}")
            stop = end
        else:
            stop += 1
        return bytes(data[pos:stop]), stop

    dump = SigmaDump(path, False, text, [], data)
    first = bytes(data[:64]).split(b"\n", 1)[0] + b"\n"
    m = re.fullmatch(rb"isFloat: ?([01])\s*", first)
    if m is None:
        raise DumpError(f"{path}: not a SigmaStar dump (the first line is not 'isFloat: 0' or 'isFloat: 1')")
    dump.is_float = m.group(1) == b"1"
    pos = min(len(first), end)
    while True:
        # between tensors: only trailer lines (`};`, `}`, empty); then the next `//out` / `//in` header
        while pos < end:
            line, after = line_at(pos)
            if line.startswith((b"//out", b"//in")):
                break
            if not _TRAILER_LINE.fullmatch(line):
                where = f"after {dump.tensors[-1].describe()}" if dump.tensors else "before the first tensor"
                raise DumpError(f"{path}: unexpected bytes at offset {pos} {where} (not a '//out'/'//in' header "
                                f"line: {line[:40]!r})")
            pos = after
        if pos >= end:
            break
        dump.tensors.append(_tensor(dump, line_at, pos, end))
        pos = dump.tensors[-1].end
        if text:
            pos = line_at(pos)[1]  # the closing `}` line
    return dump


def _tensor(dump: SigmaDump, line_at: Any, pos: int, end: int) -> SigmaTensor:
    index = len(dump.tensors)
    header, pos = line_at(pos)
    m = _HEADER.fullmatch(header)

    def bad(what: str, name: str = "") -> DumpError:
        who = f"tensor {index} ({name!r})" if name else f"tensor {index}"
        return DumpError(f"{dump.path}: {who}: {what}")

    if m is None:
        found = re.search(rb" name: (.*?)(?: bConstant:|\s*$)", header)
        raise bad(f"bad header line {header[:120]!r}", found.group(1).decode("utf-8", "replace") if found else "")
    name = m.group(6).decode("utf-8", "replace")
    try:
        scale, zero_point = float(m.group(3)), int(float(m.group(4)))
        shape_text = m.group(8).strip()
        shape = tuple(int(d) for d in shape_text.split(b",")) if shape_text else ()
    except (ValueError, OverflowError):
        raise bad(f"bad number in the header line {header[:120]!r}", name) from None
    data_type = m.group(5).decode("ascii", "replace")
    if len(shape) != int(m.group(9)) or any(d < 0 for d in shape):
        raise bad(f"shape {list(shape)} does not match dims:{int(m.group(9))}", name)
    if not dump.is_float and data_type not in DTYPES:
        raise bad(f"unknown type {data_type!r} in a fixed-point dump (isFloat: 0)", name)
    if not math.isfinite(scale):
        raise bad(f"scale {scale} is not a finite number", name)
    op_line, pos = line_at(pos)
    m_op = _OP.fullmatch(op_line)
    if m_op is None:
        raise bad(f"expected the 'op_out[k] TYPE = {{' line, got {op_line[:120]!r}", name)
    size_line, pos = line_at(pos)
    m_size = _SIZE.fullmatch(size_line)
    if m_size is None:
        raise bad(f"expected the '//buffer data size: N' line, got {size_line[:120]!r}", name)
    size = int(m_size.group(1))
    width = np.dtype("<f4" if dump.is_float else DTYPES[data_type]).itemsize
    if size % width:
        raise bad(f"buffer data size {size} is not a whole number of {width}-byte {data_type} values", name)
    if dump.text:
        closing = _CLOSE.search(dump._data, pos)
        if closing is None:
            raise bad("truncated: its values are not closed by a '}' line", name)
        stop = closing.start()
    else:
        stop = pos + size
        if stop > end:
            raise bad(f"truncated: the payload has {size} bytes, the file holds {end - pos} after its header",
                      name)
    return SigmaTensor(index, m.group(1).decode(), int(m.group(2)), scale, zero_point, data_type, name,
                       m.group(7) != b"0", shape, m_op.group(1).decode("ascii", "replace"), int(m_op.group(2)),
                       m_op.group(3).decode("utf-8", "replace"), size, pos, stop)


# ---- tensor_min_max.txt -------------------------------------------------------------------------------------------

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan"
_MIN_MAX = re.compile(rf"(.+?),\s*min:\s*({_NUMBER}),\s*max:\s*({_NUMBER})\s*;?", re.IGNORECASE)


def read_min_max(path: str | Path) -> dict[str, tuple[float, float]]:
    """A calibrator's tensor_min_max.txt (`name, min: -1.234567, max: 2.345678;` a line; the name is all before
    the last `, min:`), also read tolerantly: any line holding a tensor name (up to the first space, comma or
    colon) and, last, its min and max (`name min max`, `name: min=.., max=..`). '#' starts a comment line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise DumpcmpError(f"{path}: cannot read: {error.strerror}") from None
    out: dict[str, tuple[float, float]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _MIN_MAX.fullmatch(line)
        if m is not None:
            name, values = m.group(1).strip(), [float(m.group(2)), float(m.group(3))]
        else:
            name = re.split(r"[\s,:]+", line, maxsplit=1)[0]
            values = [float(v) for v in re.findall(_NUMBER, line[len(name):], flags=re.IGNORECASE)]
        if len(values) < 2 or not name:
            raise ConfigError(f"{path}:{number}: expected a tensor name followed by its min and max, got {line!r}")
        lo, hi = values[-2], values[-1]
        out[name] = (min(lo, hi), max(lo, hi))
    if not out:
        raise ConfigError(f"{path}: no 'name min max' lines")
    return out


# ---- writing ------------------------------------------------------------------------------------------------------

@dataclass
class TensorSpec:
    """A tensor to write. `data`: its values in `shape` (default: data's shape); for isFloat 0 integers of
    `data_type`'s width, else anything castable to float32. `pad_to`: innermost dimension stored padded to this size
    (zeros). `op_kind`/`op_index`/`op_type`: the `op_out[k] TYPE = {` line."""

    name: str
    data: Any
    op_type: str = "OP"
    op_index: int = 0
    direction: str = "out"
    slot: int = 0
    scale: float = 0.0
    zero_point: int = 0
    data_type: str = "float"
    constant: bool = False
    shape: Sequence[int] | None = None
    pad_to: int | None = None
    op_kind: str = "op_out"


def _payload(spec: TensorSpec, is_float: bool) -> Any:
    dtype = np.dtype("<f4" if is_float else DTYPES[spec.data_type])
    shape = tuple(spec.shape) if spec.shape is not None else np.shape(spec.data)
    values = np.asarray(spec.data).astype(dtype).reshape(shape)
    if spec.pad_to is not None:
        if not shape or spec.pad_to < shape[-1]:
            raise ValueError(f"pad_to {spec.pad_to} is smaller than the innermost dimension of {shape}")
        padded = np.zeros(shape[:-1] + (spec.pad_to,), dtype)
        padded[..., :shape[-1]] = values
        values = padded
    return shape, values


def one_line(name: str) -> str:
    """A tensor or op name as the dumps' line-based headers (and tensor_min_max.txt) can hold it: line breaks become
    spaces (an ONNX name may hold any character; written raw, it would split its header line in two)."""
    return name.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")


def _header(spec: TensorSpec, shape: tuple[int, ...], size: int) -> bytes:
    dims = ", ".join(str(d) for d in shape)
    scale = f"{spec.scale:f}"  # as the SDK's writers print it, unless six decimals would lose the scale
    if float(scale) != spec.scale:
        scale = repr(float(spec.scale))  # the shortest text that reads back as exactly this scale
    return (f"//{spec.direction} {spec.slot} s: {scale} z: {spec.zero_point} type: {spec.data_type} "
            f"name: {one_line(spec.name)} bConstant:{int(spec.constant)} shape:[{dims}] dims:{len(shape)}\n"
            f"{spec.op_kind}[{spec.op_index}] {one_line(spec.op_type)} = {{\n"
            f"//buffer data size: {size}\n").encode("utf-8")


def _write_text_values(f: IO[bytes], values: Any, integer: bool) -> None:
    flat = values.reshape(-1)
    for start in range(0, flat.size, 16):
        chunk = flat[start:start + 16]
        f.write(("".join(f"{int(v):6d}, " for v in chunk) if integer
                 else "".join(f"{float(v):.6f}, " for v in chunk)).encode("ascii") + b"\n")


def write_sigmastar_dump(path: str | os.PathLike[str], tensors: Iterable[TensorSpec], *, is_float: bool = True,
                         trailer: str = "\n};\n", text: bool = False, force: bool = False) -> Path:
    """Write a SigmaStar dump (binary, or text with `text`: values `%.6f, ` / `%6d, ` sixteen a line, closed by
    `}`) atomically through support/files.py (no symlink followed, an existing file replaced only with `force`).
    `trailer`: what follows each binary payload, one of TRAILERS."""
    from dumpcmp.support.files import atomic_write

    if trailer not in TRAILERS:
        raise ValueError(f"trailer {trailer!r} is not one of {TRAILERS}")

    def write(f: IO[bytes]) -> None:
        f.write(f"isFloat: {int(is_float)}\n".encode("ascii"))
        for spec in tensors:
            shape, values = _payload(spec, is_float)
            f.write(_header(spec, shape, values.nbytes))
            if text:
                _write_text_values(f, values, values.dtype.kind in "iub")
                f.write(b"}\n")
            else:
                f.write(np.ascontiguousarray(values).tobytes())
                f.write(trailer.encode("ascii"))

    return atomic_write(path, write, force=force, what="SigmaStar dump")
