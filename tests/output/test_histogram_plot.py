"""The histogram PNGs (issue #34: the slow step): one reused figure whose artists carry exactly the binned data,
valid PNGs, no matplotlib warning whatever the names and ranges, titles that fit (shortened in the middle)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import dumpcmp

from dumpcmp.output.histogram import Hist, histogram, pair_histograms
from dumpcmp.support.native import core
from dumpcmp.output.histogram.plot import Plotter, draw, shorten_middle

from helpers.reportmodel import Chain

pytest.importorskip("matplotlib")

SRC = Path(dumpcmp.__file__).resolve().parents[1]  # the package the tests import: installed, or src/


def hist_of(values: np.ndarray, bins: int = 64) -> Hist:
    return histogram(np.ascontiguousarray(values), bins)


def read_png(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)


def test_artists_carry_the_binned_data(tmp_path, rng):
    x = rng.standard_normal(5000).astype(np.float32)
    y = x + rng.normal(0, 0.05, 5000).astype(np.float32)
    hx, hy = pair_histograms(core.compare.source_from_array(x), core.compare.source_from_array(y), 32)
    plotter = Plotter()
    for k in range(3):  # the same figure, drawn again: nothing accumulates
        plotter.draw(tmp_path / f"{k}.png", "#0 conv", hx, hy, force=True)
    counts, edges = plotter.bars.get_data().values, plotter.bars.get_data().edges
    np.testing.assert_array_equal(counts, hx.counts)
    np.testing.assert_allclose(edges, np.histogram_bin_edges(x.astype(np.float64), 32, range=(hx.lo, hx.hi)))
    np.testing.assert_array_equal(plotter.steps.get_data().values, hy.counts)
    assert [float(line.get_xdata()[0]) for line in plotter.lines] == [hx.min, hx.max]
    # the bars, the steps, the legend's frame and sample: never more, however often the figure is drawn
    assert len(plotter.ax.patches) == 4
    labels = [t.get_text() for _, t in plotter._legend_rows if t.get_visible()]
    assert labels == ["device", "ground truth", "min/max"]
    # a device-only layer with a calibrator's range: no ground-truth steps, the lines at the given min/max
    h = hist_of(x)
    plotter.draw(tmp_path / "alone.png", "#1 relu", h, None, (-5.0, 5.0))
    assert not plotter.steps.get_visible()
    assert [float(line.get_xdata()[0]) for line in plotter.lines] == [-5.0, 5.0]
    np.testing.assert_array_equal(plotter.bars.get_data().values, h.counts)
    lo, hi = plotter.ax.get_xlim()
    assert lo < -5.0 and hi > 5.0
    assert plotter.ax.get_ylim()[1] >= h.counts.max()
    image = read_png(tmp_path / "alone.png")
    assert image.shape == (450, 800, 3)  # RGB: the figure is opaque white
    assert (image[..., :3] < 0.99).any()  # something is drawn


def test_no_warning_on_names_and_ranges_that_make_matplotlib_warn(tmp_path, rng):
    cases = [
        ("#0 卷积/conv_1", hist_of(rng.standard_normal(1000))),             # glyphs missing from the font
        ("#0 conv_$\\notacommand$_1", hist_of(rng.standard_normal(1000))),  # drawn as text, not mathtext
        ("#1 constant", hist_of(np.full(100, 3.0, np.float32))),
        ("#2 nan only", hist_of(np.full(100, np.nan, np.float32))),
        ("#3 empty", hist_of(np.zeros(0, np.float32))),
        ("#4 huge", hist_of(np.array([-3e38, 0.0, 3e38], np.float32))),
        ("#5 far from zero", hist_of(np.array([1e30, np.nextafter(np.float32(1e30), np.float32(2e30))],
                                              np.float32))),
        ("#6 inf", hist_of(np.array([1.0, np.inf, -np.inf, np.nan], np.float32))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k, (title, h) in enumerate(cases):
            draw(tmp_path / f"{k}.png", title, h, h)
    for k in range(len(cases)):
        assert read_png(tmp_path / f"{k}.png").shape == (450, 800, 3)


def test_cli_prints_no_warning(tmp_path, rng):
    c = Chain(tmp_path, rng, 3)
    env = dict(os.environ, PYTHONPATH=str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-W", "error", "-m", "dumpcmp", "histogram", str(c.root / "dump"), "-r",
                           str(c.gt), "-f", str(c.graph), "-o", str(tmp_path / "h")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len(list((tmp_path / "h").glob("*.png"))) == 6


def test_long_titles_fit_shortened_in_the_middle(tmp_path, rng):
    h = hist_of(rng.standard_normal(1000))
    name = "#3 " + "backbone/stage3/block_7/" * 12 + "conv_last (Conv2D)"
    plotter = Plotter()
    plotter.draw(tmp_path / "t.png", name, h, None)
    text = plotter.title.get_text()
    assert "\u2026" in text and text.startswith("#3 backbone/") and text.endswith("conv_last (Conv2D)")
    box = plotter.title.get_window_extent(plotter.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= plotter.fig.bbox.width
    assert box.width > 0.8 * plotter.fig.bbox.width  # shortened no more than needed
    # short titles are kept whole; the NaN note gets its own line
    nan = hist_of(np.array([1.0, np.nan], np.float32))
    plotter.draw(tmp_path / "n.png", "#4 short", nan, None)
    assert plotter.title.get_text() == "#4 short\ndevice: 1 NaN, 0 +inf, 0 -inf"
    # control characters in a name (a newline would push the title off the top) become spaces
    plotter.draw(tmp_path / "c.png", "#5 a\nb\tc\x00d", h, None)
    assert plotter.title.get_text() == "#5 a b c d"


def test_shorten_middle():
    assert shorten_middle("abcdefghij", 20) == "abcdefghij"
    assert shorten_middle("abcdefghij", 5) == "ab\u2026ij"
    assert len(shorten_middle("x" * 100, 7)) == 7
