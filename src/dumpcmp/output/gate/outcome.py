"""Gates for CI: does a comparison pass?

In: a `ComparisonResult`, the advice on it, floors and ceilings on metric columns (`--fail-below [METRIC=]X`,
`--fail-above METRIC=X`) and advice rules or extra metric columns that fail the run (`--fail-on`). Out: a
`GateOutcome` whose `failing` lists every layer that fails and why; the CLI exits 1 when it is not empty, 0 when it
is (2 stays for bad input).

A metric column is a built-in metric of the result or an extra one (a custom algorithm's, any plug-in's:
`dumpcmp.comparison.extra_metrics`). What a NaN means: in a built-in column, as the cosine floor always had it, a
NaN fails only when the device side overflowed (NaN/inf) or went all zero (a metric undefined on the ground truth's
values, such as the cosine of an all-zero ground truth, does not); in an extra column a NaN (or a text that is no
number) fails, with the row's CompareFailReason: the plug-in could not judge the layer, and a gate that cannot be
checked must not pass in silence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from dumpcmp.comparison.extra_metrics import cell_number, extra_metric_cells, result_extra_names
from dumpcmp.comparison.metrics import METRIC_INDEX, METRICS
from dumpcmp.comparison.rows import metric_value
from dumpcmp.output.advice import RULES, Advice, column_of, distinct_positions, distinct_rows, row_keys, row_of
from dumpcmp.errors import ConfigError

__all__ = ["Bound", "GateOutcome", "evaluate", "parse_bounds", "parse_rules", "extra_values"]

COSINE = METRICS[0]


@dataclass(frozen=True)
class Bound:
    """`--fail-below METRIC=X` (below=True) or `--fail-above METRIC=X`: a compared row whose METRIC is beyond
    `limit` fails."""

    metric: str
    limit: float
    below: bool = True

    @property
    def flag(self) -> str:
        return "--fail-below" if self.below else "--fail-above"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "limit": self.limit, "fails": "below" if self.below else "above"}


def parse_bounds(values: Iterable[str] | None, *, below: bool = True,
                 columns: Sequence[str] | None = None) -> list[Bound]:
    """`--fail-below` / `--fail-above` values: `METRIC=X` (a metric column's name, or a built-in's index 0-9), or,
    for `--fail-below`, a bare X for CosineSimilarity. `columns`: the metric columns the result will have (None:
    not checked)."""
    flag = "--fail-below" if below else "--fail-above"
    out: list[Bound] = []
    for text in values or ():
        name, sep, number = str(text).rpartition("=")
        name = name.strip()
        if not sep:
            if not below:
                raise ConfigError(f"{flag} {text}: give METRIC=X (the metric column whose values may not exceed X)")
            name = COSINE
        elif name.isdigit() and int(name) in METRICS:
            name = METRICS[int(name)]
        if not name:
            raise ConfigError(f"{flag} {text}: no metric name before '='")
        try:
            limit = float(number)
        except ValueError:
            raise ConfigError(f"{flag} {text}: {number.strip()!r} is not a number") from None
        if not math.isfinite(limit):
            raise ConfigError(f"{flag} {text}: give a finite number")
        if name == COSINE and not -1.0 <= limit <= 1.0:
            raise ConfigError(f"{flag} must be a cosine similarity in [-1, 1], not {limit}")
        if columns is not None and name not in columns:
            raise ConfigError(f"{flag} {text}: {name} is not a metric column of this comparison (its columns: "
                              f"{', '.join(columns)})")
        out.append(Bound(name, limit, below))
    return out


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


def parse_rules(values: Iterable[str] | None, columns: Sequence[str] = ()) -> list[str]:
    """`--fail-on` values (repeatable, comma-separated; `any` = every advice rule), checked against the rule names
    and `columns`, the extra metric columns (a compared row whose cell in one is NaN fails)."""
    rules: list[str] = []
    for v in values or ():
        rules += [p.strip() for p in v.split(",") if p.strip()]
    if "any" in rules:
        rules = list(RULES) + [r for r in rules if r in columns and r not in RULES]
    unknown = [r for r in rules if r not in RULES and r not in columns]
    if unknown:
        extra = f"; extra metric columns: {', '.join(columns)}" if columns else ""
        raise ConfigError(f"--fail-on: unknown rule {', '.join(unknown)} (rules: {', '.join(RULES)}, any{extra})")
    return list(dict.fromkeys(rules))


def _where(r: Any) -> str:
    return f"#{r.index} {r.shown_tensor} ({r.op_type})"


def _nan_reason(r: Any) -> str:
    return r.fail_reason or "no reason given"


def _extra_failure(r: Any, name: str, cell: str) -> str | None:
    """Why an extra column's cell fails any gate on it (NaN, or a text that is no number), or None."""
    value = cell_number(cell)
    if value is None:
        return f"{_where(r)}: {name} {cell!r} is not a number"
    if math.isnan(value):
        return f"{_where(r)}: {name} NaN: {_nan_reason(r)}"
    return None


