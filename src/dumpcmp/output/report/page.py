"""The HTML report: one self-contained file (no network, no server) showing a comparison.

In: a `ComparisonResult` (`dumpcmp.compare()`), the advice on it (`dumpcmp.output.advice`), binned histograms and top
element errors of the worst layers (computed here through `dumpcmp.output.histogram`, C++ reductions over the mapped
data) and optionally a locate result (rows of own / inherited / total cosine per operator). Out: an HTML string,
written through the safe writer: run information and verdict, a static SVG chart per operator (hover names, click
opens details), the full sortable/filterable table with the failure reasons, histograms and top errors of the
worst layers, and the advice. The page's script and style are inlined; the data rides along as JSON.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Sequence

from dumpcmp.comparison.extra_metrics import result_extra_names
from dumpcmp.support.files import atomic_write_text
from dumpcmp.output.advice import Advice, LocateRow, Thresholds, advise, normalise_locate, row_keys
from dumpcmp.support.progress import Progress

__all__ = ["ReportData", "build", "chosen_rows", "classify", "collect", "json_ready", "largest_drop", "render",
           "verdict", "write_report"]


@dataclass
class ReportData:
    result: Any
    advice: list[Advice] = field(default_factory=list)
    # keyed by the row's position in result.rows (Index numbers fusion units and repeats across an op's rows)
    histograms: dict[int, tuple[Any, Any]] = field(default_factory=dict)  # position -> (device, ground truth)
    tops: dict[int, list[dict[str, float]]] = field(default_factory=dict)
    locate: list[LocateRow] = field(default_factory=list)
    threshold: float = 0.99
    title: str = "dumpcmp report"
    notes: list[str] = field(default_factory=list)


#: graph op types that hold data rather than compute it: with `-f` they get a row of NaN cells when not dumped
DATA_OP_TYPES = frozenset({"Data", "RefData", "Const", "Constant", "Variable", "ConstPlaceHolder"})


def not_dumped_data(row: Any) -> bool:
    """A row the graph JSON adds for a Data/Const op that has no dump file: shown in the table, never a layer."""
    return bool(getattr(row, "unmatched", False)) and row.result is None and row.op_type in DATA_OP_TYPES


def classify(result: Any) -> dict[int, str]:
    """Row position in `result.rows` -> 'activation' or 'constant'. A constant is an input with no producing
    operator among the dumped outputs: weights, biases, other constants (and the model's own inputs, which have no
    producer either), and the rows of Data/Const ops that were not dumped."""
    produced = set()
    for r in result.rows:
        if r.pair is not None and r.pair.kind == "output":
            produced.update(r.pair.ground_truth_ops or ((r.pair.ground_truth_op,) if r.pair.ground_truth_op else ()))
    out = {}
    for k, r in enumerate(result.rows):
        pair = r.pair  # ground_truth_op: the producer whose output is compared (the column names the row's own op)
        constant = not_dumped_data(r) or (pair is not None and pair.kind == "input" and
                                          pair.ground_truth_op is not None and pair.ground_truth_op not in produced)
        out[k] = "constant" if constant else "activation"
    return out


def _output_rows(result: Any, kinds: dict[int, str]) -> list[tuple[int, Any]]:
    """(position, row) of the compared activation outputs in execution order."""
    return [(k, r) for k, r in enumerate(result.rows) if r.result is not None and kinds.get(k) == "activation"
            and (r.pair is None or r.pair.kind == "output")]


def largest_drop(result: Any) -> tuple[Any, float] | None:
    """The output row whose cosine fell most from its worst compared producer's along the graph's edges (row, drop),
    or None (no graph JSON, or no fall): `ComparisonResult.largest_drop`."""
    drop = result.largest_drop()
    if drop is None:
        return None
    a, b = drop
    return b, (1.0 if a is None else a.cosine) - b.cosine


def verdict(result: Any, threshold: float, locate: Sequence[LocateRow] = ()) -> dict[str, Any]:
    """Pass/fail on the cosine threshold, with the first row below it, the largest drop and (with locate) the first
    operator whose own error is below the threshold (where the error starts)."""
    # positions read from the rows' columns: the rows it names alone are built
    first_at = result.first_below_at(threshold) if 0 in result.algorithms else None
    first = None if first_at is None else result.row_at(first_at)
    drop_at = result.largest_drop_at()
    up, row = (None, None) if drop_at is None else \
        (None if drop_at[0] is None else result.row_at(drop_at[0]), result.row_at(drop_at[1]))
    drop = None if row is None else (row, (1.0 if up is None else up.cosine) - row.cosine)  # as `largest_drop`
    upstream = None if up is None else up.shown_tensor  # None: the model's inputs
    # locate's own verdict names the origin; without one, the first operator whose own cosine is below the threshold
    starts = next((lr for lr in locate if lr.verdict == "origin"), None) or \
        next((lr for lr in locate if math.isfinite(lr.own_cosine) and lr.own_cosine < threshold), None)
    return {
        "pass": first is None,
        "threshold": threshold,
        "first_below": None if first is None else {"row": first.index, "key": first_at,
                                                     "name": first.shown_tensor,
                                                     "op_type": first.op_type, "cosine": _num(first.cosine)},
        "largest_drop": None if drop is None else {"row": drop[0].index, "key": drop_at[1],
                                                    "name": drop[0].shown_tensor,
                                                    "op_type": drop[0].op_type, "drop": _num(drop[1]),
                                                    "cosine": _num(drop[0].cosine), "from": upstream},
        "error_starts": None if starts is None else {"op": starts.op, "own_cosine": _num(starts.own_cosine),
                                                      "verdict": starts.verdict},
    }


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


#: `layers="auto"` embeds every compared layer when their elements add up to at most this, else the worst 20
AUTO_ALL_ELEMENTS = 1 << 25
AUTO_WORST = 20


def chosen_rows(result: Any, layers: int | str | None) -> list[Any]:
    """The rows whose histograms the report embeds: the `layers` worst by cosine, all (None), or "auto": all when
    the compared tensors are small enough together (AUTO_ALL_ELEMENTS), else the AUTO_WORST worst."""
    compared = [r for r in result.rows if r.result is not None]
    if layers == "auto":
        layers = None if sum(int(r.result.count) for r in compared) <= AUTO_ALL_ELEMENTS else AUTO_WORST
    if layers is None:
        return compared
    return result.worst(int(layers), distinct=True) if 0 in result.algorithms else compared[:int(layers)]


def collect(result: Any, *, layers: int | str | None = "auto", bins: int = 64, top_n: int = 10, custom: Any = None,
            threads: int = 0, quiet: bool = True) -> tuple[dict[int, tuple[Any, Any]], dict[int, list], list[str]]:
    """Histograms (both sides over one range) and top element errors of the rows `chosen_rows` picks. Returns
    (histograms and tops by row position, notes about rows that could not be read)."""
    from dumpcmp.errors import DumpcmpError
    from dumpcmp.output.histogram import pair_histograms, row_sources, top_errors

    chosen = chosen_rows(result, layers)
    keys = row_keys(result)
    hists, tops, notes = {}, {}, []
    with Progress(len(chosen), "histograms", quiet=quiet) as progress:
        for r in chosen:
            try:
                x, y = row_sources(r, result.ground_truth_has_address, custom)
                hists[keys[id(r)]] = pair_histograms(x, y, bins, threads)
                if top_n:
                    tops[keys[id(r)]] = top_errors(x, y, top_n, threads)
            except (DumpcmpError, ValueError, OSError) as error:
                notes.append(f"#{r.index} {r.shown_tensor}: histogram not taken: {error}")
            progress.advance()
    return hists, tops, notes


def _locate_by_row(result: Any, locate: Sequence[LocateRow]) -> dict[int, LocateRow]:
    by_op = {lr.op: lr for lr in locate}
    out = {}
    for k, r in enumerate(result.rows):
        if r.pair is None and r.sources is not None:  # compared from arrays (SigmaStar): located by its node
            names: tuple[str | None, ...] = (r.npu_dump,)
        elif r.pair is None or r.pair.kind != "output":
            continue
        else:
            names = (r.pair.npu_op, r.pair.graph_op, r.pair.ground_truth_op, *(r.pair.ground_truth_ops or ()))
        for name in names:
            if name and name in by_op:
                out[k] = by_op[name]
                break
    return out


def _g7(v: Any) -> float | None:
    """A value as the page shows it: 7 significant digits (float32 precision), None when not finite."""
    f = _num(v)
    return None if f is None else float(f"{f:.7g}")


def _name(r: Any) -> str:
    return r.shown_tensor if r.tensor_index and r.tensor_index != "NaN" else (r.npu_dump or r.ground_truth)


def _row_record(r: Any, key: int, kind: str) -> dict[str, Any]:
    """What the details panel needs beyond the table's cells (which it reads from the table row). `k` is the row's
    position (what links and clicks use), `i` its Index as the table prints it."""
    rec: dict[str, Any] = {"k": key, "i": r.index, "name": _name(r), "cls": kind, "st": r.status}
    if r.result is not None:
        res = r.result
        rec["range"] = [_g7(res.min_x), _g7(res.max_x), _g7(res.min_y), _g7(res.max_y), int(res.count),
                        int(res.nan_x), int(res.inf_x), int(res.nan_y), int(res.inf_y)]
    return rec


def _hist_record(h: Any) -> list[Any]:
    """[lo, hi, min, max, nan, +inf, -inf, counts...] of one side."""
    return [_num(h.lo), _num(h.hi), _g7(h.min), _g7(h.max), h.nan, h.pos_inf, h.neg_inf] + [int(c) for c in h.counts]


def json_ready(obj: Any) -> Any:
    """JSON-safe: non-finite floats become null, other odd values their text."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_ready(v) for v in obj]
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    try:
        return json_ready(float(obj))
    except (TypeError, ValueError):
        return str(obj)


