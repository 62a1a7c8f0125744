"""Advice: rules that turn a comparison's numbers into a suggestion, each citing the numbers it rests on.

In: a `ComparisonResult`, optionally ground-truth histograms of some rows, a calibrator's min/max table and a locate
result (own vs inherited error). Out: a list of `Advice` (rule, layer, message with the measured values, evidence).
The rules and their thresholds live in `rules`.
"""

from dumpcmp.output.advice.rules import (
    MOVING_TYPES,
    RULES,
    Advice,
    LocateRow,
    Thresholds,
    advise,
    column_of,
    device_precision,
    distinct_positions,
    distinct_rows,
    load_locate,
    normalise_locate,
    once_per_tensor,
    quantized_tensors,
    row_keys,
    row_of,
)

__all__ = ["Advice", "Thresholds", "RULES", "advise", "LocateRow", "load_locate", "normalise_locate",
           "distinct_rows", "row_keys", "device_precision", "once_per_tensor", "quantized_tensors",
           "MOVING_TYPES", "distinct_positions", "column_of", "row_of"]
