"""Diff of two result files (e.g. two compiler versions' `dumpcmp compare -o` CSVs).

In: two result files in the original tool's CSV columns. Out: the rows matched by their key (TensorIndex, else
NPUDump, else GroundTruth, with the occurrence number for repeats), which got better or worse in a metric beyond a
tolerance, and the rows new in B or vanished from A. The CLI exits 1 when anything got worse or vanished (0
otherwise, 2 for unreadable input), with `--json` for machines.

Beside the built-in metric columns, a result file may hold extra ones (a custom algorithm's, `compare -c DIR -alg
Name`, or any plug-in's): every column that is none of the known ones and whose cells are all numbers or NaN
(`extra_metric_columns`). They are compared as the built-ins are (smaller is better unless `higher_is_better`); an
extra column only one file has is noted, and one the compared metric needs on both sides is an error naming the file
that lacks it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dumpcmp.comparison.extra_metrics import cell_number
from dumpcmp.comparison.metrics import METRICS
from dumpcmp.dumps.naming import sanitize
from dumpcmp.errors import ConfigError, DumpError
from dumpcmp.graph.pairing import shown_tensor_index
from dumpcmp.output.table import EXTRA_COLUMNS, LOCATED_COLUMNS, OVERFLOW_COLUMN, REASON_COLUMN, ROW_COLUMNS

__all__ = ["DiffResult", "Change", "read_result", "diff", "HIGHER_IS_BETTER", "KNOWN_COLUMNS",
           "extra_metric_columns"]

#: metrics where a larger value is better; every other metric column is an error (smaller is better)
HIGHER_IS_BETTER = {"CosineSimilarity", "SQNR(dB)"}
#: the columns dumpcmp and the original tool write themselves (any other is an extra column)
KNOWN_COLUMNS = frozenset((*ROW_COLUMNS, "OpSequence", OVERFLOW_COLUMN, *METRICS.values(), *EXTRA_COLUMNS,
                           REASON_COLUMN, *LOCATED_COLUMNS))


@dataclass
class Change:
    key: str
    metric: str
    a: float
    b: float
    delta: float


@dataclass
class DiffResult:
    metric: str
    tolerance: float
    better: list[Change] = field(default_factory=list)
    worse: list[Change] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)
    unchanged: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        return bool(self.worse or self.vanished)

    def to_dict(self) -> dict[str, Any]:
        def clean(v: Any) -> Any:
            return None if isinstance(v, float) and not math.isfinite(v) else v

        d = asdict(self)
        for k in ("better", "worse"):
            d[k] = [{kk: clean(vv) for kk, vv in c.items()} for c in d[k]]
        d["regressed"] = self.regressed
        return d

    def text(self, limit: int = 30) -> str:
        lines = [f"{len(self.worse)} worse, {len(self.better)} better, {self.unchanged} within {self.tolerance:g}, "
                 f"{len(self.new)} new, {len(self.vanished)} vanished ({self.metric})"]
        lines += [f"  note: {n}" for n in self.notes]
        for title, items in (("worse", self.worse), ("better", self.better)):
            for c in items[:limit]:
                lines.append(f"  {title}: {c.key}: {c.a:.6f} -> {c.b:.6f} ({c.delta:+.6f})")
            if len(items) > limit:
                lines.append(f"  ... and {len(items) - limit} more {title}")
        for title, keys in (("new", self.new), ("vanished", self.vanished)):
            for k in keys[:limit]:
                lines.append(f"  {title}: {k}")
            if len(keys) > limit:
                lines.append(f"  ... and {len(keys) - limit} more {title}")
        return "\n".join(lines)


def _value(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def shown_key(key: str, row: dict[str, str]) -> str:
    """A row's key as the texts print it: the op spelt as the graph JSON does when the result file was made with
    one (its NPUDump cell holds the graph's name, TensorIndex the dump's: `Conv.2:output:0`, not `Conv_2:...`)."""
    op = row.get("NPUDump") or ""
    index = row.get("TensorIndex") or ""
    dumped = index.split(":", 1)[0]
    if not index or not key.startswith(index) or op in ("", "*", dumped) or sanitize(op) != dumped:
        return key
    return (shown_tensor_index(index, dumped, op) or index) + key[len(index):]


def read_result(path: str | Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(header, key -> row as a dict) of a result CSV."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
            table = list(csv.reader(f))
    except OSError as error:
        raise DumpError(f"{path}: cannot read: {error.strerror}") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise DumpError(f"{path}: not a CSV result file ({error})") from None
    if not table or "Index" not in table[0]:
        raise DumpError(f"{path}: not a dumpcmp/compare_vector result CSV (no header with Index)")
    header = table[0]
    rows: dict[str, dict[str, str]] = {}
    seen: dict[str, int] = {}
    for number, cells in enumerate(table[1:], 2):
        if not cells:
            continue
        if len(cells) != len(header):
            raise DumpError(f"{path}:{number}: {len(cells)} cells, the header has {len(header)}")
        row = {}
        for name, cell in zip(header, cells):
            row.setdefault(name, cell)  # DataType appears twice: the device's comes first
        base = row.get("TensorIndex") or row.get("NPUDump") or "*"
        if base in ("", "*"):
            base = "GroundTruth:" + row.get("GroundTruth", "")
        seen[base] = seen.get(base, 0) + 1
        rows[base if seen[base] == 1 else f"{base}#{seen[base]}"] = row
    return header, rows


def extra_metric_columns(header: list[str], rows: dict[str, dict[str, str]]) -> list[str]:
    """The extra metric columns of a result file: none of `KNOWN_COLUMNS`, every cell a number or NaN."""
    return [h for h in dict.fromkeys(header) if h not in KNOWN_COLUMNS
            and all(cell_number(row[h]) is not None for row in rows.values())]


def _text_cell(path: str | Path, header: list[str], rows: dict[str, dict[str, str]], column: str) -> None:
    """An extra column compared must hold numbers: its first text cell is an error."""
    for key, row in rows.items():
        if cell_number(row[column]) is None:
            raise ConfigError(f"{path}: the {column} column holds {row[column]!r} (row {key}), not a number: only "
                              f"columns of numbers or NaN can be compared")


def diff(a_path: str | Path, b_path: str | Path, *, metric: str = "CosineSimilarity",
         tolerance: float = 1e-4, higher_is_better: bool | None = None) -> DiffResult:
    """Compare the `metric` column of two result files row by row. `higher_is_better`: the direction of an extra
    metric column (default: smaller is better, as an error); the built-ins' is known."""
    if tolerance < 0:
        raise ConfigError(f"--tolerance must be 0 or more, not {tolerance}")
    ha, a = read_result(a_path)
    hb, b = read_result(b_path)
    for path, header, other_path, other in ((a_path, ha, b_path, hb), (b_path, hb, a_path, ha)):
        if metric not in header:
            metrics = [h for h in header if h not in ROW_COLUMNS + (REASON_COLUMN,)]
            has = f"; {other_path} has it" if metric in other else ""
            raise ConfigError(f"{path}: no {metric} column{has} (it has {', '.join(metrics)})")
    known = metric in KNOWN_COLUMNS
    if higher_is_better is not None and known:
        raise ConfigError(f"--higher-is-better is for extra metric columns: {metric}'s direction is known "
                          f"({'larger' if metric in HIGHER_IS_BETTER else 'smaller'} is better)")
    if not known:
        _text_cell(a_path, ha, a, metric)
        _text_cell(b_path, hb, b, metric)
    up = metric in HIGHER_IS_BETTER if known else bool(higher_is_better)
    out = DiffResult(metric, tolerance)
    extra_a, extra_b = extra_metric_columns(ha, a), extra_metric_columns(hb, b)
    out.notes = [f"{c}: an extra metric column only {path} has" for cols, others, path in
                 ((extra_a, hb, a_path), (extra_b, ha, b_path)) for c in cols if c not in others]
    if not known:
        out.notes.append(f"{metric}: an extra metric column, {'larger' if up else 'smaller'} is better")
    out.vanished = [shown_key(k, a[k]) for k in a if k not in b]
    out.new = [shown_key(k, b[k]) for k in b if k not in a]
    for key in a:
        if key not in b:
            continue
        va, vb = _value(a[key][metric]), _value(b[key][metric])
        name = shown_key(key, a[key]) if shown_key(key, a[key]) != key else shown_key(key, b[key])
        if math.isnan(va) and math.isnan(vb):
            out.unchanged += 1
            continue
        if math.isnan(va) or math.isnan(vb):
            # a value appearing is better, one disappearing (a row that no longer compares) is worse
            (out.better if math.isnan(va) else out.worse).append(Change(name, metric, va, vb, math.nan))
            continue
        delta = vb - va
        gain = delta if up else -delta
        if gain > tolerance:
            out.better.append(Change(name, metric, va, vb, delta))
        elif gain < -tolerance:
            out.worse.append(Change(name, metric, va, vb, delta))
        else:
            out.unchanged += 1
    out.worse.sort(key=lambda c: -abs(c.delta) if math.isfinite(c.delta) else -math.inf)
    out.better.sort(key=lambda c: -abs(c.delta) if math.isfinite(c.delta) else -math.inf)
    return out
