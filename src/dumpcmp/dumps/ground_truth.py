"""Ground truth on disk: the index that `dumpcmp golden` writes beside its tensors (golden_index.csv).

In: a ground-truth folder. Out: its index records (which op and output each file holds, and which files are
weights only). The index is the mapping from original op names to files; a comparison pairs through it.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

from dumpcmp.errors import ConfigError, NotFoundError

INDEX_NAME = "golden_index.csv"
INDEX_COLUMNS = ("order", "op_name", "file_op_name", "op_type", "output_index", "tensor_name", "file", "shape",
                 "dtype", "note")
CONSTANT_MARK = "constant (weights only)"  # in a record's note: a weight or constant, not a layer's output


@dataclass
class GoldenRecord:
    """One row of the index: an output of an op (or a model input), written to `file` or skipped (`file` "")."""

    order: int
    op_name: str
    file_op_name: str
    op_type: str
    output_index: int
    tensor_name: str
    file: str = ""
    shape: tuple[int, ...] | None = None
    dtype: str = ""
    note: str = ""

    def row(self) -> list[str]:
        return [str(self.order), self.op_name, self.file_op_name, self.op_type, str(self.output_index),
                self.tensor_name, self.file, "" if self.shape is None else json.dumps(list(self.shape)),
                self.dtype, self.note]


def read_golden_index(path: str | os.PathLike[str]) -> list[GoldenRecord]:
    """The records of a `golden_index.csv`."""
    p = Path(path)
    if p.is_dir():
        p = p / INDEX_NAME
    try:
        with open(p, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as error:
        raise NotFoundError(f"{p}: cannot read the golden index: {error.strerror or error}") from error
    if not rows or tuple(rows[0]) != INDEX_COLUMNS:
        raise ConfigError(f"{p}: not a golden index (expected the header {','.join(INDEX_COLUMNS)})")
    records = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(INDEX_COLUMNS):
            raise ConfigError(f"{p}: line {line} has {len(row)} fields, expected {len(INDEX_COLUMNS)}")
        shape = tuple(json.loads(row[7])) if row[7] else None
        records.append(GoldenRecord(int(row[0]), row[1], row[2], row[3], int(row[4]), row[5], row[6], shape,
                                    row[8], row[9]))
    return records
