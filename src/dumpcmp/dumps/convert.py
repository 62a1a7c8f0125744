"""Conversions between dump files and NumPy files: the Python API behind `dumpcmp shape`, `convert` and `view`.

    >>> from dumpcmp.dumps import convert as C
    >>> C.shape_convert("Conv2D.conv1.3.1700000000000000", "NCHW", "out")        # device layout -> NCHW
    [Output(path='out/Conv2D.conv1.3.1700000000000000.output.0.1x3x224x224.npy', ...)]
    >>> C.dump_to_npy("dump_tree", "npy", type="offline").summary()              # every tensor, stored layout
    >>> C.npy_to_dump("caffe_npy", "caffe_dump", type="caffe").summary()         # ground truth -> .pb dumps
    >>> C.view("Conv2D.conv1.3.1700000000000000", "out", txt=True)               # .npy and one value a line

What is written (names from `dumpcmp.dumps.naming`; a name of 255 characters or more is replaced by its hash, listed in
``mapping.csv`` of the output folder):

=======================  ==========================================================================================
`shape_convert`          ``{dump_file_name}.{output|input}.{index}.{1x3x224x224}.npy`` per tensor, in the target
                         format (the original tool's shape_conversion). A 0-d tensor gets no shape part.
`dump_to_npy`            offline/sim: ``{dump_file_name}.output.{i}.npy`` and ``.input.{i}.npy`` per tensor, in the
                         stored layout and shape. quant/tf/caffe: ``{op}.{idx}.{ts}.npy`` per framework dump
                         ``{op}.{idx}.{ts}.quant`` (quant) or ``.pb`` (tf, caffe), from its single output (or its
                         output ``idx`` when it has several).
`npy_to_dump`            from ``{op_name}.{output_index}.{timestamp}.npy`` files. caffe/tf: one dump
                         ``{op}.{idx}.{ts}.pb`` per file, quant: ``.quant``; op name ``op``, one output, dump time
                         ``ts``. offline/sim: one device-style dump per op name and folder,
                         ``{op_type}.{op}.0.{ts}`` (op type ``Npy`` unless given, task id 0, ``ts`` the newest
                         timestamp of its files) holding the op's outputs in index order; indices must run from 0
                         without a gap, and of several files of one output the newest timestamp wins (the others
                         are skipped). Format: NCHW/NCDHW for 4-/5-D arrays (NHWC/NDHWC for tf), ND otherwise;
                         original shape = shape.
`view`                   like `dump_to_npy` for one dump (outputs, then inputs), plus with ``txt=True``
                         ``{dump_file_name}.{kind}.{i}.txt``, one value a line: ``%.5g`` for float16, ``%.9g`` for
                         float32, ``%.17g`` for float64 (each reads back to the same value), integers and bools
                         as integers, complex as ``(re+imj)``.
=======================  ==========================================================================================

Values are the dump's as `Tensor.array()` gives them: float16 stays float16, bf16/fp8/fp6/fp4 become float32,
packed int4/int2/uint2/uint1 one int8/uint8 per element.

Folders. An input folder is walked recursively (sorted, the output folder excluded); the output mirrors its
subfolders, so dumps of several iterations with equal names do not collide. ``mapping.csv`` and
``convert_failed_file_list.txt`` are bookkeeping and ignored; a digits-only file name is resolved through its
folder's ``mapping.csv``. A file whose name does not fit the expected scheme is *skipped* with the reason; a file
that fits but cannot be converted (corrupt, unsupported dtype) *failed*, and the others go on. Failed files are
listed, one ``{path}\\t{reason}`` a line, in ``convert_failed_file_list.txt`` in the output folder (replaced on each
run that has failures).

Overwriting. Every output name is worked out before anything is written; if any of them exists, nothing is written
and ConfigError lists them, unless ``force=True``. The files of one call (the failed-file list included) are built
in a private temporary folder per output folder and moved into place together at the end (`_io.file_set`): an
error, Ctrl-C or SIGTERM part way leaves none of them, and an output folder the call created is removed again if
nothing was published in it. A file that fails to convert only drops its own outputs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence, Union

import numpy as np

from dumpcmp.support import files as _io
from dumpcmp.dumps import layout, naming
from dumpcmp.dumps.dump import FORMATS, Tensor, TensorData, data_type_of, open_dump, write_dump
from dumpcmp.dumps.ground_truth import framework_output, load_npy
from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NamingError, NotFoundError

__all__ = [
    "FAILED_LIST", "FILE_TYPES", "KINDS", "TARGETS", "TYPES", "ConversionReport", "Output", "Problem", "convert",
    "convert_tensor", "dump_to_npy", "format_convert", "npy_to_dump", "parse_shape", "shape_convert",
    "tensor_text_format", "view", "write_txt",
]

#: -type values: framework dumps (quant, tf, caffe) and device dumps (offline model, functional simulation)
TYPES = ("quant", "tf", "caffe", "offline", "sim")
TARGETS = ("numpy", "dump")
KINDS = ("output", "input")
FAILED_LIST = "convert_failed_file_list.txt"
#: the original's ``convert -t``: .npy named with the shape, raw values (.bin), .npy named with the format (msnpy)
FILE_TYPES = ("npy", "bin", "msnpy")

_DEVICE_TYPES = ("offline", "sim")
_EXTENSION = {"quant": naming.QUANT, "tf": naming.PB, "caffe": naming.PB}
_FAMILY_4D = ("NCHW", "NHWC", "HWCN", "CHWN")
_FAMILY_5D = ("NCDHW", "NDHWC", "DHWCN")
_EXPECTED = {
    naming.DEVICE: "NPU dumps {op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}",
    naming.PB: "framework dumps {op_name}.{output_index}.{timestamp}.pb",
    naming.QUANT: "quantized Caffe dumps {op_name}.{output_index}.{timestamp}.quant",
    naming.NPY: "{op_name}.{output_index}.{timestamp}.npy",
}
_FORMAT_BY_NUMBER = {number: name for name, number in FORMATS.items()}
_FORMAT_BY_UPPER = {name.upper(): name for name in FORMATS}

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Output:
    """A file written: where, which tensor (kind, index), its array's shape and dtype, and a note (e.g. why the
    dump's original shape was not used)."""

    path: str
    kind: str
    index: int
    shape: tuple[int, ...]
    dtype: str
    source: str = ""
    note: str = ""


