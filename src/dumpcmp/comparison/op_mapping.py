"""The mapping of device ops to ground-truth ops, without comparing (the original's `compare -map`).

With a graph JSON (`-f`, or a quant fusion rule `-q`) each device tensor is paired exactly as a comparison pairs
it, and the rows are laid out as the result file's (every graph op in order, fusion units sharing an Index, graph
ops without a dump file on a row of their own); no tensor is read. `dumpcmp.output.mapping_table` writes them as
the original's mapping_{time}.csv: Index, OpType, NPUDump, GroundTruth, TensorIndex, NPUDumpPath, GroundTruthPath.
"""

from __future__ import annotations

import os
from typing import Any

from dumpcmp.comparison.rows import ComparisonResult, Row
from dumpcmp.comparison.stream import graph_rows
from dumpcmp.comparison.runs import paired_runs
from dumpcmp.errors import ConfigError
from dumpcmp.graph.pairing import DEQUANTIZE_TYPES, QUANTIZE_TYPES, TensorPair

__all__ = ["mapping_runs"]

#: op names the original takes for a dequantize op's whatever their type
_DEQUANT_SUFFIXES = ("_dequant_layer", "AscendDequant", "_dequant")


def _mapped(pair: TensorPair) -> bool:
    """The original's -map rule, narrower than a comparison's quantization rules: a dequantize op's inputs and a
    quantize op's outputs (raw integers) have no row; every other tensor has one, whatever its producer."""
    if pair.kind == "input":
        name = pair.graph_op or pair.npu_op or ""
        return pair.op_type not in DEQUANTIZE_TYPES and not name.endswith(_DEQUANT_SUFFIXES)
    return pair.op_type not in QUANTIZE_TYPES


def mapping_runs(left: str | os.PathLike[str], right: str | os.PathLike[str], *,
                 fusion_json: str | os.PathLike[str] | None = None,
                 quant_json: str | os.PathLike[str] | None = None,
                 close_fusion_json: str | os.PathLike[str] | None = None, **selection: Any) -> list[ComparisonResult]:
    """One result per run of the left tree, its rows paired but not compared (`result` None throughout).

    `selection`: time, device_id, model_name, model_id, data_index, gt_sample, right_time, right_data_index (as
    `dumpcmp.comparison.compare.compare_runs` takes them). ConfigError without a graph JSON or quant rule, or
    against another device dump without `close_fusion_json` (`-cf`: then the unfused dump's files are mapped):
    the mapping is the graph's."""
    if fusion_json is None and quant_json is None:
        raise ConfigError("the op mapping (-map) needs the graph JSON (-f) or the quant fusion rule file (-q)")
    results = []
    for run in paired_runs(left, right, fusion_json=fusion_json, quant_json=quant_json,
                           close_fusion_json=close_fusion_json, **selection):
        if run.graph is None:
            raise ConfigError(f"{right}: the op mapping (-map) pairs device ops with ground-truth files through the "
                              f"graph; this is another device dump (the fused model's against the unfused one's: -cf)")
        rows = [Row(index=n, op_type=p.op_type or "", npu_dump=p.npu_column, npu_data_type=None, npu_address=None,
                    ground_truth=p.ground_truth_column, ground_truth_data_type=None, ground_truth_address=None,
                    tensor_index=p.tensor_index, shape=None, pair=p, fail_reason=p.note or "")
                for n, p in enumerate(run.pairs) if _mapped(p)]
        # the ops inside a quant/dequant pair, which a comparison leaves out, are mapped
        rows = graph_rows(rows, run.graph, quant_pairs_left_out=False)
        results.append(ComparisonResult(rows, (), os.fspath(left), os.fspath(right), run.run,
                                        notes=list(run.notes), graph=run.graph))
    return results
