"""`dumpcmp histogram` on SigmaStar dumps: one PNG per non-constant tensor (binary and text dumps, padded and fixed
point read as compare reads them), the other dump's tensor of the same name overlaid with -r, the calibrator's
tensor_min_max.txt as the red lines (the range widened to hold them), counts equal to NumPy's, and an existing
Histograms/ folder never deleted (their tool deletes it)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.dumps.sigmastar import TensorSpec, write_sigmastar_dump
from dumpcmp.output.histogram import plot


def tensors(rng, shift=0.0):
    a = rng.normal(size=(1, 4, 4, 3)).astype(np.float32) + shift
    b = rng.normal(size=(1, 10)).astype(np.float32) + shift
    return [TensorSpec("conv1", a, "CONV_2D", 0, pad_to=8),
            TensorSpec("weights", np.ones((3, 3), np.float32), "CONV_2D", 1, constant=True),
            TensorSpec("fc", b, "FULLY_CONNECTED", 2)]


@pytest.fixture
def dumps(tmp_path):
    rng = np.random.default_rng(0)
    left = tensors(rng)
    right = [TensorSpec(t.name, t.data + 0.1, t.op_type, t.op_index, constant=t.constant) for t in left]
    write_sigmastar_dump(tmp_path / "fixed.bin", left)
    write_sigmastar_dump(tmp_path / "float.txt", right, text=True)
    (tmp_path / "tensor_min_max.txt").write_text("conv1, min: -6.000000, max: 7.500000;\nfc, min: -1.0, max: 1.0;\n")
    return tmp_path, left, right


@pytest.fixture
def drawn(monkeypatch):
    calls = []
    original = plot.Plotter.draw

    def spy(self, path, title, device, ground_truth=None, min_max=None, **kw):
        calls.append((os.path.basename(path), title, device, ground_truth, min_max))
        return original(self, path, title, device, ground_truth, min_max, **kw)

    monkeypatch.setattr(plot.Plotter, "draw", spy)
    return calls


def test_one_png_per_tensor_with_min_max(dumps, drawn, monkeypatch, capsys):
    root, left, _ = dumps
    monkeypatch.chdir(root)
    assert main(["histogram", "fixed.bin", "--min-max", "tensor_min_max.txt", "--bins", "16"]) == 0
    assert sorted(os.listdir(root / "Histograms")) == ["0000_conv1.png", "0001_fc.png"]
    assert [c[0] for c in drawn] == ["0000_conv1.png", "0001_fc.png"]
    _, title, hx, hy, mm = drawn[0]
    assert "conv1" in title and "CONV_2D" in title and hy is None
    assert mm == (-6.0, 7.5)
    assert hx.lo <= -6.0 and hx.hi >= 7.5  # the red lines inside the drawn range
    expected, _ = np.histogram(left[0].data, bins=16, range=(hx.lo, hx.hi))
    np.testing.assert_array_equal(hx.counts, expected)  # padding left out: 48 values
    assert hx.finite == 48
    assert "2 histograms" in capsys.readouterr().out


def test_overlay_of_the_other_dump(dumps, drawn, capsys):
    root, left, right = dumps
    out = root / "H"
    assert main(["histogram", str(root / "fixed.bin"), "-r", str(root / "float.txt"), "-o", str(out),
                 "--bins", "8", "--quiet"]) == 0
    assert len(drawn) == 2
    _, _, hx, hy, _ = drawn[1]
    assert hy is not None and (hx.lo, hx.hi) == (hy.lo, hy.hi)
    expected, _ = np.histogram(np.round(right[2].data, 6), bins=8, range=(hy.lo, hy.hi))
    np.testing.assert_array_equal(hy.counts, expected)


def test_existing_folder_is_never_deleted(dumps, capsys):
    root, _, _ = dumps
    out = root / "Histograms"
    out.mkdir()
    (out / "mine.png").write_bytes(b"keep")
    assert main(["histogram", str(root / "fixed.bin"), "-o", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert os.listdir(out) == ["mine.png"]
    assert main(["histogram", str(root / "fixed.bin"), "-o", str(out), "--force", "--quiet"]) == 0
    assert sorted(os.listdir(out)) == ["0000_conv1.png", "0001_fc.png", "mine.png"]
    assert (out / "mine.png").read_bytes() == b"keep"


def test_unpaired_and_bad_inputs(dumps, capsys, tmp_path):
    root, left, _ = dumps
    write_sigmastar_dump(root / "other.bin", [TensorSpec("fc", left[2].data, "FULLY_CONNECTED", 0)])
    assert main(["histogram", str(root / "fixed.bin"), "-r", str(root / "other.bin"), "-o", str(root / "o")]) == 0
    out = capsys.readouterr().out
    assert "1 histograms" in out and "conv1: no tensor of this name" in out
    assert os.listdir(root / "o") == ["0001_fc.png"]
    npy = root / "x.npy"
    np.save(npy, left[2].data)
    assert main(["histogram", str(root / "fixed.bin"), "-r", str(npy), "-o", str(root / "p")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "x.npy: not a SigmaStar dump" in err
    (root / "cut.bin").write_bytes((root / "fixed.bin").read_bytes()[:300])
    assert main(["histogram", str(root / "cut.bin"), "-o", str(root / "q")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cut.bin" in err and "truncated" in err, err
    assert not (root / "p").exists() and not (root / "q").exists()