@dataclass(frozen=True)
class Problem:
    """An input file that was skipped (its name does not fit) or failed (it fits but could not be converted)."""

    path: str
    reason: str


@dataclass
class ConversionReport:
    """What a folder (or file) conversion did. `ok` is False when a file failed or nothing was converted."""

    source: str
    out_dir: str
    converted: list[str] = field(default_factory=list)     # input files converted
    written: list[Output] = field(default_factory=list)
    skipped: list[Problem] = field(default_factory=list)
    failed: list[Problem] = field(default_factory=list)
    failed_list: str | None = None                          # path of convert_failed_file_list.txt, if written

    @property
    def ok(self) -> bool:
        return not self.failed and bool(self.converted)

    def summary(self) -> str:
        s = "" if len(self.converted) == 1 else "s"
        w = "" if len(self.written) == 1 else "s"
        text = (f"{len(self.converted)} file{s} converted into {len(self.written)} file{w} in {self.out_dir}, "
                f"{len(self.skipped)} skipped, {len(self.failed)} failed")
        if self.failed_list:
            text += f" (listed in {self.failed_list})"
        return text


# --- small helpers -------------------------------------------------------------------------------------------------

def parse_shape(text: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``1,3,224,224`` (the original tool's ``-shape``) -> (1, 3, 224, 224); every dim must be > 0."""
    if text is None:
        return None
    if isinstance(text, str):
        parts = text.replace(" ", "").split(",")
        if not all(p.isascii() and p.isdigit() for p in parts):
            raise ConfigError(f"-shape {text!r}: expected positive integers separated by commas, like 1,3,224,224")
        dims = tuple(int(p) for p in parts)
    else:
        try:
            dims = tuple(int(d) for d in text)
        except (TypeError, ValueError):
            raise ConfigError(f"shape {text!r}: expected a sequence of positive integers") from None
    if not dims or any(d <= 0 for d in dims):
        raise ConfigError(f"shape {text!r}: every dimension must be greater than 0")
    return dims


def _format_name(fmt: str) -> str:
    name = _FORMAT_BY_UPPER.get(str(fmt).upper())
    if name is None:
        raise ConfigError(f"unknown format {fmt!r}; formats are the dump's names: NCHW, NHWC, ND, NC1HWC0, "
                          "FRACTAL_Z, FRACTAL_NZ, ...")
    return name


def _save_atomic(path: str, write: Callable[[str], Any], force: bool) -> None:
    """Write through `write(tmp_path)` (a private temporary beside `path`), then take `path`'s name: the file
    appears whole or not at all, never through a symlink, never over a file unless `force`."""
    _io.atomic_write_path(path, write, force=force)


def _write_npy(path: str, array: np.ndarray, force: bool) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
    _save_atomic(path, write, force)


def _check_free(paths: Iterable[str], force: bool) -> None:
    if force:
        return
    taken = [p for p in paths if os.path.lexists(p)]
    if taken:
        raise _io.exists_error(taken, "converted files")


def _check_out(out_dir: PathLike) -> str:
    out = os.fspath(out_dir)
    if os.path.lexists(out) and not os.path.isdir(out):
        raise ConfigError(f"{out}: exists and is not a folder")
    return out


class _Staging:
    """The outputs of one invocation, built in a private temporary folder per output folder (`_io.file_set`) and
    moved into place together when the invocation ends: an error, Ctrl-C or SIGTERM leaves none of them."""

    def __init__(self, stack: contextlib.ExitStack, force: bool, created: list[str]) -> None:
        self.stack, self.force, self.created = stack, force, created
        self.sets: dict[str, _io.FileSet] = {}
        self.long: list[tuple[str, str, str, str]] = []  # (folder, name, suffix, final path) of hashed names

    def path(self, folder: str, name: str, suffix: str) -> tuple[str, str]:
        """(where to write now, the final path) of the output `folder/name` (hashed when too long)."""
        if folder not in self.sets:
            _io.make_folder(folder, self.created)
            self.sets[folder] = self.stack.enter_context(_io.file_set(folder, force=self.force,
                                                                      what="converted files"))
        on_disk = naming.planned_file_name(name, suffix)
        final = os.path.join(folder, on_disk)
        if on_disk != name:
            self.long.append((folder, name, suffix, final))
        return self.sets[folder].path(on_disk), final


@contextlib.contextmanager
def _staging(out_dir: PathLike, force: bool) -> Iterator[tuple[str, _Staging]]:
    """``with _staging(out) as (out, staging)``: `out` created if missing (and removed again if the invocation
    publishes nothing in it); every file written through `staging` appears at the end, all together, or none."""
    out = _check_out(out_dir)
    with _io.made_folder(out) as created, contextlib.ExitStack() as stack:
        staging = _Staging(stack, force, created)
        yield out, staging
    for folder, name, suffix, final in staging.long:  # the mapping.csv rows of the names that were published
        if os.path.lexists(final):
            naming.safe_file_name(name, folder, suffix)


def _discard(paths: Iterable[str]) -> None:
    for p in paths:
        _io.discard(p)




# --- one tensor to a format ----------------------------------------------------------------------------------------

def _candidate_formats(tensor: Tensor, dst: str) -> list[str]:
    """Orders the original shape may be written in, most likely first: the original op's format, the target's,
    then NCHW/NCDHW and the rest of the family. A candidate is used only if it fits the device shape."""
    rank = len(tensor.original_shape or ())
    family = _FAMILY_4D if rank == 4 else _FAMILY_5D if rank == 5 else ()
    out: list[str] = []
    op = tensor.original_op
    if isinstance(op, dict) and op.get("format") is not None:
        name = _FORMAT_BY_NUMBER.get(int(op["format"]))
        if name in family:
            out.append(name)
    if dst in family:
        out.append(dst)
    out.extend(family)
    out.append("ND")  # FRACTAL_NZ's original shape is the matrix's own, in no particular axis order
    return list(dict.fromkeys(out))


def _fits(src: str, src_shape: tuple[int, ...], dst: str, plain: tuple[int, ...], groups: int) -> bool:
    """True if encoding `plain` (in `dst`'s order) gives back exactly the dumped device shape."""
    try:
        return tuple(layout.device_shape(src, dst, plain, c0=src_shape[-1], groups=groups)) == src_shape
    except DumpcmpError:
        return False


def _decode_shape(tensor: Tensor, src: str, dst: str, src_shape: tuple[int, ...], target: tuple[int, ...] | None,
                  groups: int, padded: bool, where: str) -> tuple[tuple[int, ...], str]:
    """The plain shape to decode a device tensor into, and a note when the dump's original shape was unusable."""
    def infer(original: Sequence[int] | None, original_format: str | None, pad: bool = False) -> tuple[int, ...]:
        return tuple(layout.plain_shape(src, src_shape, dst, original_shape=original,
                                        original_format=original_format, groups=groups, padded=pad))

    if target is not None:
        try:
            plain = infer(target, dst)
        except layout.LayoutError as error:
            raise layout.LayoutError(f"{where}: -shape {list(target)} does not fit: {error}") from None
        if not _fits(src, src_shape, dst, plain, groups):
            raise layout.LayoutError(f"{where}: -shape {list(target)} does not fit the {src} shape "
                                     f"{list(src_shape)} as {dst}")
        return plain, ""
    note = ""
    original = tensor.original_shape
    if original:
        for candidate in _candidate_formats(tensor, dst):
            try:
                plain = infer(original, candidate)
            except layout.LayoutError:
                continue
            if _fits(src, src_shape, dst, plain, groups):
                return plain, ""
        note = (f"original shape {list(original)} does not fit the {src} shape {list(src_shape)} in any axis "
                "order; ignored")
    try:
        return infer(None, None, padded), note
    except layout.LayoutError as error:
        hint = f" ({note})" if note else ""
        raise layout.LayoutError(f"{where}: {error}{hint}; pass -shape with the {dst} shape"
                                 + ("" if src.startswith("FRACTAL_Z") else " or --padded")) from None


def convert_tensor(tensor: Tensor, fmt: str, *, shape: Sequence[int] | str | None = None,
                   custom: Union[None, PathLike, layout.Converters] = None, padded: bool = False,
                   threads: int = 0) -> tuple[np.ndarray, str]:
    """One dump tensor in format `fmt`, and a note (empty unless the dump's original shape had to be ignored).

    shape: the target shape in `fmt`'s axis order (the original tool's ``-shape``): fixes the crop of FRACTAL_NZ
        and FRACTAL_Z's H and W when the dump has no usable original shape. Otherwise the dump's original shape is
        used when it fits the device shape in some axis order (the original op's format, `fmt`, NCHW, ...).
    custom: a folder with ``format_convert/convert_{FROM}_to_{TO}.py`` (or `layout.Converters`); a converter for
        this pair runs instead of the built-in one and gets `shape` (or the built-in's target shape, or the dump's
        original shape) as ``shape_to``.
    padded: keep the device padding when the crop is unknown (NC1HWC0's channels, FRACTAL_NZ's M and N).
    """
    where = f"{tensor.path}: {tensor.kind} {tensor.index}"
    src, dst = _format_name(tensor.format), _format_name(fmt)
    target = parse_shape(shape)
    try:
        array = tensor.array()
    except DumpcmpError as error:
        raise DumpError(f"{where}: {error}") from None
    src_shape = tuple(int(d) for d in array.shape)
    groups = layout.groups_of(tensor)
    converters = layout.Converters(custom) if custom is not None and not isinstance(custom, layout.Converters) \
        else custom

    src_device = src in layout.DEVICE_FORMATS
    if converters is not None and (src, dst) in converters:
        shape_to: Sequence[int] | None = target
        note = ""
        if shape_to is None and src_device and dst in layout.PLAIN_FORMATS:
            try:
                shape_to, note = _decode_shape(tensor, src, dst, src_shape, None, groups, padded, where)
            except layout.LayoutError:
                shape_to = tensor.original_shape
        elif shape_to is None:
            shape_to = tensor.original_shape
        return converters.apply(src, dst, array, src_shape, shape_to), note

    if src == dst:
        return np.array(array, copy=True, order="C"), ""
    try:
        if dst in layout.DEVICE_FORMATS or not src_device:
            # encoding needs no crop; a plain permutation keeps every element
            out = layout.convert(array, src, dst, groups=groups, threads=threads)
            if target is not None and tuple(out.shape) != target:
                raise layout.LayoutError(f"{where}: the {dst} result has shape {list(out.shape)}, not the "
                                         f"-shape {list(target)}")
            return out, ""
        plain, note = _decode_shape(tensor, src, dst, src_shape, target, groups, padded, where)
        plan = layout.make_plan(src, src_shape, dst, plain, itemsize=array.dtype.itemsize, groups=groups)
        out = np.empty(plain, dtype=array.dtype)
        plan.run(np.ascontiguousarray(array), out, int(threads))
        return out, note
    except layout.LayoutError as error:
        message = str(error)
        raise layout.LayoutError(message if message.startswith(tensor.path) else f"{where}: {message}") from None
    except ValueError as error:  # the core's plan: a shape that does not fit
        raise layout.LayoutError(f"{where}: {error}") from None


def _select(dump: Any, kind: str, index: int | None) -> list[Tensor]:
    if kind not in KINDS:
        raise ConfigError(f"tensor kind must be 'input' or 'output', not {kind!r}")
    tensors = dump.tensors(kind)
    if index is None:
        if not tensors:
            raise NotFoundError(f"{dump.path}: the dump has no {kind} tensor")
        return list(tensors)
    if not 0 <= index < len(tensors):
        raise NotFoundError(f"{dump.path}: no {kind} {index} (the dump has {len(tensors)} {kind}"
                            f"{'s' * (len(tensors) != 1)})")
    return [tensors[index]]


def shape_convert(dump_path: PathLike, fmt: str, out_dir: PathLike, *, shape: Sequence[int] | str | None = None,
                  tensor: str = "output", index: int | None = None,
                  custom: Union[None, PathLike, layout.Converters] = None, padded: bool = False,
                  force: bool = False, threads: int = 0) -> list[Output]:
    """The original tool's shape_conversion: the dump's `tensor` tensors (all, or the one at `index`) in format
    `fmt`, each written as ``{dump_file_name}.{tensor}.{index}.{1x3x224x224}.npy`` in `out_dir` (created if
    missing). See `convert_tensor` for `shape`, `custom` and `padded`. Every tensor is converted before anything
    is written; existing files are refused unless `force`.
    """
    path = os.fspath(dump_path)
    _format_name(fmt)
    dump = open_dump(path)
    chosen = _select(dump, tensor, index)
    converters = layout.Converters(custom) if custom is not None and not isinstance(custom, layout.Converters) \
        else custom
    _check_out(out_dir)
    original = os.path.basename(path)
    results: list[tuple[str, np.ndarray, Tensor, str]] = []
    for t in chosen:
        array, note = convert_tensor(t, fmt, shape=shape, custom=converters, padded=padded, threads=threads)
        name = naming.build_converted_name(original, t.kind, t.index, array.shape if array.ndim else None)
        results.append((name, array, t, note))
    written = []
    with _staging(out_dir, force) as (out, staging):
        targets = [os.path.join(out, naming.planned_file_name(name, ".npy")) for name, *_ in results]
        _check_free(targets, force)
        for name, array, t, note in results:
            staged, target = staging.path(out, name, ".npy")
            _write_npy(staged, array, force)
            written.append(Output(target, t.kind, t.index, tuple(array.shape), str(array.dtype), path, note))
    return written


def _sources(source: PathLike | Sequence[PathLike]) -> list[str]:
    """A file, a folder or a list of them (the original's ``-d a,b``: a list of files)."""
    items = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not items:
        raise ConfigError("no dump file given")
    return [os.fspath(s) for s in items]


def _converted_file(dump: Any, t: Tensor, array: np.ndarray, fmt: str | None, file_type: str) -> tuple[str, str]:
    """(file name, suffix) of one converted tensor: see `format_convert`."""
    original = os.path.basename(dump.path)
    out_format = _format_name(t.format) if fmt is None else fmt
    if file_type == "bin":
        shape = (array.size,) if fmt is None else array.shape
        # the dump's type, as the original names it: bf16 values are written as float32 but named bfloat16
        dtype = "bfloat16" if t.data_type == "BF16" else str(array.dtype)
        return naming.build_bin_name(original, t.kind, t.index, shape, dtype, out_format), ".bin"
    if file_type == "msnpy":
        return naming.build_msnpy_name(original, dump.op_name, t.kind, t.index, out_format), ".npy"
    shape = None if fmt is None or array.ndim == 0 else array.shape
    return naming.build_converted_name(original, t.kind, t.index, shape), ".npy"


def _write_bin(path: str, array: np.ndarray, force: bool) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "wb") as handle:
            np.ascontiguousarray(array).tofile(handle)
    _save_atomic(path, write, force)


def format_convert(source: PathLike | Sequence[PathLike], fmt: str | None, out_dir: PathLike, *,
                   shape: Sequence[int] | str | None = None, tensor: str | None = None, index: int | None = None,
                   custom: Union[None, PathLike, layout.Converters] = None, file_type: str = "npy",
                   force: bool = False, threads: int = 0) -> ConversionReport:
    """The original tool's ``convert -d DUMPS [-f FMT] -t npy|bin|msnpy``: every input, then every output of each
    NPU dump (a file, a folder tree, or a list of files) converted to `fmt` by `convert_tensor` (None: kept in the
    stored layout and shape), one file each in `out_dir` (a folder's subfolders mirrored):

    - ``npy``: ``{dump}.{kind}.{i}.{1x3x224x224}.npy`` (with `fmt`; the `shape_convert` name), or
      ``{dump}.{kind}.{i}.npy`` (without);
    - ``bin``: the values, raw, as ``{dump}.{kind}.{i}.{1_3_224_224}.{dtype}.{format}.bin`` (without `fmt`: the
      element count for the shape and the stored format);
    - ``msnpy``: ``{dump}.{kind}.{i}.{format}.npy`` (`naming.build_msnpy_name`).

    A FRACTAL_NZ tensor asked for in NCHW or NHWC is written as its matrix (ND), as the original does, the file
    named with `fmt`.

    `tensor` and `index` pick one tensor, `shape` is the target shape (see `convert_tensor`); the three only apply
    to a single file. A tensor or dump that cannot be converted is listed in ``report.failed`` (and in
    ``convert_failed_file_list.txt``) while the others are written, as the original does; bad arguments, an output
    file that exists (without `force`) or two inputs naming one output raise ConfigError and write nothing.
    """
    if file_type not in FILE_TYPES:
        raise ConfigError(f"-t {file_type}: the output type is one of {', '.join(FILE_TYPES)}")
    fmt = None if fmt is None else _format_name(fmt)
    if fmt is None and (shape is not None or tensor is not None or custom is not None):
        raise ConfigError("-shape, -tensor/-index and -custom take effect only with a target format (-format)")
    if index is not None and tensor is None:
        tensor = "output"
    if tensor is not None and tensor not in KINDS:
        raise ConfigError(f"tensor kind must be 'input' or 'output', not {tensor!r}")
    if index is not None and index < 0:
        raise ConfigError(f"tensor index {index}: must be 0 or more")
    parse_shape(shape)
    sources = _sources(source)
    out = _check_out(out_dir)
    if len(sources) > 1 or not os.path.isfile(sources[0]):
        if shape is not None or tensor is not None:
            raise ConfigError("-shape and -tensor/-index (the original's -s, -o, -i) apply to a single dump file, "
                              f"not to {', '.join(sources)}")
    converters = layout.Converters(custom) if custom is not None and not isinstance(custom, layout.Converters) \
        else custom
    report = ConversionReport(", ".join(sources), out)
    with _staging(out, force) as (out, staging):
        seen: set[str] = set()
        for src in sources:
            for path, rel in _walk(src, out):
                _format_one(path, os.path.join(out, rel), fmt, shape, tensor, index, converters, file_type, force,
                            threads, staging, seen, report)
        report.failed.sort(key=lambda p: p.path)
        if report.failed:
            staged_list, report.failed_list = staging.path(out, FAILED_LIST, "")
            _check_free([report.failed_list], force)
            with _io.open_atomic(staged_list, force=True, what="failed-file list", mode="w",
                                 encoding="utf-8", errors="surrogateescape") as handle:
                for p in report.failed:
                    handle.write(f"{p.path}\t{' '.join(p.reason.split())}\n")
    return report


def _target_of(t: Tensor, fmt: str, converters: layout.Converters | None) -> str:
    """The layout a tensor is converted to for `format_convert`'s `fmt`: a FRACTAL_NZ matrix has no 4-D form, so
    NCHW and NHWC give it as the matrix (ND), as the original's FRACTAL_NZ_to_NCHW/NHWC do (unless a user converter
    for that pair is given)."""
    src = _format_name(t.format)
    if src == "FRACTAL_NZ" and fmt in ("NCHW", "NHWC") and not (converters is not None and (src, fmt) in converters):
        return "ND"
    return fmt


def _without(message: str, prefix: str) -> str:
    """`message` without a leading ``{prefix}: `` (the caller names the file and tensor once)."""
    return message[len(prefix) + 2:] if message.startswith(prefix + ": ") else message


def _format_one(path: str, folder: str, fmt: str | None, shape: Sequence[int] | str | None, tensor: str | None,
                index: int | None, converters: layout.Converters | None, file_type: str, force: bool, threads: int,
                staging: _Staging, seen: set[str], report: ConversionReport) -> None:
    """One dump of `format_convert`: its tensors written through `staging`, the ones that fail reported."""
    try:
        dump = open_dump(path)
    except DumpcmpError as error:
        report.failed.append(Problem(path, _without(str(error), path)))
        return
    # -tensor/-index name one file's tensor: one that is not there stops the run (NotFoundError)
    chosen = _select(dump, tensor, index) if tensor is not None else \
        [t for kind in ("input", "output") for t in dump.tensors(kind)]
    if not chosen:
        report.skipped.append(Problem(path, "the dump has no input or output tensor"))
        return
    bad = False
    for t in chosen:
        try:
            if fmt is None:
                array, note = t.array(), ""  # stored layout and shape
            else:
                array, note = convert_tensor(t, _target_of(t, fmt, converters), shape=shape, custom=converters,
                                             threads=threads)
        except DumpcmpError as error:
            message = _without(_without(str(error), path), f"{t.kind} {t.index}")
            report.failed.append(Problem(path, f"{t.kind} {t.index}: {message}"))
            bad = True
            continue
        name, suffix = _converted_file(dump, t, array, fmt, file_type)
        staged, target = staging.path(folder, name, suffix)
        if target in seen:
            raise ConfigError(f"{target}: two input files would both be written to this file")
        seen.add(target)
        _check_free([target], force)
        (_write_bin if file_type == "bin" else _write_npy)(staged, array, force)
        report.written.append(Output(target, t.kind, t.index, tuple(array.shape), str(array.dtype), path, note))
    if not bad:
        report.converted.append(path)


# --- folders -------------------------------------------------------------------------------------------------------

def _walk(source: str, out_dir: str) -> Iterator[tuple[str, str]]:
    """(file path, its folder relative to `source`) for every file, sorted, not descending into `out_dir`."""
    if os.path.isfile(source):
        yield source, ""
        return
    if not os.path.isdir(source):
        raise NotFoundError(f"{source}: no such file or folder")
    skip = os.path.realpath(out_dir)
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if os.path.realpath(os.path.join(folder, d)) != skip)
        rel = os.path.relpath(folder, source)
        for f in sorted(files):
            if f in naming.BOOKKEEPING_FILES:
                continue
            yield os.path.join(folder, f), "" if rel == "." else rel


