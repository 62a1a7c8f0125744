"""Model-level comparison end to end: device dumps in NC1HWC0 / FRACTAL_Z / FRACTAL_NZ with a graph JSON holding
fused and inserted ops, against ground-truth .npy files; the result file is checked cell by cell against NumPy."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest

import dumpcmp
from dumpcmp import TensorData, write_dump
from dumpcmp.dumps import layout as L
from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare, compare_runs

from helpers import graphjson as G
from test_metrics_float32 import check as check_float32
from test_metrics_float32 import original32, printed

TS = 1700000000000000


def ts(k: int) -> int:
    return TS + 1000 * k


class Model:
    """A small network on both sides. Ground truth: data -> conv1 -> bn1 -> relu1 -> (flatten) fc1 -> prob.
    Device: trans_Cast_0 (inserted), conv1bn1relu1 (fused Conv+BN+Relu, NC1HWC0 out, FRACTAL_Z weight in),
    fc1 (FRACTAL_NZ out), prob (ND), a corrupt dump, and a ground-truth op no device op maps to."""

    def __init__(self, root, rng, *, fc_error: float = 0.0):
        self.root = root
        self.dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
        self.gt = root / "gt"
        self.dev.mkdir(parents=True)
        self.gt.mkdir()
        x = rng.standard_normal((1, 3, 5, 5)).astype(np.float32)
        w = (rng.standard_normal((20, 3, 3, 3)) * 0.3).astype(np.float32)
        conv = rng.standard_normal((1, 20, 5, 5)).astype(np.float32)  # values need not come from a real conv
        bn = conv * np.float32(0.9) + np.float32(0.1)
        relu = np.maximum(bn, 0)
        fc = (relu.reshape(1, -1) @ (rng.standard_normal((500, 10)) * 0.05)).astype(np.float32)
        prob = (np.exp(fc) / np.exp(fc).sum()).astype(np.float32)
        self.truth = {"data": x, "conv1_w": w, "conv1": conv, "bn1": bn, "relu1": relu, "fc1": fc, "prob": prob,
                      "orphan": np.ones((2, 2), np.float32)}
        for k, (name, a) in enumerate(self.truth.items()):
            np.save(self.gt / f"{name}.0.{ts(k)}.npy", a)

        # device side: fp16 values (the fc1 output gets an extra error when asked)
        self.x16 = x.astype(np.float16)
        self.relu16 = relu.astype(np.float16)
        self.fc16 = (fc + np.float32(fc_error)).astype(np.float16)
        self.w16 = w.astype(np.float16)
        self.prob16 = prob.astype(np.float16)
        five = lambda a: L.convert(a, "NCHW", "NC1HWC0")  # noqa: E731
        write_dump(self.dev / f"Cast.trans_Cast_0.1.{ts(1)}", op_name="trans_Cast_0",
                   inputs=[TensorData(x, format="NCHW")], outputs=[TensorData(self.x16, format="NCHW")])
        write_dump(self.dev / f"Conv2D.conv1bn1relu1.2.{ts(2)}", op_name="conv1bn1relu1",
                   inputs=[TensorData(five(self.x16), format="NC1HWC0", original_shape=(1, 3, 5, 5)),
                           TensorData(L.convert(self.w16, "NCHW", "FRACTAL_Z"), format="FRACTAL_Z",
                                      original_shape=(20, 3, 3, 3))],
                   outputs=[TensorData(five(self.relu16), format="NC1HWC0", original_shape=(1, 20, 5, 5))])
        nz = L.convert(self.fc16, "ND", "FRACTAL_NZ")
        write_dump(self.dev / f"MatMulV2.fc1.3.{ts(3)}", op_name="fc1",
                   inputs=[TensorData(self.relu16.reshape(1, 500), format="ND")],
                   outputs=[TensorData(nz, format="FRACTAL_NZ", original_shape=(1, 10))])
        write_dump(self.dev / f"SoftmaxV2.prob.4.{ts(4)}", op_name="prob",
                   inputs=[TensorData(self.fc16, format="ND")], outputs=[TensorData(self.prob16, format="ND")])
        bad = write_dump(self.dev / f"Add.broken.5.{ts(5)}", op_name="broken",
                         outputs=[TensorData(np.zeros(4, np.float16))])
        with open(bad, "r+b") as f:
            f.truncate(f.seek(0, 2) - 3)

        nc = lambda shape: G.desc(layout="NC1HWC0", shape=(1, (shape[1] + 15) // 16, shape[2], shape[3], 16),  # noqa
                                  origin_shape=shape)
        doc = G.document(
            G.op("data", "Data", 0, outputs=[G.desc(dtype="DT_FLOAT", layout="NCHW", shape=(1, 3, 5, 5),
                                                    origin_shape=(1, 3, 5, 5))]),
            G.op("conv1_w", "Const", 1, outputs=[G.desc(layout="NCHW", shape=(20, 3, 3, 3))]),
            G.op("trans_Cast_0", "Cast", 2, inputs=["data:0"], originals=[],
                 outputs=[G.desc(layout="NCHW", shape=(1, 3, 5, 5), origin_shape=(1, 3, 5, 5))]),
            G.op("conv1bn1relu1", "Conv2D", 3, inputs=["trans_Cast_0:0", "conv1_w:0"],
                 originals=["conv1", "bn1", "relu1"], outputs=[nc((1, 20, 5, 5))]),
            G.op("fc1", "MatMulV2", 4, inputs=["conv1bn1relu1:0"],
                 outputs=[G.desc(layout="FRACTAL_NZ", shape=(1, 1, 16, 16), origin_shape=(1, 10),
                                 ge_origin_format="ND")]),
            G.op("prob", "SoftmaxV2", 5, inputs=["fc1:0"],
                 outputs=[G.desc(layout="ND", shape=(1, 10), origin_shape=(1, 10), ge_origin_format="ND")]),
            G.op("broken", "Add", 6, inputs=["prob:0"], outputs=[G.desc(layout="ND", shape=(4,))]),
        )
        self.graph = G.write(root / "model.json", doc)


@pytest.fixture
def model(tmp_path, rng):
    return Model(tmp_path, rng)


def rows_by_tensor(result):
    return {r.tensor_index or f"*{r.ground_truth}": r for r in result.rows}


def test_pairs_layouts_and_metrics_match_numpy(model):
    result = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    rows = rows_by_tensor(result)
    t = model.truth
    expected = {  # tensor index -> (device values as the metrics see them, ground truth)
        "trans_Cast_0:output:0": (model.x16, t["data"]),
        "conv1bn1relu1:input:0": (model.x16, t["data"]),
        "conv1bn1relu1:input:1": (model.w16, t["conv1_w"]),
        "conv1bn1relu1:output:0": (model.relu16, t["relu1"]),
        "fc1:input:0": (model.relu16, t["relu1"]),
        "fc1:output:0": (model.fc16, t["fc1"]),
        "prob:input:0": (model.fc16, t["fc1"]),
        "prob:output:0": (model.prob16, t["prob"]),
    }
    for key, (x, y) in expected.items():
        row = rows[key]
        assert row.status == "compared", (key, row.fail_reason)
        assert check_float32(x, y, row.result) == 0, key  # as the original prints them
    assert rows["conv1bn1relu1:output:0"].ground_truth == "conv1,bn1,relu1"
    assert rows["conv1bn1relu1:output:0"].shape == (1, 20, 5, 5)
    assert "truncated" in rows["broken:output:0"].fail_reason
    # with a graph, rows are the graph's ops (as the original's): a ground truth no op stands for gets none
    assert "*orphan" not in rows
    # execution order: the graph's ids
    order = [r.tensor_index for r in result.rows if r.tensor_index]
    assert order.index("trans_Cast_0:output:0") < order.index("conv1bn1relu1:output:0") < order.index("fc1:output:0")


def test_first_bad_layer(tmp_path, rng):
    m = Model(tmp_path, rng, fc_error=0.5)
    result = compare(m.root / "dump", m.gt, fusion_json=m.graph)
    first = result.first_below(0.99)
    assert first is not None and first.tensor_index == "fc1:output:0"
    assert result.worst(1)[0].tensor_index in ("fc1:output:0", "prob:input:0")


def test_precise_keeps_float64_terms(model, tmp_path):
    from dumpcmp.comparison.metrics import compare_arrays

    result = compare(model.root / "dump", model.gt, fusion_json=model.graph, precise=True)
    row = rows_by_tensor(result)["conv1bn1relu1:input:1"]
    assert row.result.precise
    want = compare_arrays(model.w16, model.truth["conv1_w"], precise=True)
    assert list(row.result.formatted()) == list(want.formatted())
    out = tmp_path / "precise.csv"
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(model.graph),
                 "-o", str(out), "--precise", "--quiet"]) == 0
    with open(out, newline="") as f:
        cells = {r[7]: r for r in csv.reader(f)}["conv1bn1relu1:input:1"]
    assert cells[9:19] == list(want.formatted())
    default = compare_arrays(model.w16, model.truth["conv1_w"])
    assert default.format(2) != want.format(2)  # float32 terms move this tensor's AccumulatedRelativeError


def test_csv_file_cell_by_cell(model, tmp_path):
    out = tmp_path / "result.csv"
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(model.graph),
                 "-o", str(out), "-csv", "--quiet"]) == 0
    with open(out, newline="") as f:
        table = list(csv.reader(f))
    header = table[0]
    assert header == ["Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "TensorIndex",
                      "Shape", "CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError",
                      "RelativeEuclideanDistance", "KullbackLeiblerDivergence", "StandardDeviation",
                      "MeanAbsoluteError", "RootMeanSquareError", "MaxRelativeError", "MeanRelativeError",
                      "CompareFailReason"]
    rows = {r[7] or "*" + r[5]: r for r in table[1:]}
    row = rows["fc1:output:0"]
    ref = original32(model.fc16, model.truth["fc1"])
    assert row[1:4] == ["MatMulV2", "fc1", "float16"] and row[5:7] == ["fc1", "float32"] and row[8] == "[1,10]"
    assert row[4] == "NaN"  # the dump records no address (0): the original prints NaN, not 0
    # KLD of near-identical data: the original's float32 rounding may print "-0.000000", and so do we
    assert row[9:19] == [printed(i, ref[i]) for i in range(10)]
    assert row[19] == ""
    assert "*orphan" not in rows
    # Index numbers the graph's fusion units, in order; an op's inputs and outputs share its number
    indices = [int(r[0]) for r in table[1:]]
    assert indices == sorted(indices) and indices[0] == 0
    # never overwritten without --force
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-o", str(out), "--quiet"]) == 2
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-o", str(out), "--quiet",
                 "--force", "-alg", "0,7", "--extra"]) == 0
    with open(out, newline="") as f:
        header = next(csv.reader(f))
    assert header[-9:] == ["CosineSimilarity", "RootMeanSquareError", *dumpcmp.output.table.EXTRA_COLUMNS,
                           "CompareFailReason"]


def test_without_graph_pairs_outputs_by_name(model):
    result = compare(model.root / "dump", model.gt)
    rows = rows_by_tensor(result)
    assert rows["fc1:output:0"].status == "compared"
    assert rows["prob:output:0"].status == "compared"
    # the fused op's name is not an original name: nothing to pair it with
    assert rows["conv1bn1relu1:output:0"].status == "unmatched"


def test_thread_count_does_not_change_results(model, rng):
    # one pair large enough to be split over threads (the engine gives pairs from 2**22 elements all threads)
    big = rng.standard_normal((1, 17, 512, 512)).astype(np.float32)
    np.save(model.gt / f"huge.0.{ts(50)}.npy", big)
    write_dump(model.dev / f"Relu.huge.9.{ts(50)}", op_name="huge",
               outputs=[TensorData(L.convert(big.astype(np.float16), "NCHW", "NC1HWC0"), format="NC1HWC0",
                                   original_shape=big.shape)])
    one = compare(model.root / "dump", model.gt, threads=1)
    two = compare(model.root / "dump", model.gt, threads=2)
    assert rows_by_tensor(one)["huge:output:0"].result.count == big.size >= 1 << 22
    assert one.table() == two.table()


def test_device_vs_device(model, tmp_path, rng):
    other = tmp_path / "other"
    import shutil

    shutil.copytree(model.root / "dump", other)
    result = compare(model.root / "dump", other)
    rows = rows_by_tensor(result)
    compared = [r for r in result.rows if r.status == "compared"]
    # fractal layouts included: same layout on both sides, compared in stored order
    assert {"conv1bn1relu1:output:0", "conv1bn1relu1:input:1", "fc1:output:0"} <= {r.tensor_index for r in compared}
    assert all(r.result.format(0) == "1.000000" and r.result.value(1) == 0.0 for r in compared)
    assert "truncated" in rows["broken:output:0"].fail_reason
    assert "Address" in result.header() and result.header().count("Address") == 2
    # a changed value on the right shows up, in the stored (fractal) order
    right = next(other.rglob("MatMulV2.fc1.*"))
    d = dumpcmp.open_dump(right)
    nz = d.outputs[0].array().copy()
    nz[0, 0, 0, 3] += np.float16(1.0)
    write_dump(right, op_name="fc1", inputs=[TensorData(d.inputs[0].array(), format="ND")],
               outputs=[TensorData(nz, format="FRACTAL_NZ", original_shape=(1, 10))])
    row = rows_by_tensor(compare(model.root / "dump", other, npu_vs_npu="raw"))["fc1:output:0"]
    # as the original tool's 72c5bd4c: both sides in stored order, the NZ block's padding included (16 x 16)
    assert abs(row.result.value(1) - 1.0) < 0.01 and row.result.count == nz.size == 256
    assert row.result.format(6) == "%.6f" % (row.result.value(1) / 256)
    assert row.shape == (1, 1, 16, 16)  # the device shape
    restored = rows_by_tensor(compare(model.root / "dump", other))["fc1:output:0"]  # the default: (1, 10)
    assert restored.result.count == 10 and restored.result.format(6) == "%.6f" % (restored.result.value(1) / 10)
    assert restored.shape == (1, 1, 16, 16)


def test_bad_inputs(tmp_path, model):
    assert main(["compare", "-l", str(tmp_path / "nothing"), "-r", str(model.gt), "--quiet"]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["compare", "-l", str(empty), "-r", str(model.gt), "--quiet"]) == 2
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-alg", "12", "--quiet"]) == 2
    bad_graph = G.write(tmp_path / "bad.json", "{not json")
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(bad_graph),
                 "--quiet"]) == 2


def test_shape_mismatch_is_a_row_not_a_crash(model):
    np.save(model.gt / f"prob.0.{ts(99)}.npy", np.zeros((1, 11), np.float32))  # newest wins: a wrong shape
    rows = rows_by_tensor(compare(model.root / "dump", model.gt, fusion_json=model.graph))
    assert "[prob] Due to the different shapes on the left and right,the left dump data(10) can not be compared " \
        "to the right dump data(11)" in rows["prob:output:0"].fail_reason
    assert rows["fc1:output:0"].status == "compared"


def test_nan_in_device_output_is_flagged(tmp_path):
    dev = tmp_path / "d"
    gt = tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    y = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 4, 4, 4)
    x = y.astype(np.float16)
    x[0, 1, 2, 3] = np.inf
    write_dump(dev / f"Relu.r.1.{TS}", op_name="r", outputs=[TensorData(x, format="NCHW")])
    np.save(gt / f"r.0.{TS}.npy", y)
    result = compare(dev, gt)
    row = rows_by_tensor(result)["r:output:0"]
    assert row.overflow and result.first_below(0.99) is row
    assert result.table(overflow=True)[1][9] == "YES"
    # as the original's np.abs(x - y).max() of an inf prints: "inf" (a computed value, not the NaN marker)
    assert math.isinf(row.value(1)) and row.result.format(1) == "inf" and row.result.format(0) == "nan"


def test_compare_runs_reports_each_run(model, tmp_path):
    import shutil

    shutil.copytree(model.dev, model.dev.parent / "1")  # a second iteration
    results = compare_runs(model.root / "dump", model.gt, fusion_json=model.graph)
    assert [r.run.endswith("iteration 0") for r in results] == [True, False]
    with pytest.raises(dumpcmp.DumpcmpError, match="holds 2 runs"):
        compare(model.root / "dump", model.gt)
    one = compare(model.root / "dump", model.gt, data_index=1, fusion_json=model.graph)
    assert one.run.endswith("iteration 1")


def test_worst_distinct_skips_the_same_tensor_dumped_twice(tmp_path, rng):
    m = Model(tmp_path, rng, fc_error=0.5)
    result = compare(m.root / "dump", m.gt, fusion_json=m.graph)
    plain = [r.tensor_index for r in result.worst(2)]
    assert plain == ["fc1:output:0", "prob:input:0"]  # the same values: fc1's output is prob's input
    assert [r.tensor_index for r in result.worst(2, distinct=True)][0] == "fc1:output:0"
    assert "prob:input:0" not in [r.tensor_index for r in result.worst(10, distinct=True)]


def test_plain_layout_permuted_to_the_ground_truths(tmp_path, rng):
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    nchw = rng.standard_normal((1, 4, 3, 5)).astype(np.float32)
    write_dump(dev / f"Conv2D.conv1.1.{TS}", op_name="conv1",
               outputs=[TensorData(nchw.transpose(0, 2, 3, 1).copy(), format="NHWC", original_shape=(1, 3, 5, 4))])
    np.save(gt / f"conv1.0.{TS}.npy", nchw)
    row = rows_by_tensor(compare(dev, gt))["conv1:output:0"]
    assert row.result.format(0) == "1.000000" and row.result.value(1) == 0.0


def test_dead_layer_is_the_first_bad_one(tmp_path):
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    write_dump(dev / f"Relu.dead.1.{TS}", op_name="dead", outputs=[np.zeros(8, np.float32)])
    np.save(gt / f"dead.0.{TS}.npy", np.arange(1, 9, dtype=np.float32))
    write_dump(dev / f"Relu.fine.2.{TS + 1}", op_name="fine", outputs=[np.ones(8, np.float32)])
    np.save(gt / f"fine.0.{TS + 1}.npy", np.ones(8, np.float32))
    result = compare(dev, gt)
    first = result.first_below(0.99)
    assert first is not None and first.tensor_index == "dead:output:0" and first.dead
    assert result.worst(1)[0].tensor_index == "dead:output:0"


def test_sub_format_is_a_group_count_only_for_fractal_z(tmp_path, rng):
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    x = rng.standard_normal((1, 20, 3, 3)).astype(np.float32)
    write_dump(dev / f"Relu.r.1.{TS}", op_name="r",
               outputs=[TensorData(L.convert(x, "NCHW", "NC1HWC0"), format="NC1HWC0", sub_format=2,
                                   original_shape=x.shape)])
    np.save(gt / f"r.0.{TS}.npy", x)
    row = rows_by_tensor(compare(dev, gt))["r:output:0"]
    assert row.status == "compared" and row.result.value(1) == 0.0


def test_device_vs_device_compares_int8_tensors(tmp_path):
    left, right = tmp_path / "l", tmp_path / "r"
    for side, delta in ((left, 0), (right, 1)):
        side.mkdir()
        q = np.arange(-8, 8, dtype=np.int8)
        q[3] += delta
        write_dump(side / f"AscendQuant.conv1_quant_layer.1.{TS}", op_name="conv1_quant_layer", outputs=[q])
    row = rows_by_tensor(compare(left, right))["conv1_quant_layer:output:0"]
    assert row.status == "compared" and row.result.value(1) == 1.0


def test_cli_checks_the_output_before_comparing_and_bad_numbers(model, tmp_path, capsys, monkeypatch):
    import dumpcmp.comparison.compare as comparison

    base = ["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "--quiet"]
    called = []
    monkeypatch.setattr(comparison, "compare_runs", lambda *a, **k: called.append(1) or [])
    existing = tmp_path / "r.csv"
    existing.write_text("mine")
    assert main(base + ["-o", str(existing)]) == 2
    assert main(base + ["-o", str(tmp_path / "missing" / "r.csv")]) == 2
    assert called == [] and existing.read_text() == "mine"
    with pytest.raises(SystemExit) as info:
        main(base + ["--threads", "-1"])
    assert info.value.code == 2 and "below 0" in capsys.readouterr().err


def test_quiet_without_output_still_prints_the_table(model, capsys):
    assert main(["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "--quiet"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("Index") and "fc1:output:0" in out.out and out.err == ""


def test_ground_truth_of_an_unusable_dtype_is_a_row(tmp_path):
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    write_dump(dev / f"Relu.r.1.{TS}", op_name="r", outputs=[np.ones(4, np.float32)])
    np.save(gt / f"r.0.{TS}.npy", np.ones(4, np.complex64))
    row = rows_by_tensor(compare(dev, gt))["r:output:0"]
    assert row.status == "failed" and "complex64 has no values the metrics compare" in row.fail_reason


def test_long_channel_rows_are_compared_in_whole_tile_blocks(tmp_path, rng):
    # H*W = 90000 positions per channel, more than a 64 Ki window: the engine reads the NC1HWC0 side in windows of
    # 16 whole channel rows (one C0 block) instead of gathering one channel out of every 32-byte piece. The numbers
    # are those of the same arrays compared directly, up to summation order, for any thread count and window size.
    from dumpcmp import _core as core
    from dumpcmp.dumps.dump import open_dump

    truth = rng.standard_normal((1, 20, 300, 300)).astype(np.float32)
    x16 = (truth + rng.standard_normal(truth.shape).astype(np.float32) * 0.01).astype(np.float16)
    path = tmp_path / "Conv2D.conv.1.1700000000000001"
    write_dump(path, op_name="conv",
               outputs=[TensorData(L.convert(x16, "NCHW", "NC1HWC0"), format="NC1HWC0", original_shape=truth.shape)])
    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format="NCHW",
                                      dst_shape=list(truth.shape))
    y = core.compare.source_from_array(truth)
    want = core.metrics.compare_arrays(x16, truth)
    results = [core.compare.compare_sources(x, y, threads=t, chunk_elements=c) for t in (1, 2) for c in (1000, 1 << 16)]
    for r in results:
        for i in range(10):
            if i == 5:
                np.testing.assert_allclose(r.standard_deviation, want.standard_deviation, rtol=1e-12)
            else:
                np.testing.assert_allclose(r.value(i), want.value(i), rtol=1e-12, atol=1e-15)
            assert r.format(i) == want.format(i)
    # the window is one C0 block whatever the option below it: the same bits for 1 and 2 threads, both sizes
    assert len({tuple(r.value(i) for i in range(10) if i != 5) for r in results}) == 1


@pytest.mark.parametrize("fmt,shape", [("NC1HWC0", (1, 20, 30, 31)), ("FRACTAL_NZ", (3, 70, 45))])
def test_a_plan_side_gathered_once_gives_the_same_bits(tmp_path, rng, fmt, shape):
    # With the cosine or KLD selected the engine gathers a layout side into compared order once (their passes read
    # it again); without them it decodes window by window. The metrics both runs compute are the same bits, and
    # they are those of the arrays compared directly.
    from dumpcmp import _core as core
    from dumpcmp.dumps.dump import open_dump

    plain = "NCHW" if fmt == "NC1HWC0" else "ND"
    truth = rng.standard_normal(shape).astype(np.float32)
    x16 = (truth + rng.standard_normal(shape).astype(np.float32) * 0.01).astype(np.float16)
    path = tmp_path / "Conv2D.conv.1.1700000000000001"
    write_dump(path, op_name="conv",
               outputs=[TensorData(L.convert(x16, plain, fmt), format=fmt, original_shape=shape)])
    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format=plain, dst_shape=list(shape))
    y = core.compare.source_from_array(truth)
    one_pass = [1, 2, 3, 5, 6, 7, 8, 9]
    gathered = core.compare.compare_sources(x, y, threads=2, chunk_elements=4096)
    windowed = core.compare.compare_sources(x, y, metrics=one_pass, threads=2, chunk_elements=4096)
    direct = core.metrics.compare_arrays(x16, truth, threads=2, chunk_elements=4096)
    for i in one_pass:
        assert gathered.value(i) == windowed.value(i) or i == 5
    assert gathered.standard_deviation == windowed.standard_deviation
    assert [gathered.value(i) for i in (0, 4)] == [direct.value(i) for i in (0, 4)]
    assert list(gathered.formatted()) == list(direct.formatted())


@pytest.mark.slow
def test_large_pairs_in_one_batch_share_gather_buffers_without_mixing(tmp_path, rng):
    # compare_many gathers its large pairs (from 2**22 elements, one after another) into buffers handed from one
    # pair to the next: a larger pair after a smaller one grows them, a smaller one uses their start. Each pair's
    # numbers are the bits it gets compared on its own.
    from dumpcmp import _core as core
    from dumpcmp.dumps.dump import open_dump

    pairs = []
    for k, channels in enumerate((20, 17, 33, 20)):
        truth = rng.standard_normal((1, channels, 512, 512)).astype(np.float32) * (k + 1)
        x16 = (truth + rng.standard_normal(truth.shape).astype(np.float32) * 0.01).astype(np.float16)
        path = tmp_path / f"Conv2D.conv{k}.1.170000000000000{k}"
        write_dump(path, op_name=f"conv{k}", outputs=[TensorData(L.convert(x16, "NCHW", "NC1HWC0"),
                                                                 format="NC1HWC0", original_shape=truth.shape)])
        x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format="NCHW",
                                      dst_shape=list(truth.shape))
        pairs.append((x, core.compare.source_from_array(truth), False))
    assert all(x.count >= 1 << 22 for x, _, _ in pairs)
    together = core.compare.compare_many(pairs, None, 2)
    for (x, y, _), got in zip(pairs, together):
        alone = core.compare.compare_sources(x, y, threads=2)
        assert [got.value(i) for i in range(10) if i != 5] == [alone.value(i) for i in range(10) if i != 5]
        assert list(got.formatted()) == list(alone.formatted())


@pytest.mark.parametrize("pairs_per_batch", [1, 2, 3])
def test_batches_compared_while_the_next_is_opened_give_the_rows_of_one_batch(model, tmp_path, monkeypatch,
                                                                               pairs_per_batch):
    # _compare_pairs hands each batch to the engine on a thread of its own and opens the next batch meanwhile; the
    # rows of a batch are filled in after the next one has begun. Failing pairs (a shape mismatch, a corrupt dump)
    # sit between the batches. Every row and every byte of the CSV is what one batch gives.
    import threading

    import dumpcmp.comparison.compare as C

    np.save(model.gt / f"prob.0.{ts(99)}.npy", np.zeros((1, 11), np.float32))
    one = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    monkeypatch.setattr(C, "_BATCH_PAIRS", pairs_per_batch)
    calls = []
    real = C.core.compare.compare_many
    monkeypatch.setattr(C.core.compare, "compare_many",
                        lambda pairs, *a, **k: calls.append(len(pairs)) or real(pairs, *a, **k))
    split = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    assert len(calls) > 1 and max(calls) <= pairs_per_batch
    assert [(r.tensor_index, r.status, r.fail_reason) for r in split.rows] == \
        [(r.tensor_index, r.status, r.fail_reason) for r in one.rows]
    one.write(tmp_path / "one.csv")
    split.write(tmp_path / "split.csv")
    assert (tmp_path / "split.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-engine"]


def test_an_engine_error_reaches_the_caller_and_no_batch_outlives_the_call(model, monkeypatch):
    import threading

    import dumpcmp.comparison.compare as C

    monkeypatch.setattr(C, "_BATCH_PAIRS", 1)
    real, calls = C.core.compare.compare_many, []

    def failing(pairs, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise MemoryError("no room")
        return real(pairs, *a, **k)

    monkeypatch.setattr(C.core.compare, "compare_many", failing)
    with pytest.raises(MemoryError, match="no room"):
        compare(model.root / "dump", model.gt, fusion_json=model.graph)
    assert not [t for t in threading.enumerate() if t.name == "dumpcmp-engine"]


def test_batches_are_compared_in_place_where_no_thread_can_be_started(model, monkeypatch):
    import dumpcmp.comparison.compare as C

    one = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    monkeypatch.setattr(C, "_BATCH_PAIRS", 2)

    def refuse(self):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(C._Batch, "start", refuse)
    got = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    assert got.table() == one.table()


def test_csv_cells_that_could_run_as_formulas(tmp_path):
    from dumpcmp.output.table import csv_safe, csv_text as _csv_text

    assert [csv_safe(c) for c in ("-0.000000", "nan", "NaN", "inf", "(-0.011;0.957),(-0.010;0.958)", "conv1")] == \
        ["-0.000000", "nan", "NaN", "inf", "(-0.011;0.957),(-0.010;0.958)", "conv1"]
    assert [csv_safe(c) for c in ("=cmd|' /C calc'!A0", "+1+1", "-op", "%x", "@SUM(1)", "a;=b", "\uff1dx")] == \
        [" =cmd|' /C calc'!A0", " +1+1", " -op", " %x", " @SUM(1)", " a;=b", " \uff1dx"]
    text = _csv_text([["Index", "CompareFailReason"], ["0", "line one\nline two\r"]])
    assert list(csv.reader(io.StringIO(text, newline=""))) == [["Index", "CompareFailReason"],
                                                                ["0", "line one\nline two\r"]]
    assert '"line one\nline two\r"' in text


def test_batch_larger_than_ground_truth_compares_the_first_samples(tmp_path, rng):
    # as the original: a plain device tensor is cut to the ground truth's extent when its first differing axis is
    # larger; smaller is an error naming both shapes
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    y = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    x = np.concatenate([y + 0.01, rng.standard_normal((1, 3, 4, 4)).astype(np.float32)])  # batch 2
    write_dump(dev / f"Relu.r.1.{TS}", op_name="r", outputs=[TensorData(x, format="NCHW")])
    np.save(gt / f"r.0.{TS}.npy", y)
    write_dump(dev / f"Relu.s.2.{TS}", op_name="s", outputs=[TensorData(y, format="NCHW")])
    np.save(gt / f"s.0.{TS}.npy", x)
    rows = rows_by_tensor(compare(dev, gt))
    r = rows["r:output:0"]
    assert r.status == "compared" and r.result.count == y.size and r.result.format(1) == "0.010000"
    assert rows["s:output:0"].fail_reason == (
        "[s] Due to the different shapes on the left and right,the left dump data(1, 3, 4, 4) can not be compared "
        "to the right dump data(2, 3, 4, 4). Please check the batch of the dump data or the shape may be changed "
        "due to optimization.")


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint16", "int64", "bool"])
def test_ground_truth_npy_mapped_by_the_core_is_the_arrays(tmp_path, rng, dtype):
    # A plain .npy ground truth is mapped by the core after one read of its header (no np.load): the numbers are
    # those of the same array handed over from NumPy.
    from dumpcmp import _core as core
    from dumpcmp.dumps.ground_truth import mapped_npy

    truth = (np.abs(rng.standard_normal((3, 5, 7))) * 50).astype(dtype)
    x = core.compare.source_from_array(np.ascontiguousarray((truth + 1).astype(np.float16)))
    path = tmp_path / "conv.0.1700000000000001.npy"
    np.save(path, truth)
    source, shape, name = mapped_npy(str(path))
    assert shape == truth.shape and name == truth.dtype.name and source.count == truth.size
    got = core.compare.compare_sources(x, source)
    want = core.compare.compare_sources(x, core.compare.source_from_array(truth))
    assert list(got.formatted()) == list(want.formatted())


def test_ground_truth_npy_the_core_does_not_map(tmp_path, rng):
    # Fortran order, big-endian, empty and broken files take np.load's path with its messages; a file cut after
    # its header was read is refused by the core, naming it, instead of reading past the mapping.
    from dumpcmp import _core as core
    from dumpcmp.dumps.ground_truth import mapped_npy
    from dumpcmp.errors import DumpError

    a = rng.standard_normal((4, 6)).astype(np.float32)
    for i, arr in enumerate([np.asfortranarray(a), a.astype(">f4"), np.zeros((0, 3), np.float32)]):
        np.save(tmp_path / f"{i}.npy", arr)
        assert mapped_npy(str(tmp_path / f"{i}.npy")) is None
    (tmp_path / "bad.npy").write_bytes(b"\x93NUMPY\x01\x00garbage")
    assert mapped_npy(str(tmp_path / "bad.npy")) is None
    np.save(tmp_path / "ok.npy", a)
    with pytest.raises(DumpError, match="ok.npy"):
        core.compare.source_from_file(str(tmp_path / "ok.npy"), 128, "FLOAT", a.size + 1)


def test_a_model_of_dumps_and_plain_npy_is_compared_without_numpy(model, tmp_path):
    # Importing NumPy took 0.1-0.15 s, a tenth of a 2 GB model's comparison: the core reads the dumps and the plain
    # .npy ground truth, and the command never imports it. Same result file as the run in this process.
    import subprocess
    import sys

    args = ["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(model.graph), "--quiet"]
    code = "import sys; from dumpcmp.cli import main; rc = main(sys.argv[1:]); print(rc, 'numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code, *args, "-o", str(tmp_path / "sub.csv")],
                          capture_output=True, text=True, check=True)
    rc = main([*args, "-o", str(tmp_path / "here.csv")])
    assert done.stdout.split() == [str(rc), "False"], done.stderr
    assert (tmp_path / "sub.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()


def test_fortran_order_ground_truth_gives_the_c_order_rows(tmp_path, rng):
    truth = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    x = (truth + rng.standard_normal(truth.shape).astype(np.float32) * 0.01).astype(np.float16)
    rows = {}
    for order in ("C", "F"):
        root = tmp_path / order
        (root / "dump").mkdir(parents=True)
        write_dump(root / "dump" / "Conv2D.conv.1.1700000000000001", op_name="conv", outputs=[TensorData(x)])
        (root / "gt").mkdir()
        np.save(root / "gt" / "conv.0.1700000000000001.npy", np.asarray(truth, order=order))
        rows[order] = [(r.tensor_index, list(r.result.formatted())) for r in compare(root / "dump", root / "gt").rows]
    assert rows["C"] == rows["F"] and rows["C"]


def test_rows_hold_values_and_the_table_prints_them(model):
    # Row holds numbers, tuples and None; dumpcmp.output.table makes the original tool's texts from them
    from dumpcmp.output.table import NOT_COMPUTED, address_text, shape_text

    result = compare(model.root / "dump", model.gt, fusion_json=model.graph)
    table = result.table()
    header = table[0]
    col = {name: header.index(name) for name in ("Address", "TensorIndex", "Shape")}
    npu_type = header.index("DataType")
    for row, cells in zip(result.rows, table[1:]):
        assert row.shape is None or (isinstance(row.shape, tuple) and all(isinstance(d, int) for d in row.shape))
        assert row.npu_address is None or isinstance(row.npu_address, int)
        if row.unmatched:  # a graph op without dump file: NaN in every column it has no value for
            assert (row.tensor_index, row.shape, row.npu_address, row.npu_data_type) == (None, None, None, None)
            assert [cells[col[c]] for c in col] + [cells[npu_type]] == [NOT_COMPUTED] * 4
        else:
            assert cells[col["Shape"]] == shape_text(row.shape)
            assert cells[col["Address"]] == address_text(row.npu_address)
            assert cells[col["TensorIndex"]] == (row.tensor_index or "")
    compared = next(r for r in result.rows if r.status == "compared")
    assert isinstance(compared.npu_data_type, str) and compared.shape is not None
    assert shape_text((1, 20, 5, 5)) == "[1,20,5,5]" and shape_text(None) == ""
    assert (address_text(0), address_text(None), address_text(4096)) == ("NaN", "", "4096")
    assert any(r.unmatched for r in result.rows)



def test_the_comparison_stage_does_not_import_the_output_stage_when_it_loads():
    # dumps -> graph -> comparison -> output: no module-level import of output/ in comparison/ (a method may import
    # it when called)
    import ast
    from pathlib import Path

    folder = Path(dumpcmp.__file__).parent / "comparison"
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n.startswith("dumpcmp.output") for n in names), (path.name, names)
