"""The histogram PNGs written on a writer thread, RGB at zlib's fastest level, texts drawn once and replayed (issue
#34: `histogram` >= 10x faster per PNG). The pictures keep their content: the PNG holds the rendered pixels, a
replayed text is exactly the text drawn afresh at that place; the writer is joined on every way out (an exception,
Ctrl-C, SIGTERM, a full disk): nothing half-written, no temporary left, nothing written after the run ended."""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.errors import DumpcmpError
from dumpcmp.output.histogram import Hist
from dumpcmp.output.histogram import plot

from helpers.signal_sweep import interrupt, temporaries, timed_run

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")


def layers(rng: np.random.Generator, n: int) -> list[tuple[str, Hist, Hist]]:
    """n layers of a network: each its own range and size, so axes and tick labels differ from PNG to PNG."""
    out = []
    for k in range(n):
        scale, size = 10.0 ** rng.uniform(-2, 2), int(10 ** rng.uniform(3, 4.5))
        x = rng.standard_normal(size) * scale + rng.uniform(-1, 1) * scale
        y = x + rng.standard_normal(size) * scale * 0.05
        lo, hi = float(min(x.min(), y.min())), float(max(x.max(), y.max()))
        hx, hy = (Hist(np.histogram(v, 64, range=(lo, hi))[0], lo, hi, float(v.min()), float(v.max()), size, 0, 0, 0)
                  for v in (x, y))
        out.append((f"#{k} backbone/block_{k}/conv (Conv2D)", hx, hy))
    return out


def pixels(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        assert image.format == "PNG"
        return np.asarray(image)


def rendered(plotter: plot.Plotter, layer) -> np.ndarray:
    """What the plotter's canvas holds after drawing `layer` (RGBA)."""
    plotter.render(*layer)
    plotter._cache_text()
    plotter.canvas.draw()
    return np.asarray(plotter.canvas.buffer_rgba()).copy()


def test_the_png_holds_the_rendered_pixels(tmp_path, rng):
    plotter = plot.Plotter()
    for k, layer in enumerate(layers(rng, 3)):
        path = plotter.draw(tmp_path / f"{k}.png", *layer)
        canvas = np.asarray(plotter.canvas.buffer_rgba())
        assert (canvas[..., 3] == 255).all()  # opaque: the alpha channel the PNG leaves out said nothing
        np.testing.assert_array_equal(pixels(path), canvas[..., :3])
        assert path.stat().st_size < 100_000


def test_a_replayed_text_is_the_text_drawn_afresh(rng):
    """Every text of a plotter that drew many layers before (most texts replayed from its cache) against a new
    plotter's (every text drawn by matplotlib at the same whole pixels): the same pixels, PNG after PNG."""
    warm = plot.Plotter()
    for layer in layers(rng, 24):
        got = rendered(warm, layer)
        np.testing.assert_array_equal(got, rendered(plot.Plotter(), layer))
    assert warm._text_cache.replayed > 200  # the cache did serve (axis labels, legend, recurring tick labels)
    # and the picture is matplotlib's own but for text placed on whole pixels: only text pixels differ
    plain = rendered(plot.Plotter(text_cache=False), layer)
    differ = (got != plain).any(axis=-1)
    assert 0 < differ.mean() < 0.02


def test_no_cache_on_a_renderer_it_does_not_know():
    class Renderer:
        def draw_text(self, *args, **kwargs):
            pass

    assert not plot.TextCache.usable(Renderer())


def test_the_writer_thread_writes_the_same_pngs(tmp_path, rng):
    work = layers(rng, 6)
    one = plot.Plotter()
    with plot.Plotter(background=True) as background:
        for k, layer in enumerate(work):
            background.draw(tmp_path / f"b{k}.png", *layer)
    assert not any(t.name == "dumpcmp-histogram-png" for t in threading.enumerate())
    for k, layer in enumerate(work):
        one.draw(tmp_path / f"a{k}.png", *layer)
        np.testing.assert_array_equal(pixels(tmp_path / f"b{k}.png"), pixels(tmp_path / f"a{k}.png"))
    assert temporaries(tmp_path) == []


def slow_encoder(monkeypatch, started: threading.Event, release: threading.Event):
    real = plot.encode_png

    def slow(f, size, rgba):
        started.set()
        release.wait(10)
        real(f, size, rgba)

    monkeypatch.setattr(plot, "encode_png", slow)


def test_an_interrupt_drops_the_waiting_pngs_and_ends_the_writer(tmp_path, rng, monkeypatch):
    started, release = threading.Event(), threading.Event()
    slow_encoder(monkeypatch, started, release)
    work = layers(rng, 3)
    with pytest.raises(KeyboardInterrupt):
        with plot.Plotter(background=True) as plotter:
            for k, layer in enumerate(work):  # the first is being written, two wait
                plotter.draw(tmp_path / f"{k}.png", *layer)
            assert started.wait(10)
            threading.Timer(0.2, release.set).start()
            raise KeyboardInterrupt
    # the PNG being written when Ctrl-C came is whole, the two waiting ones were never started, the thread is gone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.png"]
    assert pixels(tmp_path / "0.png").shape == (450, 800, 3)
    assert not any(t.name == "dumpcmp-histogram-png" for t in threading.enumerate())


def test_ctrl_c_while_the_last_pngs_are_awaited_ends_the_writer(tmp_path, rng, monkeypatch):
    """A real SIGINT while the block's end waits for the writer (flush): the PNGs still waiting are dropped and the
    thread ends before the caller removes the folder they were going to."""
    started, release = threading.Event(), threading.Event()
    slow_encoder(monkeypatch, started, release)
    with pytest.raises(KeyboardInterrupt):
        with plot.Plotter(background=True) as plotter:
            for k, layer in enumerate(layers(rng, 3)):
                plotter.draw(tmp_path / f"{k}.png", *layer)
            assert started.wait(10)
            threading.Timer(0.3, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT)).start()
            threading.Timer(0.8, release.set).start()
        # the block ends normally: its end waits for the three PNGs, and Ctrl-C comes meanwhile
    assert not any(t.name == "dumpcmp-histogram-png" for t in threading.enumerate())
    time.sleep(0.3)  # nothing written after the block was left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.png"]
    assert temporaries(tmp_path) == []


