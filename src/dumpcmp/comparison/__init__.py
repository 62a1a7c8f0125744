"""Pairs -> rows of values. In: scanned runs and their pairs (dumps/, graph/). Out: rows of values, one compared
tensor each (compare), and the element-level detail of one tensor (single_op, detail).

- runs: the left tree's runs selected, each with its ground truth and its tensors paired (`paired_runs`);
- sources: a pair -> two engine sources (`Sides`), the device ops of a run;
- compare: `compare`, `compare_runs` and the batched engine calls (`compare` is not re-exported here: the name is
  its module's; `dumpcmp.compare` is the same function);
- rows: `Row` and `ComparisonResult` (values: numbers, tuples, None), the original tool's wording for what it
  cannot compare;
- metrics: the ten metrics of the original tool (`compare_arrays`).
"""

from dumpcmp.comparison.compare import compare_runs
from dumpcmp.comparison.rows import ComparisonResult, Row
from dumpcmp.comparison.runs import PairedRun, paired_runs
from dumpcmp.comparison.sources import Sides

__all__ = ["compare_runs", "ComparisonResult", "Row", "PairedRun", "paired_runs", "Sides"]
