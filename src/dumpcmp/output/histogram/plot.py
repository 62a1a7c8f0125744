"""One PNG per layer with matplotlib: the device counts in blue, the ground truth's overlaid, min and max as red
dashed lines (SigmaStar's histogram.py look).

Drawing is the slow step of `dumpcmp histogram`, so one `Plotter` keeps one Figure on the Agg canvas and, per
layer, only updates its artists (the filled counts, the ground truth's steps, the two lines, the limits, the
title) and renders: no new figure, no tight_layout, a fixed layout in which every title fits (long names are
shortened in the middle with an ellipsis). The pixels are encoded by Pillow (RGB, zlib's fastest level) and, with
`Plotter(background=True)`, on a writer thread while the next layer renders (Pillow's encoder releases the GIL).
"""

from __future__ import annotations

import math
import os
import queue
import re
import threading
import warnings
from pathlib import Path
from typing import IO, Any

from dumpcmp.support.files import atomic_write, exists_error, signals_deferred
from dumpcmp.output.histogram.bins import Hist

__all__ = ["Plotter", "TextCache", "draw", "encode_png", "safe_name", "shorten_middle"]

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


def encode_png(f: IO[bytes], size: tuple[int, int], rgba: bytes) -> None:
    """Write the PNG of an Agg buffer (`size` = (width, height), RGBA bytes with opaque alpha, as the Plotter's white
    figure renders): RGB (the alpha channel says nothing here, and a quarter less to filter and compress), zlib's
    fastest level (a histogram is mostly flat colour: a little larger, several times faster than the default)."""
    from PIL import Image

    image = Image.frombytes("RGB", size, rgba, "raw", "RGBX")  # the raw decoder drops every fourth byte
    image.save(f, format="png", compress_level=1, dpi=(DPI, DPI))


class _Writer:
    """A thread that encodes and writes the PNGs handed to it, in order, through `atomic_write`, at most `depth`
    waiting (memory stays bounded). The first error stops it and is raised by the next `submit` or `flush`."""

    def __init__(self, depth: int = 2) -> None:
        self._jobs: queue.Queue[tuple[Path, tuple[int, int], bytes, bool] | None] = queue.Queue(depth)
        self._error: BaseException | None = None
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dumpcmp-histogram-png", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                if self._error is None and not self._cancelled.is_set():
                    path, size, rgba, force = job
                    atomic_write(path, lambda f: encode_png(f, size, rgba), force=force, what="histogram")
            except BaseException as error:  # kept for the main thread: it names the file
                self._error = error
            finally:
                self._jobs.task_done()

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            self._cancelled.set()  # nothing after a failed PNG is written
            raise error

    def submit(self, path: Path, size: tuple[int, int], rgba: bytes, force: bool) -> None:
        self._raise()
        self._jobs.put((path, size, rgba, force))

    def flush(self) -> None:
        """Wait until every PNG handed over is written (or the first error, raised here)."""
        self._jobs.join()
        self._raise()

    def close(self) -> None:
        """Drop the PNGs still waiting, let the one being written finish, and end the thread. Signals wait for it
        (a short wait: one PNG): the caller then removes the folder the PNGs went to, and a thread still writing
        into it would leave a file behind."""
        with signals_deferred():
            self._cancelled.set()
            while True:  # empty the queue first: put() of the end mark must not wait for room
                try:
                    self._jobs.get_nowait()
                except queue.Empty:
                    break
            self._jobs.put(None)
            self._thread.join()


