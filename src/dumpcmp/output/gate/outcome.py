"""Gates for CI: does a comparison pass?

In: a `ComparisonResult`, the advice on it, a cosine floor (`--fail-below`) and advice rules that fail the run
(`--fail-on`). Out: a `GateOutcome` whose `failing` lists every layer that fails and why; the CLI exits 1 when it is
not empty, 0 when it is (2 stays for bad input).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from dumpcmp.output.advice import RULES, Advice, distinct_rows
from dumpcmp.errors import ConfigError

__all__ = ["GateOutcome", "evaluate", "parse_rules"]


@dataclass
class GateOutcome:
    failing: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failing

    def text(self, limit: int = 20) -> str:
        if self.passed:
            return "gate: PASS"
        lines = [f"gate: FAIL ({len(self.failing)} failing)"]
        lines += ["  " + f for f in self.failing[:limit]]
        if len(self.failing) > limit:
            lines.append(f"  ... and {len(self.failing) - limit} more")
        return "\n".join(lines)


def parse_rules(values: Iterable[str] | None) -> list[str]:
    """`--fail-on` values (repeatable, comma-separated; `any` = every rule), checked against the rule names."""
    rules: list[str] = []
    for v in values or ():
        rules += [p.strip() for p in v.split(",") if p.strip()]
    if "any" in rules:
        return list(RULES)
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise ConfigError(f"--fail-on: unknown rule {', '.join(unknown)} (rules: {', '.join(RULES)}, any)")
    return rules


def evaluate(result: Any, *, fail_below: float | None = None, fail_on: Sequence[str] = (),
             advice: Sequence[Advice] = ()) -> GateOutcome:
    """Every compared row whose cosine is below `fail_below` (or NaN while the device side overflowed or went all
    zero; an input repeating an output's values is listed once, as the output), and every advice of a rule in
    `fail_on`."""
    out = GateOutcome()
    if fail_below is not None:
        if not -1.0 <= fail_below <= 1.0:
            raise ConfigError(f"--fail-below must be a cosine similarity in [-1, 1], not {fail_below}")
        for r in distinct_rows(result):
            c = r.cosine
            if c < fail_below or (math.isnan(c) and (r.overflow or r.dead)):
                out.failing.append(f"#{r.index} {r.shown_tensor} ({r.op_type}): cosine "
                                   f"{'NaN' if math.isnan(c) else f'{c:.6f}'} < {fail_below:g}")
    wanted = set(fail_on)
    for a in advice:
        if a.rule in wanted:
            out.failing.append(f"[{a.rule}] " + (f"#{a.row} " if a.row is not None else "") + f"{a.layer}: {a.message}")
    return out
