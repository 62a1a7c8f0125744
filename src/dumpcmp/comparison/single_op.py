"""Single-operator comparison (`dumpcmp compare -d OP`): one tensor of one operator, element by element.

Pairing, layout decoding and cropping are the model-level comparison's (`dumpcmp.comparison.compare`); the device tensor
is decoded to NCHW (NCDHW when it has a depth axis) as the spec says, the ground truth brought to the same layout, and
`dumpcmp.comparison.detail.export_detail` writes the summary, the detail files and the top errors.

    >>> r = compare_op("dumps/", "gt/", "conv1", "out/", fusion_json="model.json")
    >>> print(format_top_table(r))
"""

from __future__ import annotations

import difflib
import os
from typing import Any

import numpy as np

from dumpcmp.dumps import layout as _layout
from dumpcmp.support.native import core
from dumpcmp.comparison.rows import graph_group_name
from dumpcmp.comparison.runs import paired_runs
from dumpcmp.comparison.sources import Sides
from dumpcmp.dumps.ground_truth import ground_truth_data, ground_truth_source
from dumpcmp.dumps.dump import numpy_dtype
from dumpcmp.comparison.detail import DetailResult, export_detail
from dumpcmp.errors import DumpcmpError, NotFoundError
from dumpcmp.dumps.naming import sanitize
from dumpcmp.graph.pairing import TensorPair, quant_pair_members

__all__ = ["compare_op", "find_pair"]


def find_pair(pairs: list[TensorPair], op_name: str, kind: str, index: int,
              graph_originals: dict[str, tuple[str, ...]] | None = None) -> TensorPair:
    """The row of `op_name`'s `kind` `index`; `op_name` is a device op's name, or an original (ONNX) op's name,
    a member of a fused op too (`graph_originals`: device op -> its original op names, from the graph JSON).
    NotFoundError with the closest names (originals shown with their device op) or the tensors the op has."""
    names = {p.npu_op for p in pairs if p.npu_op is not None}
    spelt = {p.npu_op: p.shown_op or p.npu_op for p in pairs if p.npu_op is not None}  # as our own texts print it
    wanted = op_name if op_name in names else next((n for n in names if sanitize(n) == sanitize(op_name)), None)
    # an original (ONNX) name: the device op that stands for it, a fused op too
    originals: dict[str, set[str]] = {}
    for p in pairs:
        if p.npu_op is not None and str(p.relation) != "Inserted":  # a compiler-inserted Cast only carries it
            for o in p.ground_truth_ops or ():
                originals.setdefault(o, set()).add(p.npu_op)
    for device_op, members in (graph_originals or {}).items():
        if device_op in names:
            for o in members:
                originals.setdefault(o, set()).add(device_op)
    if wanted is None:
        hits = originals.get(op_name) or next((v for k, v in originals.items() if sanitize(k) == sanitize(op_name)),
                                              set())
        if len(hits) == 1:
            wanted = next(iter(hits))
        elif len(hits) > 1:
            raise NotFoundError(f"{op_name!r} is an original op of several device ops: "
                                f"{', '.join(sorted(spelt[h] for h in hits))}; "
                                "give one of them")
    if wanted is None:
        shown = {spelt[n]: spelt[n] for n in names}
        for o, ops in originals.items():
            if o not in shown and len(ops) == 1 and next(iter(ops)) != o:
                shown[o] = f"{o} (in {spelt[next(iter(ops))]})"
        close = difflib.get_close_matches(op_name, sorted(shown), n=5, cutoff=0.5)
        hint = f"; did you mean {', '.join(shown[c] for c in close)}?" if close else \
            f" ({len(names)} device ops were dumped)"
        raise NotFoundError(f"no device op named {op_name!r} (nor an original op of one){hint}")
    mine = [p for p in pairs if p.npu_op == wanted]
    for p in mine:
        if p.kind == kind and p.index == index:
            return p
    have = sorted(f"{p.kind} {p.index}" for p in mine if p.index is not None)
    raise NotFoundError(f"op {spelt[wanted]!r} has no {kind} {index}; it has: "
                        f"{', '.join(have) or 'nothing comparable'}")