def _static(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def _json_script(data: Any) -> str:
    """`data` as JSON text that a <script> element holds unchanged: no `</script>`, `<!--` or `]]>` can end or
    change it (these characters only occur inside JSON strings, where their \\u escapes mean the same)."""
    return json.dumps(data, separators=(",", ":"), allow_nan=False).translate(_SCRIPT_SAFE)


def render(data: ReportData) -> str:
    """The report as one HTML document."""
    from dumpcmp.output.report.chart import chart_svg

    result = data.result
    kinds = classify(result)
    loc_rows = _locate_by_row(result, data.locate)
    counts = result.counts()
    v = verdict(result, data.threshold, data.locate)
    table = result.table()
    header, body = table[0], table[1:]
    recs = []
    for k, r in enumerate(result.rows):
        rec = _row_record(r, k, kinds[k])
        if k in data.histograms:
            hx, hy = data.histograms[k]
            rec["hist"] = [_hist_record(hx), _hist_record(hy)]
        if k in data.tops:
            rec["top"] = [[t["index"], _g7(t["npu"]), _g7(t["ground_truth"]), _g7(t["abs_error"])]
                          for t in data.tops[k]]
        if k in loc_rows:
            lr = loc_rows[k]
            rec["locate"] = {"own": _num(lr.own_cosine), "inherited": _num(lr.inherited_cosine),
                             "total": _num(lr.total_cosine), "verdict": lr.verdict}
        recs.append(rec)
    cells = [row_cells + [r.status] for row_cells, r in zip(body, result.rows)]
    payload = json_ready({"rows": recs, "cells": cells, "advice": [a.to_dict() for a in data.advice], "verdict": v,
                      "threshold": data.threshold, "extra": result_extra_names(result)})

    def series(rows: Iterable[tuple[int, Any]]) -> list[dict[str, Any]]:
        return [{"k": k, "i": r.index, "name": _name(r), "op": r.op_type, "cos": r.cosine,
                 "rel": r.value(3) if 3 in result.algorithms else math.nan} for k, r in rows]

    acts = _output_rows(result, kinds)
    consts = [(k, r) for k, r in enumerate(result.rows) if r.result is not None and kinds[k] == "constant"]
    own = {i: lr.own_cosine for i, lr in loc_rows.items()}
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(data.title)}</title><style>{_static('report.css')}</style></head><body>",
        f"<h1>{escape(data.title)}</h1>",
        _run_section(result, counts, v, data, sum(1 for r in result.rows if not_dumped_data(r))),
        "<section id=\"charts\"><h2>Per operator</h2>",
        chart_svg(series(acts), data.threshold, own=own or None),
    ]
    if consts:
        parts += ["<h3>Weights and constants (inputs no dumped operator produces)</h3>",
                  chart_svg(series(consts), data.threshold, element_id="chart-constants")]
    parts += ["</section>", "<section id=\"details\" hidden><h2>Layer <span id=\"d-title\"></span></h2>"
              "<div id=\"d-body\"></div></section>",
              _advice_section(data.advice), _table_section(header),
              f"<script type=\"application/json\" id=\"data\">{_json_script(payload)}</script>",
              f"<script>{_static('report.js')}</script></body></html>"]
    return "".join(parts)


