"""A device op's dumped tensors as the original model holds them: decoded from the device layout into the original
layout, shape and dtype, keyed by the original tensor names.

    >>> model = OriginalModel.load("net.onnx")
    >>> run = paired_runs("dump/", "ground_truth/", fusion_json="net.json")[0]
    >>> feeds = device_feeds(model, [p for p in run.pairs if p.npu_op == "conv1bn1relu1"])
    >>> feeds                      # {'input': float32 array (1, 3, 32, 32), the device's own input, decoded}

`decode` does one tensor: a device layout (NC1HWC0, FRACTAL_NZ, FRACTAL_Z, ...) is decoded by the dump's original
shape (else the original model's) into NCHW/ND and cropped, a plain layout other than the original's (NHWC against
NCHW) is permuted, the result is reshaped to the original shape when the element counts agree and cast to the
original dtype (fp16 device values become the float32 the original model computes in).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from dumpcmp.dumps import layout as _layout
from dumpcmp.support.lazy_numpy import np
from dumpcmp.errors import DumpcmpError
from dumpcmp.debug.region import OriginalModel, original_tensor

__all__ = ["decode", "device_feeds", "device_tensor"]

_SMALL = 1 << 20  # elements: a tensor below this is decoded on one thread (starting threads costs more)


def decode(tensor: Any, *, shape: Sequence[int] | None = None, dtype: Any = None,
           origin_format: str | None = None) -> np.ndarray:
    """`tensor` (a `dumpcmp.dumps.dump.Tensor`) in the original layout, `shape` and `dtype` (each optional); a new
    C-contiguous array. LayoutError/DumpcmpError when it cannot be brought to that shape."""
    problem = tensor.problem()
    if problem:
        raise DumpcmpError(f"{tensor.path}: {problem}")
    a = tensor.array()
    fmt = tensor.format
    if fmt in _layout.DEVICE_FORMATS:
        original = tensor.original_shape or (tuple(shape) if shape is not None else None)
        if original is None:
            raise DumpcmpError(f"{tensor.path}: {fmt} tensor with no original shape to decode it by")
        dst = _layout.plain_target(fmt)
        a = _layout.convert(a, fmt, dst,
                            original_shape=original if fmt == "FRACTAL_NZ" else _layout.pad_original(original, fmt),
                            groups=_layout.groups_of(tensor), threads=1 if a.size < _SMALL else 0)
    elif origin_format and fmt in _layout.LETTERED and origin_format in _layout.LETTERED and fmt != origin_format \
            and len(fmt) == len(origin_format) == a.ndim:
        a = _layout.convert(a, fmt, origin_format, threads=1 if a.size < _SMALL else 0)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != a.size:
            raise DumpcmpError(f"{tensor.path}: {fmt} tensor {list(tensor.shape)} decodes to {a.size} elements, the "
                               f"original tensor {list(shape)} has {int(np.prod(shape, dtype=np.int64))}")
        a = a.reshape(shape)
    if dtype is not None and a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    return np.ascontiguousarray(a)


def device_tensor(model: OriginalModel, pair: Any, *, shape: Sequence[int] | None = None,
                  tensor: str | None = None) -> np.ndarray:
    """The device tensor of a `dumpcmp.graph.pairing.TensorPair` (its `npu_ref` as `dumpcmp compare` makes it: the
    dump is `npu_ref.dump`) decoded to the original tensor it holds (`tensor` when given, else the pairing's).
    `shape` overrides the original model's."""
    ref = pair.npu_ref
    dump = getattr(ref, "dump", None)
    if dump is None:
        raise DumpcmpError(getattr(ref, "error", "") or f"{pair.npu_op}: no device dump")
    tensors = dump.inputs if pair.kind == "input" else dump.outputs
    if pair.index is None or pair.index >= len(tensors):
        raise DumpcmpError(f"{dump.path}: no {pair.kind} {pair.index} (the dump has {len(tensors)})")
    name = tensor if tensor is not None else original_tensor(model, pair)
    want_shape = shape if shape is not None else (model.shape(name) if name is not None else None)
    want_dtype = model.dtype(name) if name is not None else None
    return decode(tensors[pair.index], shape=want_shape, dtype=want_dtype, origin_format=pair.origin_format)


def device_feeds(model: OriginalModel, pairs: Iterable[Any], *, weights: bool = False) -> dict[str, np.ndarray]:
    """The dumped inputs among `pairs` (one device op's, or several), decoded, by original tensor name. Weights
    (initializers, Constant outputs, tensors computed from them alone) are left out unless `weights`: the original
    model carries its own."""
    out: dict[str, np.ndarray] = {}
    for pair in pairs:
        if pair.kind != "input" or pair.npu_ref is None:
            continue
        name = original_tensor(model, pair)
        if name is None or name in out or (not weights and model.is_constant(name)):
            continue
        out[name] = device_tensor(model, pair)
    return out