def full_disk_at(monkeypatch, name: str) -> list[str]:
    """The PNG whose temporary carries `name` fails as on a full disk, half written."""
    hit: list[str] = []
    real = plot.encode_png

    def encode(f, size, rgba):
        where = os.readlink(f"/proc/self/fd/{f.fileno()}")  # the temporary, which carries the PNG's name
        if name in os.path.basename(where):
            hit.append(where)
            f.write(b"\x89PNG half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(f, size, rgba)

    monkeypatch.setattr(plot, "encode_png", encode)
    return hit


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_full_disk_on_the_writer_thread_is_an_error_naming_the_file(tmp_path, rng, monkeypatch):
    hit = full_disk_at(monkeypatch, "2.png")
    with pytest.raises(DumpcmpError, match=r"2\.png: cannot write the histogram: No space left on device"):
        with plot.Plotter(background=True) as plotter:
            for k, layer in enumerate(layers(rng, 6)):
                plotter.draw(tmp_path / f"{k}.png", *layer)
    assert hit
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["0.png", "1.png"]  # nothing after the failed PNG
    assert temporaries(tmp_path) == []


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_cli_on_a_full_disk_publishes_nothing(tmp_path, rng, monkeypatch, capsys):
    gt = tmp_path / "gt"
    gt.mkdir()
    for k in range(8):
        np.save(gt / f"op{k}.0.{1700000000000000 + k}.npy", rng.standard_normal(200).astype(np.float32) * (k + 1))
    hit = full_disk_at(monkeypatch, "0005_")
    out = tmp_path / "h"
    assert main(["histogram", str(gt), "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert hit and "0005_op5" in err and "No space left on device" in err and "Traceback" not in err
    assert not out.exists() and temporaries(tmp_path) == []  # the PNGs are one set: none of them


@pytest.fixture(scope="module")
def many_layers(tmp_path_factory):
    gt = tmp_path_factory.mktemp("many") / "gt"
    gt.mkdir()
    rng = np.random.default_rng(34)
    for k in range(80):
        values = rng.standard_normal(4000).astype(np.float32) * np.float32(10.0 ** rng.uniform(-2, 2))
        np.save(gt / f"layer{k}.0.{1700000000000000 + k}.npy", values)
    return gt


def test_signals_while_the_writer_thread_writes(many_layers, tmp_path):
    """Real `dumpcmp histogram` processes of 80 PNGs get SIGINT or SIGTERM while they draw and write: exit 130 /
    143 (or 0) with one line, no traceback, no temporary, the folder absent or holding all 80 PNGs."""
    reference = tmp_path / "ref"
    length = timed_run(["histogram", str(many_layers), "-o", str(reference), "--quiet"])
    assert len(list(reference.glob("*.png"))) == 80
    outcomes = []
    for k in range(4):
        for sig in (signal.SIGINT, signal.SIGTERM):
            out = tmp_path / f"h{k}{int(sig)}"
            delay = length * (0.5 + 0.12 * k)  # past the start-up: while PNGs are drawn and written
            outcome, where = interrupt(["histogram", str(many_layers), "-o", str(out), "--quiet"], sig, delay)
            outcomes.append(outcome)
            assert outcome in ("interrupted", "finished"), where
            assert temporaries(tmp_path) == [], where
            assert not out.exists() or len(list(out.iterdir())) == 80, where
            time.sleep(0.05)
    print(f"\nhistogram with the writer thread, 8 interrupts: {sorted(outcomes)}")
    assert "interrupted" in outcomes
