"""Which device dump holds an original tensor, and its values in the original layout, shape and dtype.

The compiled graph (`-f`) says which original tensor every device output holds (the pairing rules of
`dumpcmp.graph.pairing`); a tensor the device wrote as the output of one op and read as the input of another is taken
from the output first. The pairing walks back past every Cast (the original tool's rule: a Cast holds its input's
values); the device op of an original ONNX Cast holds that Cast's own output, though, and is taken for it when no
pair names the tensor (`original_cast_outputs`). Device layouts are decoded by `dumpcmp.debug.locate.feeds.decode`
(shared with `locate`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from dumpcmp.comparison.runs import sample_ground_truth
from dumpcmp.dumps.ground_truth import ground_truth_data, keys_by_index
from dumpcmp.dumps.naming import ground_truth_key
from dumpcmp.errors import DumpcmpError, NotFoundError
from dumpcmp.debug.locate.feeds import decode
from dumpcmp.graph.graph_json import Graph
from dumpcmp.graph.pairing import PASS_THROUGH_TYPES, DeviceOp, TensorPair, pair_with_ground_truth
from dumpcmp.dumps.scan import DumpEntry, DumpGroup, GroundTruthIndex, scan

@dataclass
class RunGroundTruth:
    """The ground truth of one device run: the sample folder `dumpcmp compare` pairs the run with (one rule:
    `dumpcmp.comparison.runs.sample_ground_truth`), its files keyed through golden's index (`keys_by_index`)."""

    files: dict[str, Any]
    notes: list[str]
    """What was not one-to-one in choosing the sample folder (empty when the run's own folder was taken)."""

    def get(self, op_name: str, output_index: int = 0) -> Any:
        """The file of output `output_index` of original op `op_name` (exact name, else as file names sanitise it)."""
        found = self.files.get(f"{op_name}.{int(output_index)}")
        return found if found is not None else self.files.get(ground_truth_key(op_name, output_index))

    def __len__(self) -> int:
        return len(self.files)


def run_ground_truth(path: str | os.PathLike[str], group: DumpGroup,
                     gt_sample: int | Mapping[int, int] | None = None) -> RunGroundTruth:
    """The ground truth under `path` for the device run `group`, paired as compare pairs it (`--gt-sample`)."""
    index = scan(path)
    files, notes = sample_ground_truth(group.key.data_index, index.ground_truth, index.root, gt_sample)
    chosen = [n for n in notes if not n.startswith("ground truth: sample folder ")]
    return RunGroundTruth(keys_by_index(files, chosen), chosen)


@dataclass
class DeviceTensor:
    """One tensor of one device dump file that holds an original tensor."""

    entry: DumpEntry
    kind: str
    index: int
    pair: TensorPair

    def describe(self) -> str:
        t = self.tensor()
        return f"{self.entry.file_name} {self.kind} {self.index}, {t.format} {t.data_type}"

    def tensor(self) -> Any:
        d = self.entry.open()
        ts = d.inputs if self.kind == "input" else d.outputs
        return ts[self.index]


def select_run(dump: str | os.PathLike[str], **selection: Any) -> DumpGroup:
    """The one run of a dump tree that the selection (time, device_id, model_name, model_id, data_index) names."""
    index = scan(dump)
    if index.dump_count == 0:
        raise NotFoundError(f"{dump}: no device dump files found")
    return index.select(**selection)


def device_ops(group: DumpGroup) -> list[DeviceOp]:
    """The newest dump of every op in a run, with its tensor counts (headers only)."""
    ops = []
    for e in group.newest().values():
        try:
            d = e.open()
        except DumpcmpError:
            continue  # an unreadable dump holds no data to take
        ops.append(DeviceOp(e.op_name, e.op_type, len(d.inputs), len(d.outputs), order=e.order(), ref=e))
    return ops


def find_tensors(group: DumpGroup, graph: Graph | None,
                 wanted: Mapping[str, tuple[str, int]]) -> dict[str, DeviceTensor]:
    """tensor name -> the device tensor holding it, for `wanted` (tensor name -> (producing node, output index);
    a model input is (its name, 0), as the ground truth names it). Outputs are preferred to inputs; raw integer
    tensors of quantized ops are never taken."""
    keys = {f"{node}.{idx}": tensor for tensor, (node, idx) in wanted.items()}
    pairs = pair_with_ground_truth(device_ops(group), keys, graph)
    found: dict[str, DeviceTensor] = {}
    for kind in ("output", "input"):
        for p in pairs:
            if p.kind != kind or p.npu_ref is None or p.ground_truth_ref is None or p.skip_reason is not None:
                continue
            found.setdefault(p.ground_truth_ref, DeviceTensor(p.npu_ref, kind, p.index or 0, p))
    if graph is not None:
        for key, tensor in original_cast_outputs(group, graph).items():
            if key in keys and keys[key] not in found:
                found[keys[key]] = tensor
    return found


def original_cast_outputs(group: DumpGroup, graph: Graph) -> dict[str, DeviceTensor]:
    """`{node}.{k}` -> where the dump holds output k of an original Cast/TransData node (one device op stands for it
    alone; not one the compiler inserted): that op's output k, else a dumped consumer's input reading it."""
    from dumpcmp.graph.pairing import graph_op_of

    def cast_of(op: Any) -> str | None:
        originals = graph.original_names(op)
        if op.type in PASS_THROUGH_TYPES and not op.is_inserted and len(originals) == 1:
            return originals[0]
        return None

    def found(e: DumpEntry, kind: str, i: int, node: str, k: int, desc: Any, op: Any) -> DeviceTensor:
        pair = TensorPair(e.op_name, e.op_type, kind, i, f"{e.op_name}:{kind}:{i}", node, (node,), f"{node}.{k}",
                          npu_ref=e, graph_op=op.name, origin_shape=desc.origin_shape if desc else None,
                          origin_format=desc.origin_format if desc else None,
                          origin_data_type=desc.origin_data_type if desc else None)
        return DeviceTensor(e, kind, i, pair)

    out: dict[str, DeviceTensor] = {}
    dumped = []
    for e in group.newest().values():
        op = graph_op_of(graph, e.op_name)
        if op is None:
            continue
        try:
            d = e.open()
        except DumpcmpError:
            continue  # an unreadable dump holds no data to take
        dumped.append((e, op, len(d.inputs), len(d.outputs)))
    for e, op, _, n_out in dumped:
        node = cast_of(op)
        if node is not None:
            for k in range(min(n_out, len(op.output_desc))):
                out.setdefault(f"{node}.{k}", found(e, "output", k, node, k, op.output(k), op))
    for e, op, n_in, _ in dumped:
        for i, prod in enumerate(graph.producers(op)[:n_in]):
            node = cast_of(prod[0]) if prod is not None else None
            if prod is not None and node is not None:
                out.setdefault(f"{node}.{prod[1]}", found(e, "input", i, node, prod[1], prod[0].output(prod[1]), op))
    return out


def ground_truth(gt: GroundTruthIndex | RunGroundTruth, node: str, idx: int, shape: Sequence[int] | None,
                 dtype: np.dtype | None) -> np.ndarray | None:
    """The ground truth of output `idx` of `node` (None when there is no file)."""
    entry = gt.get(node, idx)
    if entry is None:
        return None
    data = ground_truth_data(entry)
    if not isinstance(data, np.ndarray):  # a framework dump's tensor
        return decode(data, shape=shape, dtype=dtype)
    a = np.asarray(data)
    if dtype is not None and a.dtype != dtype:
        a = a.astype(dtype)
    return np.ascontiguousarray(a)
