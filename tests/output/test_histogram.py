"""Histograms: the C++ binning against numpy.histogram on the same bins (dtypes, layouts, NaN/inf, threads), the
top element errors against NumPy, tensor_min_max.txt, and `dumpcmp histogram` (PNGs, folder safety)."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.dumps import layout as L
from dumpcmp.support.native import core
from dumpcmp.cli import main
from dumpcmp.errors import ConfigError
from dumpcmp.output.histogram import histogram, pair_histograms, read_min_max, top_errors

from helpers.reportmodel import Chain


def numpy_reference(values: np.ndarray, bins: int, lo: float, hi: float) -> np.ndarray:
    """NumPy's counts of the finite values, in float64 (the core reads float32 and bins in double)."""
    v = values.astype(np.float32).astype(np.float64).ravel()
    v = v[np.isfinite(v)]
    return np.histogram(v, bins, range=(lo, hi))[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.uint8, np.int32, np.float64])
@pytest.mark.parametrize("bins", [1, 7, 256])
def test_counts_equal_numpy(rng, dtype, bins):
    a = (rng.standard_normal(70_001) * 20).astype(dtype)
    h = histogram(a, bins)
    finite = a.astype(np.float32).astype(np.float64)
    assert h.lo == finite.min() and h.hi == finite.max()
    np.testing.assert_array_equal(h.counts, numpy_reference(a, bins, h.lo, h.hi))
    assert h.finite == a.size and h.counts.sum() == a.size


def test_values_on_bin_edges_and_given_range(rng):
    # values exactly on the edges (and the last edge) go where NumPy puts them; values outside are counted apart
    edges = np.linspace(-1.0, 3.0, 9)
    a = np.concatenate([edges, edges, rng.uniform(-2, 4, 10_000)]).astype(np.float32)
    h = histogram(a, 8, (-1.0, 3.0))
    np.testing.assert_array_equal(h.counts, numpy_reference(a, 8, -1.0, 3.0))
    v = a.astype(np.float64)
    assert h.below == int((v < -1).sum()) and h.above == int((v > 3).sum())


@pytest.mark.parametrize("bins", [3, 256, 10_000])
def test_narrow_range_far_from_zero(rng, bins):
    # a range narrow next to its magnitude: few float32 values, many on or next to an edge
    a = (np.float32(12345.0) + rng.uniform(0, 0.05, 100_000)).astype(np.float32)
    h = histogram(a, bins)
    np.testing.assert_array_equal(h.counts, numpy_reference(a, bins, h.lo, h.hi))
    lo, hi = float(a.min()) + 0.004, float(a.max()) - 0.007
    h = histogram(a, bins, (lo, hi))
    np.testing.assert_array_equal(h.counts, numpy_reference(a, bins, lo, hi))


def test_nan_inf_counted_apart(rng):
    a = rng.standard_normal(200_000).astype(np.float16)
    a[[3, 70_000]] = np.nan
    a[5] = np.inf
    a[[6, 7, 150_000]] = -np.inf
    h = histogram(a, 32)
    assert (h.nan, h.pos_inf, h.neg_inf, h.finite) == (2, 1, 3, a.size - 6)
    finite = a[np.isfinite(a)].astype(np.float64)
    assert h.min == finite.min() and h.max == finite.max()
    np.testing.assert_array_equal(h.counts, numpy_reference(a, 32, h.lo, h.hi))


def test_constant_and_empty_tensors_binned_as_numpy():
    h = histogram(np.full(10, 2.5, np.float32), 4)
    assert (h.lo, h.hi) == (2.0, 3.0)
    np.testing.assert_array_equal(h.counts, np.histogram(np.full(10, 2.5), 4)[0])
    h = histogram(np.full(3, np.nan, np.float32), 4)
    assert (h.lo, h.hi, h.min, h.max, h.nan) == (0.0, 1.0, None, None, 3)
    with pytest.raises(ConfigError):
        histogram(np.zeros(3, np.float32), 0)
    with pytest.raises(ConfigError):
        histogram(np.zeros(3, np.float32), 4, (1.0, 1.0))


def test_same_counts_on_any_thread_count(rng):
    a = rng.standard_normal(1_000_003).astype(np.float32)
    one = histogram(a, 100, threads=1)
    two = histogram(a, 100, threads=2)
    np.testing.assert_array_equal(one.counts, two.counts)
    np.testing.assert_array_equal(one.counts, numpy_reference(a, 100, one.lo, one.hi))


