"""Device tensor layouts: decode NC1HWC0, FRACTAL_Z, FRACTAL_NZ, ... into plain NCHW/ND tensors and back.

    >>> import numpy as np, dumpcmp.dumps.layout as L
    >>> dev = np.zeros((1, 2, 5, 5, 16), np.float16)                       # NC1HWC0, C0 = 16
    >>> L.convert(dev, "NC1HWC0", "NCHW", original_shape=(1, 20, 5, 5)).shape
    (1, 20, 5, 5)
    >>> L.convert(np.ones((1, 20, 5, 5), np.float16), "NCHW", "NC1HWC0").shape
    (1, 2, 5, 5, 16)

The work is done by the C++ core (dumpcmp/layout.hpp): any element size of 1, 2, 4 or 8 bytes (every NumPy numeric
dtype, bool, and ml_dtypes' bfloat16/fp8), all threads, without the GIL. Formats follow the spec (layouts.md):

* device formats NC1HWC0, NC1HWC0_C04, FRACTAL_Z, FRACTAL_Z_C04 (4-D family), NDC1HWC0, FRACTAL_Z_3D (5-D family),
  FRACTAL_NZ (matrices); C0 is the device shape's last dim, so every C0 works.
* plain formats NCHW, NHWC, HWCN, CHWN (4-D), NCDHW, NDHWC, DHWCN (5-D) and ND (any rank).
* a device format converts to and from every plain format of its family; ND stands for NCHW/NCDHW there. FRACTAL_NZ
  keeps the framework's axis order: it pairs with ND and with any plain format whose rank matches (nothing moves).
* plain formats convert among their family; ND to or from a plain format is the identity.

Which plain layout a dump's device tensor is read in is one rule, `plain_target` (the comparison, single-op
compare, locate, extract and histogram all use it); an original shape of lower rank than the format's family is
padded as the device pads it by `pad_original`.

User converters (the original tool's ``-custom DIR``): ``DIR/format_convert/convert_{FROM}_to_{TO}.py`` defining
``convert(shape_from, shape_to, array)``, which takes the 1-D source data and returns a NumPy array, overrides the
built-in conversion of that pair; see :class:`Converters`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Sequence, Union

from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.native import core
from dumpcmp.support.plugins import import_user_file
from dumpcmp.errors import ConfigError, DumpcmpError

__all__ = [
    "DEVICE_FORMATS",
    "FIVE_D",
    "LETTERED",
    "PLAIN_FORMATS",
    "Converters",
    "LayoutError",
    "groups_of",
    "group_count",
    "convert",
    "default_c0",
    "device_shape",
    "make_plan",
    "pad_original",
    "plain_shape",
    "plain_target",
    "supported_pairs",
]

DEVICE_FORMATS = ("NC1HWC0", "NC1HWC0_C04", "FRACTAL_Z", "FRACTAL_Z_C04", "NDC1HWC0", "FRACTAL_Z_3D", "FRACTAL_NZ")
PLAIN_FORMATS = ("NCHW", "NHWC", "HWCN", "CHWN", "NCDHW", "NDHWC", "DHWCN", "ND")
FIVE_D = ("NDC1HWC0", "FRACTAL_Z_3D")  # the device formats of the 5-D (depth) family
LETTERED = tuple(f for f in PLAIN_FORMATS if f != "ND")  # the plain formats that name their axes

Shape = Sequence[int]


class LayoutError(DumpcmpError, ValueError):
    """A conversion that cannot be done: unsupported pair, a shape that does not fit the layout, missing crop."""


def supported_pairs() -> list[tuple[str, str]]:
    """Every (source, destination) format pair the built-in codec converts."""
    return [tuple(p) for p in core.layout.supported_pairs()]


_FORMAT_NAMES = {name.upper(): name for name in core.dtype.formats()}


def _name(fmt: str) -> str:
    """The spec's spelling of a format name, matched case-insensitively (C1HWNCoC0 has a lower-case o)."""
    name = _FORMAT_NAMES.get(str(fmt).upper())
    if name is None:
        raise LayoutError(f"unknown format {fmt!r}")
    return name