@dataclass
class _Job:
    """One unit of work: the input files it consumes and what it writes."""

    sources: list[str]
    folder: str                                 # output folder
    names: list[str]                            # output file names (unhashed)
    run: Callable[[list[str]], list[Output]]    # gets the final paths


def _check_type(type: str) -> str:
    if type not in TYPES:
        raise ConfigError(f"-type must be one of {', '.join(TYPES)}, not {type!r}")
    return type


def _execute(source: str, out: str, jobs: list[_Job], report: ConversionReport, force: bool,
             suffix: str) -> ConversionReport:
    """Run the jobs, one bad file not stopping the others; the files of every job that succeeded, and the failed-file
    list, appear at the end all together (or, on an error, Ctrl-C or SIGTERM, none of them)."""
    with _staging(out, force) as (out, staging):
        _run_jobs(out, jobs, report, force, suffix, staging)
    return report


def _run_jobs(out: str, jobs: list[_Job], report: ConversionReport, force: bool, suffix: str,
              staging: _Staging) -> None:
    planned = [os.path.join(job.folder, naming.planned_file_name(n, suffix)) for job in jobs for n in job.names]
    seen: set[str] = set()
    for p in planned:
        if p in seen:  # two inputs naming one output: refuse rather than silently keep one
            raise ConfigError(f"{p}: two input files would both be written to this file")
        seen.add(p)
    _check_free(planned + [os.path.join(out, FAILED_LIST)], force)
    for job in jobs:
        staged: list[str] = []
        try:
            for n in job.names:
                staged.append(staging.path(job.folder, n, suffix)[0])
            final = {s: os.path.join(job.folder, os.path.basename(s)) for s in staged}
            outputs = job.run(staged)
            report.written.extend(dataclasses.replace(o, path=final.get(o.path, o.path)) for o in outputs)
            report.converted.extend(job.sources)
        except (DumpcmpError, OSError) as error:
            _discard(staged)  # a job is converted whole or not at all
            reason = str(error) if isinstance(error, DumpcmpError) else f"{error.strerror or error}"
            report.failed.extend(Problem(s, reason) for s in job.sources)
    report.failed.sort(key=lambda p: p.path)
    if report.failed:
        staged_list, report.failed_list = staging.path(out, FAILED_LIST, "")
        with _io.open_atomic(staged_list, force=True, what="failed-file list", mode="w",
                             encoding="utf-8", errors="surrogateescape") as handle:
            for p in report.failed:
                handle.write(f"{p.path}\t{' '.join(p.reason.split())}\n")