def _check_bound(out: GateOutcome, result: Any, bound: Bound, extra: Sequence[str]) -> None:
    sign = "<" if bound.below else ">"
    what = "cosine" if bound.metric == COSINE else bound.metric
    if bound.metric in extra:
        for r in distinct_rows(result):
            cell = extra_metric_cells(result, r)[bound.metric]
            failure = _extra_failure(r, bound.metric, cell)
            if failure is not None:
                out.failing.append(failure)
            elif float(cell) < bound.limit if bound.below else float(cell) > bound.limit:
                out.failing.append(f"{_where(r)}: {what} {float(cell):.6f} {sign} {bound.limit:g}")
        return
    # a built-in metric: read from the rows' columns, a row built only for what fails (issue #35)
    metric = METRIC_INDEX[bound.metric]
    results, overflow, dead = column_of(result, "result"), column_of(result, "overflow"), column_of(result, "dead")
    for k in distinct_positions(result):
        value = metric_value(results[k], metric)
        if math.isnan(value):
            if overflow[k] or dead[k]:  # the built-ins' rule: NaN because the device side went wrong
                out.failing.append(f"{_where(row_of(result, k))}: {what} NaN {sign} {bound.limit:g}")
        elif value < bound.limit if bound.below else value > bound.limit:
            out.failing.append(f"{_where(row_of(result, k))}: {what} {value:.6f} {sign} {bound.limit:g}")


def evaluate(result: Any, *, fail_below: float | None = None, fail_on: Sequence[str] = (),
             advice: Sequence[Advice] = (), bounds: Sequence[Bound] = ()) -> GateOutcome:
    """Every compared row whose cosine is below `fail_below` (or NaN while the device side overflowed or went all
    zero; an input repeating an output's values is listed once, as the output), every row beyond one of `bounds`
    (`parse_bounds`; NaN as the module says), every row whose cell in an extra metric column named in `fail_on` is
    NaN, and every advice of a rule in `fail_on`."""
    out = GateOutcome()
    extra = result_extra_names(result)
    checks = ([] if fail_below is None else parse_bounds([str(fail_below)])) + list(bounds)
    for bound in checks:
        if bound.metric not in extra and (bound.metric not in METRIC_INDEX or
                                          METRIC_INDEX[bound.metric] not in result.algorithms):
            raise ConfigError(f"{bound.flag} {bound.metric}: not a metric column of this comparison")
        _check_bound(out, result, bound, extra)
    wanted = set(fail_on)
    for name in (n for n in dict.fromkeys(fail_on) if n not in RULES):
        if name not in extra:
            raise ConfigError(f"--fail-on {name}: neither an advice rule nor an extra metric column of this "
                              f"comparison")
        for r in distinct_rows(result):
            failure = _extra_failure(r, name, extra_metric_cells(result, r)[name])
            if failure is not None:
                out.failing.append(f"[{name}] {failure}")
    for a in advice:
        if a.rule in wanted:
            out.failing.append(f"[{a.rule}] " + (f"#{a.row} " if a.row is not None else "") + f"{a.layer}: {a.message}")
    return out


def extra_values(result: Any) -> dict[str, Any] | None:
    """The extra metric columns' values of every compared row, for `--json` (None without extra columns): numbers,
    null for NaN, a text that is no finite number (`inf` too) as it is; `reason` (the row's CompareFailReason) where
    one is NaN or a text that is no number."""
    names = result_extra_names(result)
    if not names:
        return None
    keys = row_keys(result)
    rows = []
    for r in result.rows:
        if r.result is None:
            continue
        cells = extra_metric_cells(result, r)
        values: dict[str, Any] = {}
        judged = True
        for name in names:
            value = cell_number(cells[name])
            judged = judged and value is not None and not math.isnan(value)
            values[name] = None if value is not None and math.isnan(value) else \
                value if value is not None and math.isfinite(value) else cells[name]  # inf as its text
        rec = {"row": r.index, "key": keys[id(r)], "tensor": r.shown_tensor, "op_type": r.op_type, "values": values}
        if not judged:
            rec["reason"] = r.fail_reason
        rows.append(rec)
    return {"columns": names, "rows": rows}
