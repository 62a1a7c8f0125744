"""Diff of two result files (e.g. two compiler versions' `dumpcmp compare -o` CSVs).

In: two result files in the original tool's CSV columns. Out: a `DiffResult`: the rows matched by their key, which
got better or worse in a metric beyond a tolerance, and the rows new in B or vanished from A (`results`).
"""

from dumpcmp.output.diff.results import HIGHER_IS_BETTER, Change, DiffResult, diff, read_result

__all__ = ["DiffResult", "Change", "read_result", "diff", "HIGHER_IS_BETTER"]