def _tensor_names(dump: Any, original: str) -> list[tuple[str, str, int]]:
    """(converted file name, kind, index) of every output, then every input."""
    return [(naming.build_converted_name(original, t.kind, t.index), t.kind, t.index)
            for kind in KINDS for t in dump.tensors(kind)]


def _save_tensors(source: str, tensors: list[tuple[str, str, int]],
                  force: bool) -> Callable[[list[str]], list[Output]]:
    # the dump is opened again here rather than kept from planning: a folder may hold more dumps than the
    # process may keep open
    def run(paths: list[str]) -> list[Output]:
        dump = open_dump(source)
        written = []
        for path, (_, kind, index) in zip(paths, tensors):
            array = dump.tensor(kind, index).array()
            _write_npy(path, array, force)
            written.append(Output(path, kind, index, tuple(array.shape), str(array.dtype), source))
        return written
    return run


def dump_to_npy(source: PathLike, out_dir: PathLike, *, type: str = "offline", force: bool = False) -> ConversionReport:
    """``-target numpy``: dumps (a file, or every file of a folder tree) to ``.npy`` files; see the module doc."""
    type = _check_type(type)
    src, out = os.fspath(source), _check_out(out_dir)
    report = ConversionReport(src, out)
    jobs: list[_Job] = []
    for path, rel in _walk(src, out):
        name = naming.file_name_of(path)
        scheme = naming.classify(name)
        want = naming.DEVICE if type in _DEVICE_TYPES else _EXTENSION[type]
        if scheme != want:
            what = "fits no naming scheme" if scheme is None else f"is a {scheme} file name"
            report.skipped.append(Problem(path, f"{name!r} {what}; -type {type} converts {_EXPECTED[want]}"))
            continue
        parsed = naming.parse_name(name)
        folder = os.path.join(out, rel)
        if type in _DEVICE_TYPES:
            try:
                tensors = _tensor_names(open_dump(path), name)
            except DumpcmpError as error:
                report.failed.append(Problem(path, str(error)))
                continue
            if not tensors:
                report.skipped.append(Problem(path, "the dump has no input or output tensor"))
                continue
            jobs.append(_Job([path], folder, [n for n, _, _ in tensors], _save_tensors(path, tensors, force)))
            continue
        index = parsed.output_index  # type: ignore[union-attr]
        npy = naming.FrameworkDumpName(parsed.op_name, index, parsed.timestamp).build()  # type: ignore[union-attr]
        jobs.append(_Job([path], folder, [npy], _save_framework_output(path, index, force)))
    return _execute(src, out, jobs, report, force, ".npy")


