"""The device side of a window of pairs read in two calls of the core (`Sides.device_batch`, issue #35): the rows are
the general path's (`Sides.device` one pair at a time) cell for cell, every failure text included, and the common
case (a device dump against a plain .npy) makes no source one pair at a time."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.comparison.compare import compare
from dumpcmp.comparison.sources import Sides
from dumpcmp.dumps import layout as L
from dumpcmp.support.native import core

from test_compare import Model

TS = 1700000000000000


def _mixed(root, rng):
    """Device dumps of every kind the loop meets against .npy ground truth: device layouts (grouped FRACTAL_Z
    too), a plain layout permuted, BF16, bool, a scalar, int8, an FC layer's 5-D output against a 2-D ground
    truth, a batch cut to the ground truth's, element counts that differ, bytes that do not fit, an input index the
    dump does not have, an unknown ground truth."""
    dev, gt = root / "d", root / "g"
    dev.mkdir()
    gt.mkdir()
    ops = []

    def op(name, outputs, truths, inputs=()):
        k = len(ops)
        path = write_dump(dev / f"Op.{name}.{k + 1}.{TS + k}", op_name=name, outputs=outputs, inputs=list(inputs))
        for i, t in enumerate(truths):
            if t is not None:
                np.save(gt / f"{name}.{i}.{TS + k}.npy", t)
        ops.append(name)
        return path

    x = rng.standard_normal((1, 20, 3, 3)).astype(np.float32)
    op("five", [TensorData(L.convert(x.astype(np.float16), "NCHW", "NC1HWC0"), format="NC1HWC0",
                           original_shape=x.shape)], [x])
    w = rng.standard_normal((8, 2, 3, 3)).astype(np.float32)
    op("grouped", [TensorData(L.convert(w.astype(np.float16), "NCHW", "FRACTAL_Z", groups=2), format="FRACTAL_Z",
                              sub_format=2, original_shape=w.shape)], [w])
    m = rng.standard_normal((3, 40)).astype(np.float32)
    op("nz", [TensorData(L.convert(m.astype(np.float16), "ND", "FRACTAL_NZ"), format="FRACTAL_NZ",
                         original_shape=m.shape)], [m])
    op("nhwc", [TensorData(x.transpose(0, 2, 3, 1).copy(), format="NHWC", original_shape=(1, 3, 3, 20))], [x])
    op("bf16", [TensorData(x, data_type="BF16")], [x])
    b = rng.standard_normal(12) > 0
    op("flag", [TensorData(b)], [b])
    op("scalar", [np.array(2.5, np.float32)], [np.array(2.5, np.float32)])
    op("ints", [rng.integers(-5, 5, 30).astype(np.int8)], [rng.integers(-5, 5, 30).astype(np.int8)])
    fc = rng.standard_normal((2, 20)).astype(np.float32)
    op("fc", [TensorData(L.convert(fc.reshape(2, 20, 1, 1), "NCHW", "NC1HWC0"), format="NC1HWC0",
                         original_shape=(2, 20))], [fc])
    y = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    op("batch", [TensorData(np.concatenate([y, y]), format="NCHW")], [y])
    op("counts", [np.zeros(7, np.float32)], [np.zeros(8, np.float32)])
    bad = op("broken", [np.ones(6, np.float16)], [np.ones(6, np.float32)])
    with open(bad, "r+b") as f:
        f.truncate(f.seek(0, 2) - 3)
    op("two", [np.ones(4, np.float32), np.ones(4, np.float32)], [np.ones(4, np.float32), None])
    op("zero", [np.zeros(5, np.float32)], [np.arange(5, dtype=np.float32)])
    op("withinput", [np.ones(3, np.float32)], [np.ones(3, np.float32)], inputs=[np.ones(3, np.float32)])
    return dev, gt


def _general_only(monkeypatch):
    """Every pair through `Sides.device`, one at a time (the path the batch must agree with)."""
    monkeypatch.setattr(Sides, "device_batch", lambda self, wanted: [None] * len(wanted))


@pytest.mark.parametrize("case", ["model", "mixed"])
@pytest.mark.parametrize("max_elements", [0, 5])
def test_rows_read_in_one_call_are_the_general_paths(tmp_path, rng, monkeypatch, case, max_elements):
    if case == "model":
        m = Model(tmp_path, rng)
        left, right, options = m.root / "dump", m.gt, {"fusion_json": m.graph}
    else:
        left, right = _mixed(tmp_path, rng)
        options = {}
    batched = compare(left, right, max_elements=max_elements, **options)
    with monkeypatch.context() as patch:
        _general_only(patch)
        general = compare(left, right, max_elements=max_elements, **options)
    assert batched.table(extra=True) == general.table(extra=True)
    assert [r.status for r in batched.rows] == [r.status for r in general.rows]
    assert [r.shape for r in batched.rows] == [r.shape for r in general.rows]
    if case == "mixed":
        statuses = {r.tensor_index: r.status for r in batched.rows}
        assert statuses["five:output:0"] == statuses["grouped:output:0"] == statuses["fc:output:0"] == "compared"
        assert statuses["counts:output:0"] == statuses["broken:output:0"] == "failed"


@pytest.mark.parametrize("mode", ["restored", "raw"])
def test_device_vs_device_rows_read_in_one_call_are_the_general_paths(tmp_path, monkeypatch, mode):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    left, _ = _mixed(tmp_path / "a", np.random.default_rng(1))
    right, _ = _mixed(tmp_path / "b", np.random.default_rng(2))
    # a side whose shape differs from its counterpart's, and a bool pair
    write_dump(left / f"Op.odd.99.{TS + 99}", op_name="odd", outputs=[np.ones((2, 3), np.float32)])
    write_dump(right / f"Op.odd.99.{TS + 99}", op_name="odd", outputs=[np.ones((3, 2), np.float32)])
    batched = compare(left, right, npu_vs_npu=mode)
    with monkeypatch.context() as patch:
        patch.setattr(Sides, "device_pairs", lambda self, wanted, raw: [None] * len(wanted))
        general = compare(left, right, npu_vs_npu=mode)
    assert batched.table(extra=True) == general.table(extra=True)
    assert [r.status for r in batched.rows] == [r.status for r in general.rows]
    statuses = {r.tensor_index: r.status for r in batched.rows}
    assert statuses["five:output:0"] == statuses["nz:output:0"] == statuses["flag:output:0"] == "compared"
    assert statuses["odd:output:0"] == "failed"


@pytest.mark.parametrize("mode", [None, "restored", "raw"])
def test_the_common_case_makes_no_source_one_pair_at_a_time(tmp_path, rng, monkeypatch, mode):
    m = Model(tmp_path, rng)
    right, options = (m.gt, {"fusion_json": m.graph}) if mode is None else (m.root / "dump", {"npu_vs_npu": mode})
    calls = []
    one = core.compare.source_from_dump

    class Counting:  # the core module's functions are read-only: stand in for the submodule
        def __getattr__(self, name):
            return getattr(core.compare, name)

        @staticmethod
        def source_from_dump(*args, **kwargs):
            calls.append(args[1:3])
            return one(*args, **kwargs)

    import dumpcmp.comparison.sources as sources_module

    class Core:
        compare = Counting()

        def __getattr__(self, name):
            return getattr(core, name)

    monkeypatch.setattr(sources_module, "core", Core())
    result = compare(m.root / "dump", right, **options)
    compared = [r for r in result.rows if r.status == "compared"]
    assert len(compared) >= 7
    assert calls == []  # the truncated dump fails before a source is made: no pair went one by one


def test_a_count_that_differs_goes_the_general_way_once(tmp_path, monkeypatch):
    dev, gt = tmp_path / "d", tmp_path / "g"
    dev.mkdir()
    gt.mkdir()
    write_dump(dev / f"Relu.r.1.{TS}", op_name="r", outputs=[np.zeros(7, np.float32)])
    np.save(gt / f"r.0.{TS}.npy", np.zeros(8, np.float32))
    seen = []
    general = Sides.device

    def device(self, *args, **kwargs):
        seen.append(args[0].entry.path)
        return general(self, *args, **kwargs)

    monkeypatch.setattr(Sides, "device", device)
    row = compare(dev, gt).rows[0]
    assert len(seen) == 1
    assert row.fail_reason == (
        "[r] Due to the different shapes on the left and right,the left dump data(7) can not be compared to the "
        "right dump data(8). Please check the batch of the dump data or the shape may be changed due to "
        "optimization.")


def test_the_core_calls_answer_none_for_what_they_cannot_read(tmp_path):
    good = write_dump(tmp_path / f"Relu.s.2.{TS}", op_name="s", outputs=[np.arange(6, dtype=np.float32)])
    # a header whose shape needs more bytes than the dump holds
    odd = write_dump(tmp_path / f"Relu.r.1.{TS}", op_name="r", outputs=[TensorData(np.zeros(12, np.uint8), raw=True,
                                                                                   data_type="FLOAT16", shape=(2, 4))])
    f, cut = core.dump.DumpFile(str(good)), core.dump.DumpFile(str(odd))
    facts = core.compare.dump_tensor_facts([(f, "output", 0), (f, "output", 1), (f, "input", 0), (f, "sideways", 0),
                                            (f, "output"), "not a tuple", (None, "output", 0), (cut, "output", 0),
                                            (f, "output", -1)])
    assert facts[0] == ("FLOAT", "ND", (6,), None, 0, 0, "")
    assert facts[1:7] == [None] * 6 and facts[8] is None
    assert facts[7][:3] == ("FLOAT16", "ND", (2, 4))
    assert facts[7][6] and facts[7][6] == cut.check("output", 0)  # the problem, as DumpFile.check says it
    made = core.compare.sources_from_dumps([(f, "output", 0, None, None, 1), (f, "output", 3, None, None, 1),
                                            (f, "output", 0, "NCHW", [1, 2, 3], 1), (f, "output", 0, "XYZ", [6], 1),
                                            (f, "output", 0, "ND", None, 1), ("x",), 7,
                                            (cut, "output", 0, None, None, 1), (None, "output", 0, None, None, 1)])
    source, count, stored = made[0]
    assert (count, stored, source.count) == (6, 24, 6)
    assert made[1:] == [None] * 8
    with pytest.raises(ValueError, match="no dump file"):
        core.compare.source_from_dump(None, "output", 0)