def _run_section(result: Any, counts: dict[str, int], v: dict[str, Any], data: ReportData, data_ops: int) -> str:
    """`data_ops`: rows of Data/Const ops without a dump file, counted apart from the unmatched tensors."""
    ok = v["pass"]
    tensors = f"{counts['compared']} compared, {counts['unmatched'] - data_ops} unmatched, {counts['failed']} " \
              f"failed, {counts['skipped']} skipped"
    if data_ops:
        tensors += f" ({data_ops} Data/Const op{'s' if data_ops > 1 else ''} not dumped, a row each)"
    items = [("My Output (device)", result.left), ("Ground Truth", result.right), ("run", result.run),
             ("tensors", tensors)]
    lines = ["<section id=\"run\"><h2>Run</h2><table class=\"kv\">"]
    lines += [f"<tr><th>{escape(k)}</th><td>{escape(str(val))}</td></tr>" for k, val in items]
    lines.append("</table>")
    lines.append(f"<p id=\"verdict\" class=\"{'pass' if ok else 'fail'}\">verdict: "
                 f"{'PASS' if ok else 'FAIL'} at cosine threshold {v['threshold']:g}</p><ul class=\"verdict\">")
    fb = v["first_below"]
    if fb:
        lines.append(f"<li>first below the threshold: <a href=\"#row-{fb['key']}\">#{fb['row']} "
                     f"{escape(fb['name'])}</a> ({escape(fb['op_type'])}), cosine {_show(fb['cosine'])}</li>")
    ld = v["largest_drop"]
    if ld:
        lines.append(f"<li>largest drop: <a href=\"#row-{ld['key']}\">#{ld['row']} {escape(ld['name'])}</a> "
                     f"({escape(ld['op_type'])}), cosine fell by {_show(ld['drop'])} to {_show(ld['cosine'])} from "
                     f"{escape(ld.get('from') or 'the model inputs')}</li>")
    es = v["error_starts"]
    if es:
        lines.append(f"<li>where the error starts (locate): {escape(es['op'])}, own cosine "
                     f"{_show(es['own_cosine'])} {escape(es['verdict'])}</li>")
    lines.append("</ul>")
    lines += [f"<p class=\"note\">{escape(n)}</p>" for n in data.notes]
    lines.append("</section>")
    return "".join(lines)