def _save_framework_output(source: str, index: int, force: bool) -> Callable[[list[str]], list[Output]]:
    def run(paths: list[str]) -> list[Output]:
        _, t = framework_output(open_dump(source), index, source)  # the ground-truth readers' output-index rule
        array = t.array()
        _write_npy(paths[0], array, force)
        return [Output(paths[0], t.kind, t.index, tuple(array.shape), str(array.dtype), source)]
    return run


def _plain_format(array: np.ndarray, type: str) -> str:
    if array.ndim == 4:
        return "NHWC" if type == "tf" else "NCHW"
    if array.ndim == 5:
        return "NDHWC" if type == "tf" else "NCDHW"
    return "ND"


def _load_npy(path: str) -> np.ndarray:
    array = load_npy(path)  # the header checked against the file size first
    if not isinstance(array, np.ndarray):
        raise DumpError(f"{path}: holds several arrays (.npz), not one")
    try:
        data_type_of(array)
    except DumpError:
        raise DumpError(f"{path}: arrays of dtype {array.dtype} cannot be written to a dump") from None
    return array


def _tensor(array: np.ndarray, type: str) -> TensorData:
    return TensorData(array, format=_plain_format(array, type), original_shape=array.shape)


def npy_to_dump(source: PathLike, out_dir: PathLike, *, type: str = "caffe", op_type: str = "Npy",
                force: bool = False) -> ConversionReport:
    """``-target dump``: ``{op_name}.{output_index}.{timestamp}.npy`` files (a file, or a folder tree) to dump
    files; see the module doc for the names per `type`. `op_type` names the op type of offline/sim dumps."""
    type = _check_type(type)
    src, out = os.fspath(source), _check_out(out_dir)
    report = ConversionReport(src, out)
    jobs: list[_Job] = []
    by_folder: dict[tuple[str, str], list[tuple[naming.FrameworkDumpName, str]]] = {}
    for path, rel in _walk(src, out):
        name = naming.file_name_of(path)
        try:
            parsed = naming.parse_framework_dump_name(name, (naming.NPY,))
        except NamingError:
            report.skipped.append(Problem(path, f"{name!r} is not named {_EXPECTED[naming.NPY]}"))
            continue
        folder = os.path.join(out, rel)
        if type in _DEVICE_TYPES:
            by_folder.setdefault((folder, parsed.op_name), []).append((parsed, path))
            continue
        dump_name = naming.FrameworkDumpName(parsed.op_name, parsed.output_index, parsed.timestamp,
                                             _EXTENSION[type]).build()

        def run(paths: list[str], path: str = path, parsed: naming.FrameworkDumpName = parsed) -> list[Output]:
            array = _load_npy(path)
            _save_atomic(paths[0], lambda tmp: write_dump(tmp, op_name=parsed.op_name, outputs=[_tensor(array, type)],
                                                          dump_time=parsed.timestamp), force)
            return [Output(paths[0], "output", 0, tuple(array.shape), str(array.dtype), path)]
        jobs.append(_Job([path], folder, [dump_name], run))

    for (folder, op), files in by_folder.items():
        newest = naming.newest_by_key(files, key=lambda f: f[0].output_index, timestamp=lambda f: f[0].timestamp,
                                      tie=lambda f: f[1])
        kept = {id(f) for f in newest.values()}
        for f in files:
            if id(f) not in kept:
                winner = newest[f[0].output_index][1]
                report.skipped.append(Problem(f[1], f"output {f[0].output_index} of {op} has a newer file: {winner}"))
        indices = sorted(newest)
        chosen = [newest[i] for i in indices]
        sources = [p for _, p in chosen]
        if indices != list(range(len(indices))):
            missing = sorted(set(range(indices[-1] + 1)) - set(indices))
            report.failed.extend(Problem(p, f"op {op} has files for outputs {indices} but none for output "
                                            f"{missing[0]}: a dump holds outputs 0..n-1") for p in sources)
            continue
        timestamp = max(parsed.timestamp for parsed, _ in chosen)
        try:
            dump_name = naming.build_device_dump_name(op_type, op, 0, timestamp)
        except NamingError as error:
            raise ConfigError(f"op type {op_type!r}: {error}") from None

        def run_op(paths: list[str], chosen: list[tuple[naming.FrameworkDumpName, str]] = chosen,
                   op: str = op, timestamp: int = timestamp) -> list[Output]:
            arrays = [_load_npy(p) for _, p in chosen]
            _save_atomic(paths[0], lambda tmp: write_dump(tmp, op_name=op, dump_time=timestamp,
                                                          outputs=[_tensor(a, type) for a in arrays]), force)
            return [Output(paths[0], "output", i, tuple(a.shape), str(a.dtype), p)
                    for i, (a, (_, p)) in enumerate(zip(arrays, chosen))]
        jobs.append(_Job(sources, folder, [dump_name], run_op))
    report.skipped.sort(key=lambda p: p.path)
    return _execute(src, out, jobs, report, force, "")


