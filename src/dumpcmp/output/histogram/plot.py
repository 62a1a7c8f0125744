"""One PNG per layer with matplotlib: the device counts in blue, the ground truth's overlaid, min and max as red
dashed lines (SigmaStar's histogram.py look)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dumpcmp.support.files import atomic_write, signals_deferred
from dumpcmp.output.histogram.bins import Hist


def safe_name(text: str, limit: int = 120) -> str:
    """A file-name-safe form of a layer name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:limit] or "layer"


def draw(path: Path, title: str, device: Hist | None, ground_truth: Hist | None = None,
         min_max: tuple[float, float] | None = None, *, force: bool = False) -> Path:
    """Write one histogram PNG. `min_max` (a calibrator's range) replaces the data's own min/max lines."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.5), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    main = device if device is not None else ground_truth
    assert main is not None
    edges = main.edges
    widths = edges[1:] - edges[:-1]
    if device is not None:
        ax.bar(edges[:-1], device.counts.astype(float), width=widths, align="edge", color="tab:blue",
               alpha=0.75, label="device" if ground_truth is not None else "values")
    if ground_truth is not None:
        ax.step(edges[:-1], ground_truth.counts.astype(float), where="post", color="black", linewidth=1.0,
                label="ground truth")
    lo, hi = min_max if min_max is not None else (main.min, main.max)
    label = "min/max (tensor_min_max.txt)" if min_max is not None else "min/max"
    for k, v in enumerate((lo, hi)):
        if v is not None:
            ax.axvline(v, color="red", linestyle="--", linewidth=1.2, label=label if k == 0 else None)
    notes = []
    for side, h in (("device", device), ("ground truth", ground_truth)):
        if h is not None and (h.nan or h.pos_inf or h.neg_inf):
            notes.append(f"{side}: {h.nan} NaN, {h.pos_inf} +inf, {h.neg_inf} -inf")
    ax.set_title(title + ("\n" + "; ".join(notes) if notes else ""), fontsize=9)
    ax.set_xlabel("value")
    ax.set_ylabel("count")
    ax.legend(fontsize=8)
    # matplotlib's renderer turns an exception raised inside it (Ctrl-C, SIGTERM) into "ValueError: Invalid bounding
    # box": a signal waits for the drawing to end (tens of milliseconds), then stops the run as anywhere else
    with signals_deferred():
        fig.tight_layout()

    def write(f: Any) -> None:
        with signals_deferred():
            fig.savefig(f, format="png")

    return atomic_write(path, write, force=force, what="histogram")
