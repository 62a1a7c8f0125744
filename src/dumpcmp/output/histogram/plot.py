"""One PNG per layer with matplotlib: the device counts in blue, the ground truth's overlaid, min and max as red
dashed lines (SigmaStar's histogram.py look).

Drawing is the slow step of `dumpcmp histogram`, so one `Plotter` keeps one Figure on the Agg canvas and, per
layer, only updates its artists (the filled counts, the ground truth's steps, the two lines, the limits, the
title) and renders: no new figure, no tight_layout, a fixed layout in which every title fits (long names are
shortened in the middle with an ellipsis).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from dumpcmp.support.files import atomic_write, signals_deferred
from dumpcmp.output.histogram.bins import Hist

__all__ = ["Plotter", "draw", "safe_name", "shorten_middle"]

WIDTH, HEIGHT, DPI = 8.0, 4.5, 100
ELLIPSIS = "\u2026"


def safe_name(text: str, limit: int = 120) -> str:
    """A file-name-safe form of a layer name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._")[:limit] or "layer"


def shorten_middle(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: its start and end kept, the middle replaced by an ellipsis."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return ELLIPSIS[:limit]
    head = (limit - 1 + 1) // 2
    tail = limit - 1 - head
    return text[:head] + ELLIPSIS + (text[-tail:] if tail else "")


class Plotter:
    """One reusable figure: `draw()` writes one layer's PNG by updating the artists and rendering once."""

    def __init__(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import MaxNLocator

        self.fig = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI)
        self.canvas = FigureCanvasAgg(self.fig)
        # a fixed layout: room for the tick labels and the axis labels below and left, two title lines above
        self.fig.subplots_adjust(left=0.10, right=0.97, bottom=0.12, top=0.87)
        ax = self.ax = self.fig.add_subplot(1, 1, 1)
        ax.set_xlabel("value")
        ax.set_ylabel("count")
        # fixed places for the axis labels and the title: matplotlib would otherwise measure every tick label of
        # every PNG to place them (half the drawing time)
        ax.xaxis.set_label_coords(0.5, -0.085)
        ax.yaxis.set_label_coords(-0.085, 0.5)
        # fewer ticks than matplotlib's default: every tick label is text to lay out and render
        ax.xaxis.set_major_locator(MaxNLocator(7))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        self.bars = ax.stairs([0.0], [0.0, 1.0], fill=True, color="tab:blue", alpha=0.75)
        self.steps = ax.stairs([0.0], [0.0, 1.0], color="black", linewidth=1.0)
        self.lines = [ax.axvline(0.0, color="red", linestyle="--", linewidth=1.2) for _ in range(2)]
        self.title = ax.set_title("", fontsize=9, parse_math=False, y=1.01)
        self._legend_key: tuple[Any, ...] | None = None
        t = ax.transAxes
        self._legend_frame = Rectangle((0.69, 0.0), 0.295, 0.1, transform=t, facecolor="white", edgecolor="0.8",
                                       alpha=0.8, zorder=4)
        ax.add_patch(self._legend_frame)
        samples = [Rectangle((0.705, 0.0), 0.035, 0.04, transform=t, color="tab:blue", alpha=0.75, zorder=5),
                   Line2D([0.705, 0.74], [0.0, 0.0], transform=t, color="black", linewidth=1.0, zorder=5),
                   Line2D([0.705, 0.74], [0.0, 0.0], transform=t, color="red", linestyle="--", linewidth=1.2,
                          zorder=5)]
        self._legend_rows = []
        for sample in samples:
            ax.add_artist(sample)
            text = ax.text(0.75, 0.0, "", transform=t, fontsize=8, va="center", ha="left", zorder=5,
                           parse_math=False)
            self._legend_rows.append((sample, text))

    def _legend(self, key: tuple[str | None, str | None, str | None]) -> None:
        """A legend of fixed place and size in the upper right corner (matplotlib's own lays its boxes out anew
        on every draw: a quarter of the time): one sample and one label per entry present."""
        if key == self._legend_key:
            return
        row = 0
        for (sample, text), label in zip(self._legend_rows, key):
            for artist in (sample, text):
                artist.set_visible(label is not None)
            if label is not None:
                y = 0.94 - 0.07 * row
                if hasattr(sample, "set_xy"):  # the filled sample
                    sample.set_xy((0.705, y - 0.02))
                else:
                    sample.set_ydata([y, y])
                text.set_y(y)
                text.set_text(label)
                row += 1
        self._legend_frame.set_visible(row > 0)
        self._legend_frame.set_height(0.07 * row + 0.02)
        self._legend_frame.set_y(0.975 - 0.07 * row - 0.02)
        self._legend_key = key

    def _fit_title(self, name: str, notes: str) -> None:
        """Set the title, the name shortened in the middle until it fits the figure's width."""
        name = re.sub(r"[\x00-\x1f\x7f]", " ", name)  # one line: a newline in an op name would push it off the top
        renderer = self.canvas.get_renderer()
        box = self.ax.get_position()  # the title is centred on the axes: it fits twice the nearer figure edge
        room = 2 * min(box.x0 + box.x1, 2 - box.x0 - box.x1) / 2 * self.fig.bbox.width - 10
        self.title.set_text(name + notes)
        if len(name) <= 40:
            return
        width = self.title.get_window_extent(renderer).width
        n = len(name)
        while width > room and n > 10:  # guess from the width a character takes, measure, repeat a little shorter
            n = max(10, min(n - 1, int(n * room / width) - 1))
            self.title.set_text(shorten_middle(name, n) + notes)
            width = self.title.get_window_extent(renderer).width

    def render(self, title: str, device: Hist | None, ground_truth: Hist | None = None,
               min_max: tuple[float, float] | None = None) -> None:
        """Update the artists to one layer's histograms (as `draw` shows them) without writing anything."""
        import numpy as np

        main = device if device is not None else ground_truth
        if main is None:
            raise ValueError("nothing to draw: no device and no ground-truth histogram")
        lo_edge, hi_edge = float(main.lo), float(main.hi)
        if not hi_edge > lo_edge:  # one value (or none): a bin of width 1 around it, as numpy.histogram makes
            lo_edge, hi_edge = lo_edge - 0.5, lo_edge + 0.5
        edges = np.linspace(lo_edge, hi_edge, len(main.counts) + 1)
        top = 0.0
        for artist, h in ((self.bars, device), (self.steps, ground_truth)):
            artist.set_visible(h is not None)
            if h is not None:
                counts = np.asarray(h.counts, dtype=float)
                artist.set_data(counts, edges)
                top = max(top, float(counts.max()) if counts.size else 0.0)
        lo, hi = min_max if min_max is not None else (main.min, main.max)
        x0, x1 = lo_edge, hi_edge
        for line, v in zip(self.lines, (lo, hi)):
            line.set_visible(v is not None)
            if v is not None:
                line.set_xdata([v, v])
                x0, x1 = min(x0, float(v)), max(x1, float(v))
        pad = (x1 - x0) * 0.02
        self.ax.set_xlim(x0 - pad, x1 + pad)
        self.ax.set_ylim(0.0, top * 1.05 if top > 0 else 1.0)
        has_lines = lo is not None or hi is not None
        self._legend((("device" if ground_truth is not None else "values") if device is not None else None,
                      "ground truth" if ground_truth is not None else None,
                      ("min/max (tensor_min_max.txt)" if min_max is not None else "min/max") if has_lines else None))
        notes = []
        for side, h in (("device", device), ("ground truth", ground_truth)):
            if h is not None and (h.nan or h.pos_inf or h.neg_inf):
                notes.append(f"{side}: {h.nan} NaN, {h.pos_inf} +inf, {h.neg_inf} -inf")
        self._fit_title(title, "\n" + "; ".join(notes) if notes else "")

    def draw(self, path: Path, title: str, device: Hist | None, ground_truth: Hist | None = None,
             min_max: tuple[float, float] | None = None, *, force: bool = False) -> Path:
        """Write one histogram PNG. `min_max` (a calibrator's range) replaces the data's own min/max lines."""
        def write(f: Any) -> None:
            # renders once and writes; zlib's fastest level: the PNG is a little larger, written 5x faster.
            # matplotlib's renderer turns an exception raised inside it (Ctrl-C, SIGTERM) into "ValueError: Invalid
            # bounding box": a signal waits for the drawing to end, then stops the run as anywhere else
            with signals_deferred():
                self.canvas.print_png(f, pil_kwargs={"compress_level": 1})

        with warnings.catch_warnings():
            # matplotlib's chatter (a glyph missing from the font for a CJK op name, ...) is not the user's
            # problem: nothing on screen, the picture is still right (a box for the missing glyph)
            warnings.simplefilter("ignore")
            with signals_deferred():  # the title is measured with the renderer
                self.render(title, device, ground_truth, min_max)
            return atomic_write(path, write, force=force, what="histogram")


_plotter: Plotter | None = None


def draw(path: Path, title: str, device: Hist | None, ground_truth: Hist | None = None,
         min_max: tuple[float, float] | None = None, *, force: bool = False) -> Path:
    """Write one histogram PNG with the process's shared Plotter (made on first use)."""
    global _plotter
    if _plotter is None:
        _plotter = Plotter()
    return _plotter.draw(path, title, device, ground_truth, min_max, force=force)