def convert(type: str, target: str, source: PathLike, out_dir: PathLike, *, force: bool = False,
            op_type: str = "Npy") -> ConversionReport:
    """The original tool's dump_data_conversion: `target` ``numpy`` (`dump_to_npy`) or ``dump`` (`npy_to_dump`)."""
    if target not in TARGETS:
        raise ConfigError(f"-target must be numpy or dump, not {target!r}")
    if target == "numpy":
        return dump_to_npy(source, out_dir, type=type, force=force)
    return npy_to_dump(source, out_dir, type=type, op_type=op_type, force=force)


# --- text ----------------------------------------------------------------------------------------------------------

def tensor_text_format(dtype: Any) -> str:
    """The %-format that writes one value of `dtype` so that it reads back exactly."""
    dt = np.dtype(dtype)
    if dt.kind in "biu":
        return "%d"
    if dt.kind in "fc":
        digits = {2: 5, 4: 9, 8: 17}.get(dt.itemsize if dt.kind == "f" else dt.itemsize // 2)
        if digits is None:
            raise DumpError(f"no exact text form for dtype {dt}")
        return f"%.{digits}g"
    raise DumpError(f"no text form for dtype {dt}")


def write_txt(path: PathLike, array: np.ndarray, *, force: bool = False, chunk: int = 1 << 20) -> str:
    """Write `array`'s values in C order, one a line (see `tensor_text_format`); complex as ``(re+imj)``."""
    fmt = tensor_text_format(array.dtype)
    flat = np.asarray(array).reshape(-1)
    complex_values = flat.dtype.kind == "c"
    imag_fmt = fmt.replace("%", "%+")

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="ascii") as handle:
            for start in range(0, flat.size, chunk):
                values = flat[start:start + chunk].tolist()
                if complex_values:
                    lines = [f"({fmt % v.real}{imag_fmt % v.imag}j)" for v in values]
                else:
                    lines = [fmt % v for v in values]
                handle.write("\n".join(lines))
                handle.write("\n")
    path = os.fspath(path)
    _save_atomic(path, write, force)
    return path