class _Recorder:
    """Stands in for an Agg renderer's C++ core while one text is drawn: passes every call on, and keeps a copy of
    each text image with its place (the only calls a plain text makes; any other call makes the text uncacheable)."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.calls: list[tuple[Any, Any, Any, Any]] | None = []

    def draw_text_image(self, image: Any, x: Any, y: Any, angle: Any, gc: Any) -> None:
        import numpy as np

        if self.calls is not None:
            try:
                self.calls.append((np.array(image, copy=True), x, y, angle))
            except (TypeError, ValueError):  # an image NumPy cannot copy: draw it, keep nothing
                self.calls = None
        self.core.draw_text_image(image, x, y, angle, gc)

    def __getattr__(self, name: str) -> Any:
        self.calls = None
        return getattr(self.core, name)


class TextCache:
    """Draws each text of a renderer once, then replays its glyph images: most texts of a histogram recur in every
    PNG (the axis labels, the legend, "0") or often (tick labels), and laying out and rendering a text's glyphs is
    most of the drawing time (~0.5 ms a text).

    A text is placed on whole pixels (matplotlib placed all text so before 3.11; since, to a 64th of a pixel), so
    the same string in the same font looks the same wherever it is and its images are replayed shifted by whole
    pixels: exactly what drawing it there gives (the test compares the pixels). Colour and clipping come from the
    current drawing, not the cache. Anything unusual (mathtext, an image type it cannot copy, a renderer without the
    expected core) is drawn the ordinary way."""

    LIMIT = 4096  # texts kept; a run's titles all differ, so the cache starts over when full

    def __init__(self, renderer: Any) -> None:
        self.renderer = renderer
        self.draw_text = renderer.draw_text  # the renderer's own, bound
        self.cache: dict[tuple[Any, ...], list[tuple[Any, Any, Any, Any]] | None] = {}
        self.settings: tuple[Any, ...] = ()
        self.replayed = 0  # texts drawn from the cache
        renderer.draw_text = self.draw

    @staticmethod
    def usable(renderer: Any) -> bool:
        return hasattr(getattr(renderer, "_renderer", None), "draw_text_image")

    def check_settings(self) -> None:
        """Forget every image when matplotlib's text settings changed (between two PNGs)."""
        from matplotlib import rcParams

        settings = tuple(rcParams.get(k) for k in ("text.hinting", "text.hinting_factor", "text.antialiased",
                                                   "text.kerning_factor"))
        if settings != self.settings:
            self.cache.clear()
            self.settings = settings

    def draw(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False,
             mtext: Any = None) -> None:
        if ismath or not (math.isfinite(x) and math.isfinite(y)):
            self.draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
            return
        x0, y0 = round(x), round(y)
        features = getattr(mtext, "get_fontfeatures", None)
        language = getattr(mtext, "get_language", None)
        key = (s, tuple(prop.get_family()), prop.get_style(), prop.get_variant(), prop.get_weight(),
               prop.get_stretch(), prop.get_size_in_points(), prop.get_file(), angle, gc.get_antialiased(),
               tuple(features() or ()) if features else None, language() if language else None)
        calls = self.cache.get(key, ())
        if calls == ():  # never drawn: draw it through the recorder
            recorder = _Recorder(self.renderer._renderer)
            self.renderer._renderer = recorder
            try:
                self.draw_text(gc, x0, y0, s, prop, angle, ismath=ismath, mtext=mtext)
            finally:
                self.renderer._renderer = recorder.core
            if len(self.cache) >= self.LIMIT:
                self.cache.clear()
            self.cache[key] = None if recorder.calls is None else [
                (image, cx - x0, cy - y0, a) for image, cx, cy, a in recorder.calls]
        elif calls is None:
            self.draw_text(gc, x0, y0, s, prop, angle, ismath=ismath, mtext=mtext)
        else:
            core = self.renderer._renderer
            self.replayed += 1
            for image, dx, dy, a in calls:
                core.draw_text_image(image, x0 + dx, y0 + dy, a, gc)


class Plotter:
    """One reusable figure: `draw()` writes one layer's PNG by updating the artists and rendering once.

    With `background=True` the PNG is encoded and written on a writer thread while the next one renders: use the
    Plotter as a context manager (or call `close()`), which waits for every PNG on a normal exit and, when an
    exception (Ctrl-C, SIGTERM) leaves the block, drops those not yet written and ends the thread before the caller
    cleans up. `flush()` waits for the PNGs handed over so far.
    """

    def __init__(self, *, background: bool = False, text_cache: bool = True) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.lines import Line2D
        from matplotlib.patches import Rectangle
        from matplotlib.ticker import MaxNLocator

        # white whatever a matplotlibrc says: the PNG is written without an alpha channel
        self.fig = Figure(figsize=(WIDTH, HEIGHT), dpi=DPI, facecolor="white")
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
        self._writer = _Writer() if background else None
        self.text_cache = text_cache
        self._text_cache: TextCache | None = None

    def __enter__(self) -> Plotter:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        try:
            if kind is None:
                self.flush()  # a Ctrl-C while waiting here still ends the writer below
        finally:
            self.close()

    def _cache_text(self) -> None:
        renderer = self.canvas.get_renderer()  # the same one while the figure keeps its size
        if self._text_cache is None or self._text_cache.renderer is not renderer:
            self._text_cache = TextCache(renderer) if self.text_cache and TextCache.usable(renderer) else None
        if self._text_cache is not None:
            self._text_cache.check_settings()

    def flush(self) -> None:
        """Wait until every PNG drawn so far is written; a writing error (a full disk) is raised here."""
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        """End the writer thread; PNGs not yet written are dropped (call `flush()` first to keep them)."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()

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
        """Write one histogram PNG (on the writer thread with `background`: there by `flush()`). `min_max` (a
        calibrator's range) replaces the data's own min/max lines."""
        if not force and os.path.lexists(path):  # the error at once, not from the writer thread later
            raise exists_error(path, "histogram")
        with warnings.catch_warnings():
            # matplotlib's chatter (a glyph missing from the font for a CJK op name, ...) is not the user's
            # problem: nothing on screen, the picture is still right (a box for the missing glyph)
            warnings.simplefilter("ignore")
            # matplotlib's renderer turns an exception raised inside it (Ctrl-C, SIGTERM) into "ValueError: Invalid
            # bounding box": a signal waits for the drawing to end, then stops the run as anywhere else
            with signals_deferred():
                self.render(title, device, ground_truth, min_max)
                self._cache_text()
                self.canvas.draw()
                rgba = bytes(self.canvas.buffer_rgba())  # a copy: the next layer renders into the same buffer
        size = self.canvas.get_width_height()
        if self._writer is not None:
            self._writer.submit(Path(path), size, rgba, force)
            return Path(path)
        return atomic_write(path, lambda f: encode_png(f, size, rgba), force=force, what="histogram")


_plotter: Plotter | None = None


def draw(path: Path, title: str, device: Hist | None, ground_truth: Hist | None = None,
         min_max: tuple[float, float] | None = None, *, force: bool = False) -> Path:
    """Write one histogram PNG with the process's shared Plotter (made on first use)."""
    global _plotter
    if _plotter is None:
        _plotter = Plotter()
    return _plotter.draw(path, title, device, ground_truth, min_max, force=force)
