"""Diff of two result files (e.g. two compiler versions' `dumpcmp compare -o` CSVs).

In: two result files in the original tool's CSV columns. Out: a `DiffResult`: the rows matched by their key, which
got better or worse in a metric (built-in or an extra column, such as a custom algorithm's) beyond a tolerance, and
the rows new in B or vanished from A (`results`).
"""

from dumpcmp.output.diff.results import (
    HIGHER_IS_BETTER,
    KNOWN_COLUMNS,
    Change,
    DiffResult,
    diff,
    extra_metric_columns,
    read_result,
)

__all__ = ["DiffResult", "Change", "read_result", "diff", "HIGHER_IS_BETTER", "KNOWN_COLUMNS", "extra_metric_columns"]
