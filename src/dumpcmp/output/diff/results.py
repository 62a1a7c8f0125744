"""Diff of two result files (e.g. two compiler versions' `dumpcmp compare -o` CSVs).

In: two result files in the original tool's CSV columns. Out: the rows matched by their key (TensorIndex, else
NPUDump, else GroundTruth, with the occurrence number for repeats), which got better or worse in a metric beyond a
tolerance, and the rows new in B or vanished from A. The CLI exits 1 when anything got worse or vanished (0
otherwise, 2 for unreadable input), with `--json` for machines.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dumpcmp.dumps.naming import sanitize
from dumpcmp.errors import ConfigError, DumpError
from dumpcmp.graph.pairing import shown_tensor_index
from dumpcmp.output.table import REASON_COLUMN, ROW_COLUMNS

__all__ = ["DiffResult", "Change", "read_result", "diff", "HIGHER_IS_BETTER"]

#: metrics where a larger value is better; every other metric column is an error (smaller is better)
HIGHER_IS_BETTER = {"CosineSimilarity", "SQNR(dB)"}


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


def diff(a_path: str | Path, b_path: str | Path, *, metric: str = "CosineSimilarity",
         tolerance: float = 1e-4) -> DiffResult:
    """Compare the `metric` column of two result files row by row."""
    if tolerance < 0:
        raise ConfigError(f"--tolerance must be 0 or more, not {tolerance}")
    ha, a = read_result(a_path)
    hb, b = read_result(b_path)
    for path, header in ((a_path, ha), (b_path, hb)):
        if metric not in header:
            metrics = [h for h in header if h not in ROW_COLUMNS + (REASON_COLUMN,)]
            raise ConfigError(f"{path}: no {metric} column (it has {', '.join(metrics)})")
    up = metric in HIGHER_IS_BETTER
    out = DiffResult(metric, tolerance)
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