def test_device_layout_read_without_padding(tmp_path, rng):
    # NC1HWC0 with C = 20 pads to 32 channels: the zeros of the padding must not be counted
    x = (rng.standard_normal((1, 20, 5, 5)) + 3).astype(np.float16)
    path = write_dump(tmp_path / f"Conv2D.c.1.{1700000000000000}", op_name="c",
                      outputs=[TensorData(L.convert(x, "NCHW", "NC1HWC0"), format="NC1HWC0",
                                          original_shape=(1, 20, 5, 5))])
    from dumpcmp.output.histogram.layers import dump_layers

    (layer,) = list(dump_layers(path))
    h = histogram(layer.device, 16)
    assert h.finite == x.size
    np.testing.assert_array_equal(h.counts, numpy_reference(x, 16, h.lo, h.hi))


def test_pair_histograms_share_one_range(rng):
    x = rng.uniform(-1, 2, 5000).astype(np.float32)
    y = rng.uniform(-3, 1, 5000).astype(np.float32)
    hx, hy = pair_histograms(core.compare.source_from_array(x), core.compare.source_from_array(y), 20)
    assert (hx.lo, hx.hi) == (hy.lo, hy.hi) == (float(y.min()), float(x.max()))
    np.testing.assert_array_equal(hy.counts, numpy_reference(y, 20, hx.lo, hx.hi))


def test_top_errors_match_numpy(rng):
    x = rng.standard_normal(300_000).astype(np.float32)
    y = x + rng.standard_normal(x.size).astype(np.float32) * 0.01
    y[1234] = np.nan  # a NaN difference is not an error magnitude
    top = top_errors(core.compare.source_from_array(x), core.compare.source_from_array(y), 7)
    err = np.abs(x.astype(np.float64) - y.astype(np.float64))
    err[np.isnan(err)] = -1
    want = np.argsort(-err, kind="stable")[:7]
    assert [t["index"] for t in top] == list(want)
    assert [t["abs_error"] for t in top] == list(err[want])
    assert top[0]["npu"] == x[want[0]] and top[0]["ground_truth"] == y[want[0]]


def test_read_min_max(tmp_path):
    p = tmp_path / "tensor_min_max.txt"
    p.write_text("# name min max\nconv1 -1.5 2.25\nrelu1: min=0, max=31.5\nfc,3e-1,-2\n\n")
    assert read_min_max(p) == {"conv1": (-1.5, 2.25), "relu1": (0.0, 31.5), "fc": (-2.0, 0.3)}
    p.write_text("conv1 only-one 1\n")
    with pytest.raises(ConfigError, match="tensor_min_max.txt:1"):
        read_min_max(p)


def test_cli_writes_one_png_per_layer_and_keeps_folders(tmp_path, rng, capsys):
    c = Chain(tmp_path, rng, 3)
    out = tmp_path / "Histograms"
    assert main(["histogram", str(c.root / "dump"), "-o", str(out), "--bins", "32"]) == 0
    pngs = sorted(p.name for p in out.iterdir())
    assert pngs == ["0000_op0_output_0.png", "0001_op1_output_0.png", "0002_op2_output_0.png"]
    assert all((out / p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    # an existing non-empty folder is never written into (let alone deleted) without --force
    (out / "mine.txt").write_text("keep")
    assert main(["histogram", str(c.root / "dump"), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    mm = tmp_path / "mm.txt"
    mm.write_text("op0 -10 10\n")
    assert main(["histogram", str(c.root / "dump"), "-r", str(c.gt), "-f", str(c.graph), "-o", str(out),
                 "--min-max", str(mm), "--force", "--quiet"]) == 0
    assert (out / "mine.txt").read_text() == "keep"
    # three outputs and three inputs against their ground truth, beside the three earlier PNGs
    assert len(list(out.glob("*.png"))) == 9 and (out / "0005_op2_output_0.png").exists()


def test_cli_ground_truth_folder(tmp_path, rng):
    c = Chain(tmp_path, rng, 2)
    out = tmp_path / "h"
    assert main(["histogram", str(c.gt), "-o", str(out), "--quiet"]) == 0
    assert len(list(out.glob("*.png"))) == 3  # data, op0, op1