def _shape(shape: Shape | None) -> list[int]:
    if shape is None:
        return []
    try:
        return [int(d) for d in shape]
    except (TypeError, ValueError):
        raise LayoutError(f"a shape is a sequence of integers, not {shape!r}") from None


def _core_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except LayoutError:
        raise
    except (ValueError, IndexError) as error:
        raise LayoutError(str(error)) from None


def groups_of(tensor: Any) -> int:
    """The convolution group count a dump tensor's layout needs: its sub_format, for FRACTAL_Z only (other formats
    may carry a sub_format that means something else)."""
    return group_count(tensor.format, tensor.sub_format)


def group_count(fmt: str, sub_format: int) -> int:
    """`groups_of` from a tensor's format and sub_format."""
    return max(1, int(sub_format)) if fmt == "FRACTAL_Z" else 1


def plain_target(device_format: str, origin_format: str | None = None, ndim: int | None = None) -> str:
    """The plain layout a tensor stored in `device_format` is read in: ND for FRACTAL_NZ (it keeps the framework's
    axis order); else the ground truth's layout `origin_format` (the graph's origin format) when it is a lettered
    plain format of the tensor's family, else the family's NCHW or NCDHW. The family is 5-D for NDC1HWC0 and
    FRACTAL_Z_3D, a five-letter plain format, or a ground truth of `ndim` 5 dimensions; 4-D otherwise."""
    if device_format == "FRACTAL_NZ":
        return "ND"
    family5 = device_format in FIVE_D or len(device_format) == 5 or ndim == 5
    origin = (origin_format or "").upper()
    if origin in LETTERED and (len(origin) == 5) == family5:
        return origin
    return "NCDHW" if family5 else "NCHW"


def pad_original(shape: Shape, fmt: str) -> tuple[int, ...]:
    """An original shape of lower rank than `fmt`'s family, padded as the device pads it: (N, C) -> (N, C, 1, 1)."""
    want = 5 if fmt in FIVE_D else 4
    shape = tuple(int(d) for d in shape)
    return shape + (1,) * (want - len(shape)) if len(shape) < want else shape


def default_c0(device_format: str, dtype: Any) -> int:
    """C0 for encoding by the spec's table: 4 for the _C04 formats, 32 for 1-byte types, else 16."""
    if _name(device_format).endswith("_C04"):
        return 4
    return 32 if np.dtype(dtype).itemsize == 1 else 16


def plain_shape(
    src: str,
    src_shape: Shape,
    dst: str,
    *,
    original_shape: Shape | None = None,
    original_format: str | None = None,
    groups: int = 1,
    padded: bool = False,
) -> tuple[int, ...]:
    """The plain shape (in `dst`'s axis order) that decoding or permuting a `src` tensor of `src_shape` produces.

    `original_shape` is the framework's shape written in `original_format`'s order (default: `dst`'s order); it
    fixes the crop (C for NC1HWC0, N/C/H/W for FRACTAL_Z, M/N for FRACTAL_NZ). `padded=True` keeps the padding;
    FRACTAL_Z needs H and W from an original shape in any case. Raises LayoutError saying what is missing.
    """
    return _core_call(
        core.layout.infer_shape, _name(src), _shape(src_shape), _name(dst), _shape(original_shape), int(groups),
        bool(padded), _name(original_format) if original_format else "",
    )


def device_shape(device: str, plain: str, shape: Shape, *, c0: int, groups: int = 1) -> tuple[int, ...]:
    """The device shape that encoding a plain tensor of `shape` (in `plain`'s order) into `device` produces."""
    return _core_call(core.layout.device_shape, _name(device), _name(plain), _shape(shape), int(c0), int(groups))