def view(dump_path: PathLike, out_dir: PathLike, *, txt: bool = False, force: bool = False) -> list[Output]:
    """Every output and input of one dump as ``{dump_file_name}.{kind}.{i}.npy`` (stored layout and shape) and,
    with `txt`, ``.txt`` beside it, one value a line. Existing files are refused unless `force`."""
    path = os.fspath(dump_path)
    dump = open_dump(path)
    tensors = _tensor_names(dump, os.path.basename(path))
    if not tensors:
        raise NotFoundError(f"{path}: the dump has no input or output tensor")
    written: list[Output] = []
    with _staging(out_dir, force) as (out, staging):
        _view_into(dump, path, out, tensors, txt, force, staging, written)
    return written


def _view_into(dump: Any, path: str, out: str, tensors: list[tuple[str, str, int]], txt: bool, force: bool,
               staging: _Staging, written: list[Output]) -> None:
    files = [(name, name[:-len(".npy")] + ".txt") for name, _, _ in tensors]
    planned = [os.path.join(out, naming.planned_file_name(npy, ".npy")) for npy, _ in files]
    if txt:
        planned += [os.path.join(out, naming.planned_file_name(text, ".txt")) for _, text in files]
    _check_free(planned, force)
    for (npy, text), (_, kind, index) in zip(files, tensors):
        try:
            array = dump.tensor(kind, index).array()
        except DumpcmpError as error:
            raise DumpError(f"{path}: {kind} {index}: {error}") from None
        staged, target = staging.path(out, npy, ".npy")
        _write_npy(staged, array, force)
        written.append(Output(target, kind, index, tuple(array.shape), str(array.dtype), path))
        if txt:
            staged, target = staging.path(out, text, ".txt")
            write_txt(staged, array, force=force)
            written.append(Output(target, kind, index, tuple(array.shape), str(array.dtype), path))