def compare_op(
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    op_name: str,
    out_dir: str | os.PathLike[str],
    *,
    kind: str = "output",
    index: int = 0,
    fusion_json: str | os.PathLike[str] | None = None,
    quant_json: str | os.PathLike[str] | None = None,
    custom: str | os.PathLike[str] | None = None,
    max_lines: int = 1_000_000,
    top_n: int = 20,
    fmt: str = "csv",
    threads: int = 0,
    force: bool = False,
    details: bool = True,
    **selection: Any,
) -> DetailResult:
    """Compare one tensor of one device op with its ground truth, every element; see `dumpcmp.comparison.detail`.
    Without `details` the element-by-element files are left out (the summary and top lists are written)."""
    if kind not in ("input", "output"):
        raise DumpcmpError(f"the tensor kind is input or output, not {kind!r}")
    runs = paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json, **selection)
    if len(runs) > 1:
        from dumpcmp.dumps.scan import several_runs_error

        raise several_runs_error(left, [r.run for r in runs])
    run = runs[0]
    graph_originals = None
    if run.graph is not None:
        graph_originals = {op.name: tuple(op.original_op_names or ()) for op in run.graph.ops if not op.is_inserted}
    pair = find_pair(run.pairs, op_name, kind, index, graph_originals)
    if run.graph is not None and pair.graph_op in quant_pair_members(run.graph):
        raise DumpcmpError(f"[{pair.npu_op}] The -op param should not specify an operator in quant/dequant pair.")
    if pair.skip_reason:
        raise DumpcmpError(f"{pair.tensor_index}: not compared: {pair.skip_reason}")
    if pair.npu_ref is not None and pair.npu_ref.dump is None:
        raise DumpcmpError(pair.npu_ref.error)
    if not pair.comparable:
        raise NotFoundError(f"{pair.tensor_index}: {pair.note or 'no ground truth to compare with'}")

    try:
        x, y, shape, layout_name = _sources(pair, kind, index, custom, run.device_vs_device)
    except ValueError as error:  # a layout that does not fit: the same message the model-level compare gives
        if isinstance(error, DumpcmpError):
            raise
        raise DumpcmpError(f"{pair.tensor_index}: {error}") from None
    sides = Sides(custom)
    device_t = sides.tensor(pair.npu_ref, kind, index)
    npu_names, truth_names = _summary_names(run, pair)
    format_line = _format_line(device_t, pair, shape)
    if len(tuple(shape)) == 0:
        shape = (1,)  # the original lists a scalar as one element, at coordinates 0 0 0 0
    if run.device_vs_device:
        truth_bool = sides.tensor(pair.ground_truth_ref, kind, index).data_type == "BOOL"
    else:
        truth_bool = _ground_truth_dtype(pair) == "bool"
    return export_detail(x, y, shape, out_dir, op_name=pair.npu_op, ground_truth_name=truth_names,
                         kind=kind, index=index, layout_name=layout_name, max_lines=max_lines, top_n=top_n, fmt=fmt,
                         threads=threads, force=force, npu_dtype=numpy_dtype(device_t.data_type),
                         format_line=format_line, npu_summary_name=npu_names,
                         bool_pair=device_t.data_type == "BOOL" and truth_bool, details=details)