def make_plan(src: str, src_shape: Shape, dst: str, dst_shape: Shape, *, itemsize: int, groups: int = 1):
    """A compiled conversion (core.layout.LayoutPlan) to run on many buffers: ``plan.run(src, dst)``,
    ``plan.decode_range(src, first, count)``, ``plan.source_indices(first, count)``. `dst_shape` is the plain shape
    to produce (decode, permute) or the device shape (encode)."""
    return _core_call(core.layout.LayoutPlan, _name(src), _shape(src_shape), _name(dst), _shape(dst_shape), int(groups),
                      int(itemsize))


class Converters:
    """User format converters found in ``custom_dir/format_convert/convert_{FROM}_to_{TO}.py``.

    Each file defines ``convert(shape_from, shape_to, array)``: `shape_from` is the source shape (a list),
    `shape_to` the target shape when dumpcmp knows it (else None), `array` the source data as a 1-D NumPy array; it
    returns a NumPy array (with `shape_to`'s size when that is known; a 1-D result is reshaped to `shape_to`, a
    result of `shape_to`'s rank that is larger on some axes, still padded, is cut to its leading `shape_to` corner
    as the original tool cuts it).
    A converter for a pair overrides the built-in one. Files are imported on first use. Any failure of a plug-in
    (import error, no `convert` function, an exception inside it, a result that is not an array of the right size
    or shape) raises ConfigError naming the file.
    """

    def __init__(self, custom_dir: Union[str, os.PathLike[str]]) -> None:
        self.root = Path(custom_dir)
        folder = self.root / "format_convert"
        if not folder.is_dir():
            raise ConfigError(f"{self.root}: no format_convert directory for custom format converters")
        self._files: dict[tuple[str, str], Path] = {}
        for path in sorted(folder.glob("convert_*_to_*.py")):
            parts = path.stem[len("convert_"):].split("_to_")
            if len(parts) == 2 and all(parts):
                self._files[(parts[0].upper(), parts[1].upper())] = path
        self._loaded: dict[tuple[str, str], Callable[..., Any]] = {}

    def pairs(self) -> list[tuple[str, str]]:
        """The (FROM, TO) pairs the folder has converters for."""
        return sorted(self._files)

    def path(self, src: str, dst: str) -> Path | None:
        return self._files.get((src.upper(), dst.upper()))

    def __contains__(self, pair: tuple[str, str]) -> bool:
        return self.path(*pair) is not None

    def _function(self, src: str, dst: str) -> Callable[..., Any]:
        key = (src.upper(), dst.upper())
        if key in self._loaded:
            return self._loaded[key]
        path = self._files[key]
        module = import_user_file(path, "dumpcmp_custom", "format converter")
        fn = getattr(module, "convert", None)
        if not callable(fn):
            raise ConfigError(f"{path}: defines no function convert(shape_from, shape_to, array)")
        self._loaded[key] = fn
        return fn

    def apply(self, src: str, dst: str, array: np.ndarray, shape_from: Shape,
              shape_to: Shape | None) -> np.ndarray:
        """Run the user's converter for (src, dst) on `array` (any shape; it is passed flattened)."""
        path = self.path(src, dst)
        if path is None:
            raise LayoutError(f"no custom converter from {src} to {dst} in {self.root}")
        fn = self._function(src, dst)
        try:
            result = fn(list(shape_from), None if shape_to is None else list(shape_to), np.ravel(array))
        except Exception as error:  # the user's code may raise anything
            raise ConfigError(f"{path}: convert() failed: {type(error).__name__}: {error}") from error
        if not isinstance(result, np.ndarray):
            raise ConfigError(f"{path}: convert() must return a NumPy array, it returned {type(result).__name__}")
        if shape_to is not None:
            want = tuple(int(d) for d in shape_to)
            size = int(np.prod(want, dtype=np.int64))
            if result.size != size and result.ndim == len(want) and all(r >= w for r, w in zip(result.shape, want)):
                # still padded (as the original's own converters return it): cut to the target, as the original does
                result = np.ascontiguousarray(result[tuple(slice(0, w) for w in want)])
            if result.size != size:
                raise ConfigError(f"{path}: convert() returned {result.size} elements (shape {result.shape}), "
                                  f"the target shape {want} has {size}")
            if result.shape != want:
                if result.ndim != 1:
                    raise ConfigError(f"{path}: convert() returned shape {result.shape}, expected {want}")
                result = result.reshape(want)
        return result