def _show(v: float | None) -> str:
    return "NaN" if v is None else f"{v:.6f}"


def _advice_section(advice: Sequence[Advice]) -> str:
    out = ["<section id=\"advice\"><h2>Advice</h2>"]
    if not advice:
        out.append("<p>No rule triggered.</p>")
    else:
        out.append("<ul>")
        for a in advice:
            where = f"<a href=\"#row-{a.key}\">#{a.row} {escape(a.layer)}</a>" if a.key is not None else \
                escape(a.layer)
            out.append(f"<li data-rule=\"{escape(a.rule)}\"><b>{escape(a.rule)}</b> {where}: {escape(a.message)}</li>")
        out.append("</ul>")
    out.append("</section>")
    return "".join(out)


def _table_section(header: list[str]) -> str:
    """The table's frame; the page script fills it from the data a page at a time (2,000 rows of 20 cells laid out
    at once cost seconds in a browser)."""
    out = ["<section id=\"table-section\"><h2>All rows</h2><div class=\"filters\">"
           "<input id=\"filter\" type=\"search\" placeholder=\"filter: any text in the row\">"
           "<select id=\"status\"><option value=\"\">all statuses</option><option>compared</option>"
           "<option>failed</option><option>skipped</option><option>unmatched</option></select>"
           "<select id=\"cls\"><option value=\"\">activations and constants</option><option>activation</option>"
           "<option>constant</option></select><button id=\"prev\">&lt;</button><span id=\"shown\"></span>"
           "<button id=\"next\">&gt;</button></div>"
           "<div class=\"scroll\"><table id=\"rows\"><thead><tr>"]
    out += [f"<th data-col=\"{k}\">{escape(h)}</th>" for k, h in enumerate(header + ["Status"])]
    out.append("</tr></thead><tbody></tbody></table></div></section>")
    return "".join(out)


def write_report(path: str | os.PathLike[str], html: str, *, force: bool = False) -> Path:
    """Write the report whole or not at all; an existing file is kept unless `force`."""
    return atomic_write_text(path, html, force=force, what="report")


def build(result: Any, *, threshold: float = 0.99, thresholds: Thresholds | None = None,
          layers: int | str | None = "auto",
          bins: int = 64, top_n: int = 10, locate: Iterable[Any] | None = None, min_max: Any = None,
          custom: Any = None, threads: int = 0, quiet: bool = True, title: str | None = None) -> ReportData:
    """Everything the report shows: histograms and top errors of the worst `layers`, the advice, the verdict."""
    hists, tops, notes = collect(result, layers=layers, bins=bins, top_n=top_n, custom=custom, threads=threads,
                                 quiet=quiet)
    loc = normalise_locate(locate)
    t = thresholds or Thresholds(cosine=threshold)
    advice = advise(result, thresholds=t, histograms={i: h[1] for i, h in hists.items()}, min_max=min_max,
                    locate=loc)
    return ReportData(result, advice, hists, tops, loc, threshold, title or f"dumpcmp report: {result.run}", notes)
