"""The HTML report of a statistics compare (a `dump_data: stats` dump, `dumpcmp.comparison.stats.StatsResult`).

One self-contained page, no script: the run, the verdict counts and the first tensor that is not pass, a line
saying which values were measured on each side and which were not captured, and one row per tensor with each
side's Max / Min / Mean / L2Norm, their RelDiffs, the NaN/Inf counts and the verdict. No histograms, charts of
cosine or element errors: no tensor exists on the device side.
"""

from __future__ import annotations

import os
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from dumpcmp.output.report.page import write_report

__all__ = ["measured_line", "render_stats", "write_stats_report"]

_STATS = ("max", "min", "mean", "l2norm")
_NAMES = {"max": "Max", "min": "Min", "mean": "Mean", "l2norm": "L2Norm", "nan_count": "NaN count",
          "inf_count": "Inf count"}


def measured_line(result: Any) -> str:
    """Which values the statistics files held (measured), which they did not (not captured), and where the ground
    truth's came from."""
    sides = [r.npu for r in result.rows if r.npu is not None]
    fields = (*_STATS, "nan_count", "inf_count")
    measured = [_NAMES[k] for k in fields if any(getattr(s, k) is not None for s in sides)]
    missing = [_NAMES[k] for k in fields if not any(getattr(s, k) is not None for s in sides)]
    read = [n for n in result.notes if n.startswith("ground truth statistics read from")]
    gt = "read from the ground truth's statistic.csv" if read else "computed from the ground-truth tensors"
    text = (f"Measured on the device (statistics files): {', '.join(measured) or 'nothing'}. Not captured: "
            f"{', '.join(missing + ['the tensors themselves (no cosine, histograms or element errors)'])}. "
            f"Ground-truth statistics: {gt}.")
    return text


def render_stats(result: Any, *, title: str | None = None, left: str = "", right: str = "") -> str:
    """The page of one run's statistics compare."""
    title = title or f"dumpcmp statistics report: {result.run}"
    css = resources.files(__package__).joinpath("static", "report.css").read_text(encoding="utf-8")
    c = result.counts()
    first = result.first_not_pass()
    items = [("My Output (device statistics)", left), ("Ground Truth", right), ("run", result.run),
             ("tensors", f"{len(result.rows)}: {c['pass']} pass, {c['warning']} warning, {c['error']} error, "
                         f"{c['']} not compared"),
             ("thresholds (RelDiff)", f"warning {result.warning:g}, error {result.error:g}")]
    ok = c["error"] == 0
    parts = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
             f"<title>{escape(title)}</title><style>{css}</style></head><body><h1>{escape(title)}</h1>",
             "<section id=\"run\"><h2>Run</h2><table class=\"kv\">"]
    parts += [f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in items]
    parts.append("</table>")
    parts.append(f"<p id=\"verdict\" class=\"{'pass' if ok else 'fail'}\">verdict: {'PASS' if ok else 'FAIL'} "
                 f"({c['error']} error, {c['warning']} warning)</p><ul class=\"verdict\">")
    if first is not None:
        k = result.rows.index(first)
        parts.append(f"<li>first not pass, in execution order: <a href=\"#row-{k}\">#{k} "
                     f"{escape(first.shown_tensor)}</a> ({escape(first.verdict)}: {escape(first.note)})</li>")
    else:
        parts.append("<li>no tensor is worse than pass</li>")
    parts.append("</ul>")
    parts.append(f"<p id=\"measured\">{escape(measured_line(result))}</p>")
    parts += [f"<p class=\"note\">{escape(n)}</p>" for n in result.notes]
    parts.append("</section><section id=\"table-section\"><h2>All tensors</h2><div class=\"scroll\">"
                 "<table id=\"rows\"><thead><tr>")
    table = result.table()
    parts += [f"<th>{escape(h)}</th>" for h in table[0]]
    parts.append("</tr></thead><tbody>")
    for k, (row, cells) in enumerate(zip(result.rows, table[1:])):
        cls = {"error": "failed", "": "skipped"}.get(row.verdict, "")
        parts.append(f"<tr id=\"row-{k}\" class=\"{cls}\">" + "".join(f"<td>{escape(x)}</td>" for x in cells)
                     + "</tr>")
    parts.append("</tbody></table></div></section></body></html>")
    return "".join(parts)


def write_stats_report(path: str | os.PathLike[str], result: Any, *, force: bool = False, left: str = "",
                       right: str = "") -> Path:
    """Write the page whole or not at all; an existing file is kept unless `force`."""
    return write_report(path, render_stats(result, left=left, right=right), force=force)
