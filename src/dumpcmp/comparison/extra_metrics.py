"""Extra metric columns: the metric columns of a result beyond the built-in metrics the engine computes.

Today these are the original tool's custom algorithms (`compare -c DIR -alg Name`, `custom_alg.CustomAlgorithms`);
any plug-in whose columns ride in the same container (`ComparisonResult.custom_algorithms`: `names()` gives the
metric columns in order, `cells(row, builtin_cell)` a row's cells, `builtin` the built-in indices the engine computes)
is an extra column here too. The report, the gates and `--json` read them only through this module, so they show
every such column without knowing where it came from. A cell is the text the result file holds: a number, `NaN`
(not computed: the row's CompareFailReason says why) or any other text a plug-in returned.
"""

from __future__ import annotations

import math
from typing import Any

from dumpcmp.comparison.metrics import METRICS

__all__ = ["extra_metric_names", "result_extra_names", "extra_metric_cells", "metric_column_names", "cell_number"]


def extra_metric_names(custom: Any) -> list[str]:
    """The extra metric columns of a `custom_algorithms` container (None: none), in the result file's order. A
    plug-in named as a built-in replaces it, and its column is an extra one."""
    if custom is None:
        return []
    builtin = {METRICS[i] for i in custom.builtin}
    return [name for name in custom.names() if name not in builtin]


def result_extra_names(result: Any) -> list[str]:
    """The extra metric columns of a result (a statistics compare's has none)."""
    return extra_metric_names(getattr(result, "custom_algorithms", None))


def metric_column_names(custom: Any, algorithms: tuple[int, ...]) -> list[str]:
    """Every metric column of the result file, built-in and extra, in order (`algorithms`: the built-ins computed
    when there is no `custom` container)."""
    return [METRICS[i] for i in algorithms] if custom is None else list(custom.names())


def extra_metric_cells(result: Any, row: Any) -> dict[str, str]:
    """A row's extra metric cells, name -> the text its result file cell holds (`NaN` where none was computed)."""
    custom = getattr(result, "custom_algorithms", None)
    extra = set(extra_metric_names(custom))
    if not extra:
        return {}
    cells = custom.cells(row, lambda _row, _index: "")  # the built-in cells are not wanted here
    return {name: cell for name, cell in zip(custom.names(), cells) if name in extra}


def cell_number(text: str) -> float | None:
    """A metric cell as a number: NaN for `NaN` (or an empty cell), None for a text that is not a number."""
    text = text.strip()
    if not text:
        return math.nan
    try:
        return float(text)
    except ValueError:
        return None
