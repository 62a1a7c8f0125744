"""FFTS+ sliced dumps: an op the runtime split into threads is dumped as several files, one per slice, that the
comparison merges back into the op's tensors before comparing (the facts read from msaccucmp 72c5bd4c and checked
by running it; docs/formats.md "FFTS+ sliced dumps").

- A slice is a device dump whose FFTS+ name suffix has task type 4 (FFTSPLUS). **Manual mode**: the op name ends in
  ``_lxslice{N}`` (the slices of op ``X`` are ``X_lxslice0``, ``X_lxslice1``, ...; the op is ``X``). **Auto mode**:
  the files of one op differ only in ``{context_id}.{thread_id}``.
- The slicing facts are the JSON of the dump's first attribute: ``threadMode`` (1 auto, 0 manual),
  ``slice_instance_num`` (how many slices there should be), ``outputCutList`` (per output, the cut factor of each
  dimension: the axis whose factor is not 1 is the cut axis) and, in auto mode, ``output_tensor_slice`` (per thread,
  per output, per dimension ``{"lower", "higher"}``: the slice's shape, which the stored buffer must hold exactly).
- Slices are ordered by thread id (auto) or slice number (manual); each output is the concatenation of its slices
  along its cut axis; an output without a cut axis is the first slice's; inputs are the first slice's.
- A slice count other than ``slice_instance_num`` is a warning (`MISSING_SLICES`), the slices present are merged.
- With no cut axis at all, the op is its last slice (by timestamp), as the original compares it.
- `per_slice` (the original's ``-ffts``): manual slices are ops of their own, compared one by one; auto-mode
  threads are still merged (the original does so too).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from dumpcmp.errors import DumpcmpError
from dumpcmp.support.lazy_numpy import np

__all__ = ["MISSING_SLICES", "FftsError", "MergedDump", "MergedTensor", "SliceGroup", "group_slices", "is_slice",
           "manual_op_name", "merge"]

#: the sentence the original writes in the op's row (device vs device) when slices are missing
MISSING_SLICES = "This is a FFTS+ mode dump data, The number of files does not match the number of thread"
_LXSLICE = re.compile(r"lxslice[0-9]+")


class FftsError(DumpcmpError):
    """FFTS+ slices that cannot be merged (the op's row says why)."""


def is_slice(entry: Any) -> bool:
    """True for a device dump of an FFTS+ task (name suffix task type 4 / FFTSPLUS)."""
    ffts = entry.name.ffts
    return ffts is not None and ffts.task_type_name == "FFTSPLUS"


def manual_op_name(op_name: str) -> str | None:
    """``X`` for a manual-mode slice name ``X_lxslice{N}`` (``lxslice{N}`` ending the name), else None."""
    m = _LXSLICE.search(op_name)
    if m is None or m.end() != len(op_name) or m.start() == 0:
        return None
    return op_name[:m.start() - 1]


def _slice_number(entry: Any) -> int:
    m = _LXSLICE.search(entry.name.op_name)
    return int(m.group(0)[len("lxslice"):]) if m else 0


@dataclass
class SliceGroup:
    """The slice files of one op (in slice order) and its mode ("auto" or "manual")."""

    op_name: str
    mode: str
    entries: list[Any] = field(default_factory=list)


def group_slices(entries: Sequence[Any], per_slice: bool = False) -> tuple[list[Any], list[SliceGroup]]:
    """(the entries that are not merged, the slice groups): every FFTS+ slice file goes to its op's group (manual
    slices only without `per_slice`)."""
    plain: list[Any] = []
    groups: dict[str, SliceGroup] = {}
    for e in entries:
        if not is_slice(e):
            plain.append(e)
            continue
        base = manual_op_name(e.name.op_name)
        if base is not None and per_slice:
            plain.append(e)
            continue
        mode = "manual" if base is not None else "auto"
        key = base if base is not None else e.name.op_name
        g = groups.setdefault(key, SliceGroup(key, mode))
        g.entries.append(e)
    for g in groups.values():
        if g.mode == "auto":
            g.entries.sort(key=lambda e: (e.name.ffts.thread_id, e.name.timestamp, e.file_name))
        else:
            g.entries.sort(key=lambda e: (_slice_number(e), e.name.timestamp, e.file_name))
    return plain, list(groups.values())


def _facts(dump: Any, path: str) -> dict[str, Any]:
    attrs = dump.attrs
    if not attrs:
        raise FftsError(f"{path}: an FFTS+ slice without its slicing attribute (threadMode, outputCutList)")
    try:
        facts = json.loads(attrs[0][1])
    except ValueError as error:
        raise FftsError(f"{path}: the FFTS+ slicing attribute is not JSON ({error})") from None
    if not isinstance(facts, dict):
        raise FftsError(f"{path}: the FFTS+ slicing attribute is not a JSON object")
    return facts


def _cut_axes(facts: dict[str, Any], path: str, outputs: int) -> list[int | None]:
    cuts = facts.get("outputCutList") or []
    if not isinstance(cuts, list) or not all(isinstance(c, list) and all(isinstance(v, int) for v in c)
                                             for c in cuts):
        raise FftsError(f"{path}: outputCutList {cuts!r} is not a list of lists of integers")
    axes: list[int | None] = []
    for i, cut in enumerate(cuts[:outputs]):
        cut_at = [d for d, v in enumerate(cut) if v != 1]
        axes.append(cut_at[0] if cut_at else None)  # the original cuts along the first such axis
    return axes + [None] * (outputs - len(axes))


def _auto_shape(facts: dict[str, Any], position: int, output: int, path: str) -> tuple[int, ...] | None:
    table = facts.get("output_tensor_slice")
    if not table:
        return None
    try:
        dims = table[position][output]
        shape = tuple(int(d["higher"]) - int(d["lower"]) for d in dims)
    except (IndexError, KeyError, TypeError, ValueError):
        raise FftsError(f"{path}: output_tensor_slice has no valid entry for slice {position} output {output}") \
            from None
    if any(s < 0 for s in shape):
        raise FftsError(f"{path}: output_tensor_slice gives a negative extent {list(shape)} for output {output}")
    return shape


def _check_ranges(facts: Sequence[dict[str, Any]], paths: Sequence[str], output: int, axis: int) -> None:
    """Auto mode: the threads' ranges along the cut axis, in thread order, must not overlap."""
    end = None
    for pos, (f, p) in enumerate(zip(facts, paths)):
        table = f.get("output_tensor_slice")
        if not table:
            return
        try:
            dim = table[pos][output][axis]
            lo, hi = int(dim["lower"]), int(dim["higher"])
        except (IndexError, KeyError, TypeError, ValueError):
            raise FftsError(f"{p}: output_tensor_slice has no range for slice {pos} output {output} axis {axis}") \
                from None
        if end is not None and lo < end:
            raise FftsError(f"{p}: slice {pos} of output {output} starts at {lo} along axis {axis}, inside the slice "
                            f"before it (which ends at {end}): overlapping FFTS+ slices")
        end = hi


class MergedTensor:
    """An output merged from its slices: the first slice's description, the merged array and shape."""

    merged = True

    def __init__(self, base: Any, array: Any) -> None:
        self.base = base
        self._array = array

    kind = property(lambda self: self.base.kind)
    index = property(lambda self: self.base.index)
    data_type = property(lambda self: self.base.data_type)
    format = property(lambda self: self.base.format)
    original_shape = property(lambda self: self.base.original_shape)
    sub_format = property(lambda self: self.base.sub_format)
    address = property(lambda self: self.base.address)
    original_op = property(lambda self: self.base.original_op)
    shape = property(lambda self: tuple(self._array.shape))

    def array(self) -> Any:
        return self._array

    def problem(self) -> str:
        return ""


class MergedDump:
    """The dump of a sliced op: the first slice's inputs, the merged outputs; `missing` says slices are missing."""

    def __init__(self, base: Any, outputs: list[Any], missing: str = "") -> None:
        self.base = base
        self.inputs = base.inputs
        self.outputs = outputs
        self.missing = missing
        self._file = base._file
        self.attrs = base.attrs


def merge(group: SliceGroup, dumps: Sequence[Any]) -> Any:
    """The op's dump with its slices merged (`MergedDump`), or the last slice's dump when no output has a cut axis;
    FftsError naming the files when the slices do not fit together."""
    paths = [e.path for e in group.entries]
    base = dumps[0]
    facts = [_facts(d, p) for d, p in zip(dumps, paths)]
    n = facts[0].get("slice_instance_num")
    missing = ""
    if n != len(dumps):
        missing = (f"{group.op_name}: FFTS+ slices missing: {len(dumps)} files for slice_instance_num {n}"
                   f" ({', '.join(paths)})")
    outputs = len(base.outputs)
    axes = _cut_axes(facts[0], paths[0], outputs)
    for f, p, d in zip(facts[1:], paths[1:], dumps[1:]):
        if _cut_axes(f, p, outputs) != axes:
            raise FftsError(f"{p}: its cut axes {_cut_axes(f, p, outputs)} disagree with {paths[0]}'s {axes}")
        if len(d.outputs) != outputs:
            raise FftsError(f"{p}: {len(d.outputs)} outputs, {paths[0]} has {outputs}")
    if all(a is None for a in axes):
        return None  # the caller compares the last slice, as the original does
    merged = []
    for i, axis in enumerate(axes):
        pieces = []
        for pos, (d, p) in enumerate(zip(dumps, paths)):
            t = d.outputs[i]
            problem = t.problem()
            if problem:
                raise FftsError(f"{p}: {problem}")
            if t.data_type != base.outputs[i].data_type:
                raise FftsError(f"{p}: output {i} is {t.data_type}, {paths[0]}'s is {base.outputs[i].data_type}")
            a = t.array()
            shape = _auto_shape(facts[pos], pos, i, p) if group.mode == "auto" else None
            if shape is None:
                shape = tuple(t.shape)
            count = int(np.prod(shape, dtype=np.int64))
            if count != a.size:  # as the original: the buffer holds exactly the slice
                raise FftsError(f"{p}: output {i} holds {a.size} elements, its slice shape {list(shape)} has "
                                f"{count}")
            pieces.append(a.reshape(shape))
            if axis is None:
                break
        if axis is None:
            merged.append(MergedTensor(base.outputs[i], pieces[0]))
            continue
        if group.mode == "auto":
            _check_ranges(facts, paths, i, axis)
        first = pieces[0]
        for p, piece in zip(paths, pieces):
            if piece.ndim != first.ndim or axis >= first.ndim or \
                    any(a != b for k, (a, b) in enumerate(zip(piece.shape, first.shape)) if k != axis):
                raise FftsError(f"{p}: output {i} slice shape {list(piece.shape)} does not fit "
                                f"{list(first.shape)} (cut along axis {axis})")
        merged.append(MergedTensor(base.outputs[i], np.concatenate(pieces, axis=axis)))
    return MergedDump(base, merged, missing)
