"""The op mapping file (the original's `compare -map`: mapping_{YYYYmmddHHMMSS}.csv): one row per device tensor
of `dumpcmp.comparison.op_mapping.mapping_runs`, with the dump file and the ground-truth file it pairs with
(`NaN`: none; a graph op without a dump file has `NaN` from TensorIndex on)."""

from __future__ import annotations

import os
from pathlib import Path

from dumpcmp.comparison.rows import ComparisonResult, Row
from dumpcmp.output.table import NOT_COMPUTED, csv_text
from dumpcmp.support.files import atomic_write_text

__all__ = ["MAPPING_HEADER", "mapping_table", "write_mapping"]

MAPPING_HEADER = ("Index", "OpType", "NPUDump", "GroundTruth", "TensorIndex", "NPUDumpPath", "GroundTruthPath")


def _paths(r: Row) -> tuple[str, str]:
    p = r.pair
    if r.unmatched or p is None:
        return NOT_COMPUTED, NOT_COMPUTED
    ref = p.npu_ref
    # an FFTS+ sliced op: its last slice's file, as the original names it
    npu = NOT_COMPUTED if ref is None else ref.slices[-1] if ref.slices else ref.entry.path
    truth = p.ground_truth_ref.path if p.ground_truth_ref is not None else NOT_COMPUTED
    return npu, truth


def mapping_table(result: ComparisonResult) -> list[list[str]]:
    """The header and one row of cells per row of `result` (with -r/-s, OpSequence after Index)."""
    head = list(MAPPING_HEADER)
    if result.op_sequence is not None:
        head.insert(1, "OpSequence")
    table = [head]
    for r in result.rows:
        cells = [str(r.index), r.op_type, r.npu_dump, r.ground_truth, r.tensor_index or NOT_COMPUTED, *_paths(r)]
        if result.op_sequence is not None:
            cells.insert(1, str(result.op_sequence.get(id(r), "")))
        table.append(cells)
    return table


def write_mapping(result: ComparisonResult, path: str | os.PathLike[str], *, force: bool = False) -> Path:
    """Write the mapping file (CSV, whole or not at all; an existing file kept unless `force`)."""
    return atomic_write_text(Path(path), csv_text(mapping_table(result)), force=force, what="mapping file")
