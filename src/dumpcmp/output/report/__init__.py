"""The HTML report: one self-contained file (no network, no server) showing a comparison.

In: a `ComparisonResult`, the advice on it, histograms and top element errors of the worst layers, optionally a
locate result. Out: an HTML string (`render`) written through the safe writer (`write_report`). `page` builds and
renders it; `chart` draws the static SVG chart; `static/` holds the inlined script and style.
"""

from dumpcmp.output.report.page import (
    ReportData,
    build,
    chosen_rows,
    classify,
    collect,
    json_ready,
    largest_drop,
    render,
    verdict,
    write_report,
)

__all__ = ["ReportData", "build", "chosen_rows", "classify", "collect", "json_ready", "largest_drop", "render",
           "verdict", "write_report"]
