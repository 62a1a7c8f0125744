"""Gates for CI: does a comparison pass?

In: a `ComparisonResult`, the advice on it, floors and ceilings on its metric columns (built-in or extra) and advice
rules that fail the run. Out: a `GateOutcome` listing every failing layer and why (`outcome`); the CLI exits 1 when it
is not empty. `extra_values`: the extra metric columns' values for `--json`.
"""

from dumpcmp.output.gate.outcome import Bound, GateOutcome, evaluate, extra_values, parse_bounds, parse_rules

__all__ = ["Bound", "GateOutcome", "evaluate", "extra_values", "parse_bounds", "parse_rules"]
