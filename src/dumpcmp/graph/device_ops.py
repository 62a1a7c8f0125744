"""The compiled graph's ops as the device operators the pairing takes (`dumpcmp.graph.pairing.DeviceOp`), for the
stages that pair a graph JSON with the ground truth before, or without, reading a dump: choosing the layers a
bisect round dumps, the shapes `extract --list` shows, the region `locate` replays for one op.

In: a `dumpcmp.graph.graph_json.Graph` or one of its ops. Out: `DeviceOp`s, in the graph's execution order.
"""

from __future__ import annotations

from typing import Any

from dumpcmp.graph.pairing import DeviceOp
from dumpcmp.support.records import frozen_record

__all__ = ["NOT_RUN_DEVICE_TYPES", "device_ops", "dumped_device_op", "output_device_op"]

NOT_RUN_DEVICE_TYPES = frozenset({"Data", "Const", "Constant", "NetOutput"})
"""Op types of the graph JSON that no task runs: graph inputs, constants and the graph's output node."""


def output_device_op(op: Any) -> DeviceOp:
    """A compiled op as a dump of its outputs only would show it: no inputs, its outputs (at least output 0), in
    execution order."""
    return frozen_record(DeviceOp, {"op_name": op.name, "op_type": op.type, "n_inputs": 0,
                                    "n_outputs": max(len(op.output_desc), 1), "order": op.position, "ref": None})


def device_ops(graph: Any) -> list[DeviceOp]:
    """Every op of `graph` that runs (`NOT_RUN_DEVICE_TYPES` left out), as `output_device_op` gives it."""
    return [output_device_op(op) for op in graph.ops if op.type not in NOT_RUN_DEVICE_TYPES]


def dumped_device_op(op: Any) -> DeviceOp:
    """A compiled op as a dump_mode all dump holds it: its data inputs and its outputs as the graph JSON lists them."""
    return DeviceOp(op.name, op.type, len(op.data_inputs), len(op.output_desc))
