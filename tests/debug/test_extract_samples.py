"""`extract` pairs the device iteration with the ground-truth sample as compare does (issue #34): iteration k takes
its inputs and expected/ from sample folder k/, or from the folder `--gt-sample` names; it took `gt/1/` (the newest
files) for iteration 0, and the exported sub-model missed its own expected output."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402


@pytest.fixture(scope="module")
def two_samples(tmp_path_factory):
    base = tmp_path_factory.mktemp("extract_samples")
    model = build_model(base / "demo_net.onnx")
    rng = np.random.default_rng(11)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(2)]
    sim = simulate(model, base / "dump", samples=[{"input": x} for x in xs])
    for k, x in enumerate(xs):  # sample 1 written last: its files are the newest
        dump_golden(model, {"input": x}, base / "gt" / str(k))
    return {"model": model, "dump": base / "dump", "json": sim.json_path, "gt": base / "gt"}


def _extract(s, out: Path, *args: str) -> Path:
    code = main(["extract", str(s["model"]), "--start", "pool1_out", "--end", "relu3", "-l", str(s["dump"]),
                 "-f", str(s["json"]), "-r", str(s["gt"]), "-o", str(out), "--bin-dtype", "fp32", *args])
    assert code == 0
    (folder,) = sorted(out.glob("dump_result_*"))
    return folder


def _gt(s, k: int, name: str) -> np.ndarray:
    (path,) = (s["gt"] / str(k)).glob(f"{name}.0.*.npy")
    return np.load(path)


@pytest.mark.parametrize("iteration, gt_args, sample", [("0", (), 0), ("1", (), 1), ("0", ("--gt-sample", "1"), 1)])
def test_ground_truth_data_comes_from_the_paired_sample(two_samples, tmp_path, iteration, gt_args, sample):
    folder = _extract(two_samples, tmp_path / "out", "--data", "ground-truth", "--iteration", iteration, *gt_args)
    x = np.load(folder / "inputs" / "pool1_out.npy")
    np.testing.assert_array_equal(x, _gt(two_samples, sample, "pool1"))
    expected = np.load(folder / "expected" / "relu3_out.npy")
    np.testing.assert_array_equal(expected, _gt(two_samples, sample, "relu3"))
    got = ort.InferenceSession(str(folder / "model.onnx")).run(None, {"pool1_out": x})[0]
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_device_data_and_expected_come_from_one_iteration(two_samples, tmp_path):
    folder = _extract(two_samples, tmp_path / "out", "--iteration", "0")
    np.testing.assert_array_equal(np.load(folder / "expected" / "relu3_out.npy"), _gt(two_samples, 0, "relu3"))
    x = np.load(folder / "inputs" / "pool1_out.npy")  # the device's fp16 values of sample 0, not of sample 1
    ref0, ref1 = _gt(two_samples, 0, "pool1"), _gt(two_samples, 1, "pool1")
    assert np.abs(x - ref0).max() < 0.05 < np.abs(x - ref1).max()
