"""Gates for CI: does a comparison pass?

In: a `ComparisonResult`, the advice on it, a cosine floor and advice rules that fail the run. Out: a `GateOutcome`
listing every failing layer and why (`outcome`); the CLI exits 1 when it is not empty.
"""

from dumpcmp.output.gate.outcome import GateOutcome, evaluate, parse_rules

__all__ = ["GateOutcome", "evaluate", "parse_rules"]
