"""The per-operator chart as static SVG: cosine similarity (and locate's own cosine) on top, relative RMSE below,
one point per operator output in execution order. Each point names its tensor on hover (<title>) and carries
`data-row` (the row's position in the result, which links and clicks use; the label shows its Index) for the page's
click handler."""

from __future__ import annotations

import math
from html import escape
from typing import Sequence

WIDTH, PANEL, LEFT, RIGHT, TOP, GAP = 1100, 190, 64, 16, 18, 34


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    return [lo + (hi - lo) * k / n for k in range(n + 1)]


def _panel(points: Sequence[tuple[int, float]], labels: dict[int, str], x_of, y0: float, lo: float, hi: float,
           title: str, cls: str, threshold: float | None = None, dashed: Sequence[tuple[int, float]] = (),
           radius: float = 3.2) -> list[str]:
    out = [f'<g class="panel {cls}">',
           f'<rect x="{LEFT}" y="{y0:.1f}" width="{WIDTH - LEFT - RIGHT}" height="{PANEL}" class="frame"/>',
           f'<text x="{LEFT}" y="{y0 - 5:.1f}" class="ptitle">{escape(title)}</text>']

    def y_of(v: float) -> float:
        v = min(max(v, lo), hi)
        return y0 + PANEL - (v - lo) / (hi - lo) * PANEL

    for t in _ticks(lo, hi):
        y = y_of(t)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{LEFT - 4}" y="{y + 3:.1f}" class="tick">{_fmt(t)}</text>')
    if threshold is not None and lo <= threshold <= hi:
        y = y_of(threshold)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" class="threshold">'
                   f'<title>threshold {threshold:g}</title></line>')
    for series, klass in ((dashed, "own"), (points, "main")):
        finite = [(i, v) for i, v in series if math.isfinite(v)]
        if len(finite) > 1:
            path = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in finite)
            out.append(f'<polyline points="{path}" class="line {klass}"/>')
    for i, v in dashed:
        if math.isfinite(v):
            out.append(f'<circle cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" r="{radius * 0.8:.1f}" class="pt own" '
                       f'data-row="{i}">'
                       f'<title>{escape(labels[i])}: own {_fmt(v)}</title></circle>')
    for i, v in points:
        bad = not math.isfinite(v)
        cy = y_of(lo if bad else v)
        klass = "pt bad" if bad or (threshold is not None and v < threshold) else "pt"
        out.append(f'<circle cx="{x_of(i):.1f}" cy="{cy:.1f}" r="{radius:.1f}" class="{klass}" data-row="{i}">'
                   f'<title>{escape(labels[i])}: {"NaN" if bad else _fmt(v)}</title></circle>')
    out.append("</g>")
    return out


def chart_svg(rows: Sequence[dict], threshold: float, *, own: dict[int, float] | None = None,
              element_id: str = "chart") -> str:
    """`rows`: dicts with `k` (row position), `i` (row Index), `name`, `op`, `cos`, `rel` (relative RMSE), in
    execution order; `own`: locate's own cosine by row position."""
    if not rows:
        return f'<svg id="{element_id}" class="chart empty" width="{WIDTH}" height="40"><text x="10" y="25">' \
               f'no compared tensors</text></svg>'
    n = len(rows)
    span = WIDTH - LEFT - RIGHT
    pos = {r["k"]: n for n, r in enumerate(rows)}

    def x_of(i: int) -> float:
        return LEFT + (pos[i] + 0.5) * span / n

    labels = {r["k"]: f'#{r["i"]} {r["name"]} ({r["op"]})' for r in rows}
    cos = [(r["k"], r["cos"]) for r in rows]
    finite = [v for _, v in cos if math.isfinite(v)] + ([v for v in own.values() if math.isfinite(v)] if own else [])
    lo = min(finite + [threshold]) if finite else 0.0
    lo = max(-1.0, lo - (1.0 - lo) * 0.08) if lo < 1.0 else 0.99
    rel = [(r["k"], r["rel"]) for r in rows]
    rel_finite = [v for _, v in rel if math.isfinite(v)]
    rel_hi = max(rel_finite) * 1.08 if rel_finite and max(rel_finite) > 0 else 1.0
    own_pts = [(i, own[i]) for i in pos if own and i in own]
    height = TOP + 2 * PANEL + GAP + 24
    parts = [f'<svg id="{element_id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
             f'height="{height}" viewBox="0 0 {WIDTH} {height}">']
    radius = min(3.2, max(0.8, span / n / 2))  # points of a 1,000-operator model must not cover each other
    parts += _panel(cos, labels, x_of, TOP, lo, 1.0,
                    "cosine similarity" + (" (dashed: own error from locate)" if own_pts else ""), "cos",
                    threshold, own_pts, radius)
    parts += _panel(rel, labels, x_of, TOP + PANEL + GAP, 0.0, rel_hi,
                    "relative RMSE (RelativeEuclideanDistance ||x - y|| / ||y||)", "rel", radius=radius)
    parts.append(f'<text x="{LEFT}" y="{height - 4}" class="tick start">operators in execution order '
                 f'({n}); click a point for its details</text></svg>')
    return "".join(parts)
