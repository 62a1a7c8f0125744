"""Which tensors `dumpcmp histogram` draws: every output (and with `inputs`, every input) of a dump file or folder,
every .npy of a ground-truth folder, or every compared row of a comparison with ground truth."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from dumpcmp.dumps import layout as _layout
from dumpcmp.support.native import core
from dumpcmp.errors import DumpcmpError, NotFoundError


@dataclass
class Layer:
    name: str                     # the tensor: `{op}:output:0`, or a ground-truth file's op name
    op_type: str
    device: Any | None            # TensorSource, or None (ground truth only)
    ground_truth: Any | None = None
    error: str = ""               # why it cannot be read (the layer is reported, not drawn)


def _plain_source(dump: Any, kind: str, index: int) -> Any:
    """A dump tensor decoded from its device layout by its own original shape (padding left out)."""
    t = (dump.inputs if kind == "input" else dump.outputs)[index]
    problem = t.problem()
    if problem:
        raise DumpcmpError(f"{dump.path}: {problem}")
    fmt = t.format
    if fmt in _layout.DEVICE_FORMATS and t.original_shape is not None:
        from dumpcmp.comparison.sources import Sides

        dst, shape = Sides.own_plain(t, None, _layout.plain_target(fmt, None, len(t.original_shape)))
        return core.compare.source_from_dump(dump._file, kind, index, dst, list(shape), _layout.groups_of(t))
    return core.compare.source_from_dump(dump._file, kind, index)


def dump_layers(target: str | os.PathLike[str], *, inputs: bool = False,
                selection: dict[str, Any] | None = None) -> Iterator[Layer]:
    """Every tensor of a dump file, a dump folder/tree (execution order; of the runs `selection` names, as
    `DumpIndex.find` takes it) or a ground-truth folder."""
    from dumpcmp.dumps.dump import open_dump
    from dumpcmp.dumps.ground_truth import ground_truth_source, keys_by_index, open_npy
    from dumpcmp.dumps.scan import scan

    path = Path(target)
    if path.is_file() and path.suffix == ".npy":
        yield Layer(path.stem, "", core.compare.source_from_array(np.ascontiguousarray(open_npy(path))))
        return
    if path.is_file():
        files = [(path, "")]
    else:
        index = scan(path)
        files = []
        for group in index.find(**selection) if selection else index:
            files += [(e.path, e.op_type) for e in sorted(group.newest().values(), key=lambda e: e.order())]
        if not files and index.ground_truth.files:
            for key, entry in keys_by_index(index.ground_truth.files).items():  # named as golden's index says
                try:
                    yield Layer(str(key), "", ground_truth_source(entry)[0])
                except (DumpcmpError, ValueError, OSError) as error:
                    yield Layer(str(key), "", None, error=str(error))
            return
        if not files:
            raise NotFoundError(f"{path}: no dump or ground-truth files found")
    for file, op_type in files:
        try:
            dump = open_dump(file)
        except (DumpcmpError, OSError) as error:
            yield Layer(Path(file).name, op_type, None, error=str(error))
            continue
        kinds = (("input", dump.inputs),) if inputs else ()
        for kind, tensors in kinds + (("output", dump.outputs),):
            for i in range(len(tensors)):
                name = f"{dump.op_name}:{kind}:{i}"
                try:
                    yield Layer(name, op_type or getattr(dump, "op_type", ""), _plain_source(dump, kind, i))
                except (DumpcmpError, ValueError) as error:
                    yield Layer(name, op_type, None, error=str(error))


def compared_layers(result: Any, custom: Any = None) -> Iterator[Layer]:
    """Every compared row of a comparison: device and ground truth read as the comparison read them."""
    from dumpcmp.output.histogram.bins import row_sources

    for row in result.rows:
        if row.result is None:
            continue
        name = row.shown_tensor or row.ground_truth
        try:
            x, y = row_sources(row, result.ground_truth_has_address, custom)
            yield Layer(name, row.op_type, x, y)
        except (DumpcmpError, ValueError, OSError) as error:
            yield Layer(name, row.op_type, None, error=str(error))


def sigmastar_layers(target: str | os.PathLike[str], right: str | os.PathLike[str] | None = None) -> Iterator[Layer]:
    """Every non-constant tensor of a SigmaStar dump (`sigma_outtensor_dump.bin`, its text form, ...), in file order,
    by tensor name; with `right` (another SigmaStar dump) the tensor of the same name there as the ground truth.
    Constants (bConstant:1, weights) are left out, as the SDK's compare leaves them out."""
    from dumpcmp.dumps.sigmastar import open_sigmastar

    dump = open_sigmastar(target)
    other = open_sigmastar(right) if right is not None else None
    theirs = {t.name: t for t in other.tensors if not t.constant} if other is not None else {}

    def source(d: Any, t: Any) -> Any:
        return core.compare.source_from_array(np.ascontiguousarray(d.values(t), dtype=np.float32))

    for t in dump.tensors:
        if t.constant:
            continue
        try:
            gt = None
            if other is not None:
                if t.name not in theirs:
                    yield Layer(t.name, t.op_type, None, error=f"no tensor of this name in {other.path}")
                    continue
                gt = source(other, theirs[t.name])
            yield Layer(t.name, t.op_type, source(dump, t), gt)
        except (DumpcmpError, ValueError) as error:
            yield Layer(t.name, t.op_type, None, error=str(error))