def _converters(custom: Union[None, str, os.PathLike[str], Converters]) -> Converters | None:
    if custom is None or isinstance(custom, Converters):
        return custom
    return Converters(custom)


def convert(
    array: np.ndarray,
    src: str,
    dst: str,
    *,
    original_shape: Shape | None = None,
    original_format: str | None = None,
    groups: int = 1,
    padded: bool = False,
    c0: int | None = None,
    shape: Shape | None = None,
    custom: Union[None, str, os.PathLike[str], Converters] = None,
    threads: int = 0,
) -> np.ndarray:
    """Convert `array` from layout `src` to layout `dst`; returns a new C-contiguous array of the same dtype.

    array: the source tensor; its shape is the source shape unless `shape` gives it (then `array` may be flat).
    original_shape / original_format: the framework's shape (and the format it is written in, default `dst`) that
        fixes the crop when decoding; see :func:`plain_shape`. Not used for encoding.
    groups: FRACTAL_Z's group count (the dump's sub_format; 0 or 1 = not grouped).
    padded: decode without cropping the padding (when the original shape is unknown).
    c0: cube width when encoding; default :func:`default_c0` of the format and dtype. Decoding reads C0 from the
        device shape.
    custom: a folder holding ``format_convert/convert_{FROM}_to_{TO}.py``, or a :class:`Converters`; its converter
        for this pair, if any, runs instead of the built-in one.
    threads: 0 = dumpcmp's thread count.

    Raises LayoutError (a ValueError) for unsupported pairs, shapes that do not fit the layout or the array,
    groups that do not divide N, missing crop information; ConfigError for a broken custom converter.
    """
    src, dst = _name(src), _name(dst)
    a = np.asarray(array)
    src_shape = _shape(a.shape if shape is None else shape)
    if int(np.prod(src_shape, dtype=np.int64)) != a.size:
        raise LayoutError(f"array of {a.size} elements does not have the source shape {tuple(src_shape)}")

    converters = _converters(custom)
    if converters is not None and (src, dst) in converters:
        try:
            shape_to: Shape | None = _target_shape(a, src, src_shape, dst, original_shape, original_format, groups,
                                                   padded, c0)
        except LayoutError:
            shape_to = original_shape
        return converters.apply(src, dst, a, src_shape, shape_to)

    if a.dtype.hasobject or a.dtype.itemsize not in (1, 2, 4, 8):
        raise LayoutError(f"layouts move 1, 2, 4 or 8-byte elements; arrays of {a.dtype} cannot be converted")
    if src == dst and src in PLAIN_FORMATS + DEVICE_FORMATS:
        return np.array(a.reshape(src_shape), copy=True, order="C")
    dst_shape = _target_shape(a, src, src_shape, dst, original_shape, original_format, groups, padded, c0)
    plan = make_plan(src, src_shape, dst, dst_shape, itemsize=a.dtype.itemsize, groups=groups)
    out = np.empty(dst_shape, dtype=a.dtype)
    _core_call(plan.run, np.ascontiguousarray(a).reshape(src_shape), out, int(threads))
    return out


def _target_shape(a: np.ndarray, src: str, src_shape: list[int], dst: str, original_shape: Shape | None,
                  original_format: str | None, groups: int, padded: bool, c0: int | None) -> tuple[int, ...]:
    if bool(core.layout.is_device_format(dst)) and not bool(core.layout.is_device_format(src)):
        return device_shape(dst, src, src_shape, c0=c0 if c0 is not None else default_c0(dst, a.dtype),
                            groups=groups)
    return plain_shape(src, src_shape, dst, original_shape=original_shape, original_format=original_format,
                       groups=groups, padded=padded)