def _sources(pair: TensorPair, kind: str, index: int, custom: Any,
             device_vs_device: bool) -> tuple[Any, Any, tuple[int, ...], str]:
    """Both sides of the pair as core sources in one coordinate system: (x, y, shape, layout name)."""
    sides = Sides(custom)
    if device_vs_device:
        gt_ref = pair.ground_truth_ref
        t = sides.tensor(pair.npu_ref, kind, index)
        gt_t = sides.tensor(gt_ref, kind, index)
        if (t.format, tuple(t.shape), t.original_shape) != (gt_t.format, tuple(gt_t.shape), gt_t.original_shape):
            raise DumpcmpError(f"{pair.tensor_index}: format/shape differ: {t.format} {list(t.shape)} vs "
                               f"{gt_t.format} {list(gt_t.shape)}")
        # both sides decoded by the same original shape, so the coordinates are the plain tensor's
        target = _layout.plain_target(t.format)
        dst, shape = sides.own_plain(t, pair, target)
        x, _ = sides.device(pair.npu_ref, kind, index, pair, None, target)
        y, _ = sides.device(gt_ref, kind, index, pair, None, target)
        layout_name = dst if dst is not None and dst != "ND" else ("NCHW" if len(shape) <= 4 else t.format)
    else:
        y, gt_shape, _ = ground_truth_source(pair.ground_truth_ref)
        gt_format = (pair.origin_format or "").upper()
        tensors = pair.npu_ref.dump.inputs if kind == "input" else pair.npu_ref.dump.outputs
        device_format = tensors[index].format
        if device_format in _layout.DEVICE_FORMATS and device_format != "FRACTAL_NZ" and len(gt_shape) in (4, 5):
            # decoded to NCHW/NCDHW (not the graph's origin format): the summary's coordinates
            target = _layout.plain_target(device_format, None, len(gt_shape))
            if gt_format in _layout.PLAIN_FORMATS and gt_format not in ("ND", target):
                # a ground truth in another layout (TensorFlow's NHWC): brought to NCHW for the coordinates
                data = _ground_truth_array_data(pair)
                plain = _layout.convert(data, gt_format, target)
                y, gt_shape = core.compare.source_from_array(plain), plain.shape
            x, t = sides.device(pair.npu_ref, kind, index, pair, tuple(gt_shape), target)
            layout_name = target
        else:
            x, t = sides.device(pair.npu_ref, kind, index, pair, tuple(gt_shape))
            layout_name = "NCDHW" if len(gt_shape) == 5 else "NCHW"
        shape = tuple(gt_shape)
        if x.count != y.count:
            raise DumpcmpError(f"{pair.tensor_index}: shape mismatch: NPU {t.format} {list(t.shape)} gives "
                               f"{x.count} elements, ground truth {list(gt_shape)} has {y.count}")
    return x, y, shape, layout_name


def _ground_truth_dtype(pair: TensorPair) -> str:
    data = ground_truth_data(pair.ground_truth_ref)
    return np.asarray(data).dtype.name if isinstance(data, np.ndarray) else ""


def _summary_names(run: Any, pair: TensorPair) -> tuple[str, str]:
    """The summary's NPUDump and GroundTruth lines, as the original writes them: the op's fusion unit (its ops,
    and every original op they stand for, space-separated; `*` for an inserted op)."""
    graph = getattr(run, "graph", None)
    op = graph.get(pair.graph_op) if graph is not None and pair.graph_op else None
    if op is None:
        return pair.npu_op or "", pair.ground_truth_column
    members = [o for o in graph.ops if graph_group_name(o) == graph_group_name(op)]
    truth: list[str] = []
    for o in members:
        for name in ([] if o.is_inserted else graph.original_names(o)):
            if name not in truth:
                truth.append(name)
    return " ".join(o.name for o in members), " ".join(truth) or "*"


def _format_line(t: Any, pair: TensorPair, shape: Any) -> str:
    """The summary's Format line: the coordinate header (`N C H W`), the ground truth's letters for a FRACTAL_Z
    weight, `N C D H W` with a depth axis, `ID` for a scalar."""
    if t.format in _layout.FIVE_D:
        return "N C D H W"
    if t.format == "FRACTAL_Z":
        return " ".join(pair.origin_format or "NCHW")
    return "N C H W" if len(tuple(shape)) else "ID"


def _ground_truth_array_data(pair: TensorPair) -> np.ndarray:
    data = ground_truth_data(pair.ground_truth_ref)
    if not isinstance(data, np.ndarray):
        raise DumpcmpError(f"{pair.ground_truth_ref.path}: a layout change needs a .npy ground truth")
    return np.asarray(data)
