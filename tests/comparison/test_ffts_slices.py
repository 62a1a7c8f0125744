"""FFTS+ sliced dumps: a tensor cut into slices, written as the runtime writes them, comes back whole from the
comparison (dumps/ffts.py), auto and manual mode, with -ffts comparing manual slices one by one."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import dumpcmp
from dumpcmp.cli import main
from dumpcmp.dumps import ffts
from dumpcmp.dumps.dump import open_dumps
from dumpcmp.dumps.scan import scan

TS = 1700000000000500


def attr(mode: int, count: int, cuts: list, table: list | None = None) -> list[tuple[str, str]]:
    facts = {"threadMode": mode, "slice_instance_num": count, "outputCutList": cuts}
    if table is not None:
        facts["output_tensor_slice"] = table
    return [("_sgt_json_info", json.dumps(facts))]


def dims(shape, axis, lo, hi):
    return [{"lower": lo, "higher": hi} if d == axis else {"lower": 0, "higher": n} for d, n in enumerate(shape)]


def write_auto(folder, op, full, axis, bounds, count=None, skip=()):
    folder.mkdir(parents=True, exist_ok=True)
    table = [[dims(full.shape, axis, lo, hi)] for lo, hi in bounds]
    for t, (lo, hi) in enumerate(bounds):
        if t in skip:
            continue
        part = np.ascontiguousarray(np.take(full, range(lo, hi), axis=axis))
        dumpcmp.write_dump(folder / f"Conv2D.{op}.3.{TS}.4.2.{t}.0", op_name=op, inputs=[part], outputs=[part],
                           dump_time=TS, attrs=attr(1, count or len(bounds), [[1 if d != axis else len(bounds)
                                                                            for d in range(full.ndim)]], table))


def write_manual(folder, op, full, axis, parts, skip=()):
    folder.mkdir(parents=True, exist_ok=True)
    pieces = np.array_split(full, parts, axis=axis)
    for k, part in enumerate(pieces):
        if k in skip:
            continue
        dumpcmp.write_dump(folder / f"Relu.{op}_lxslice{k}.4.{TS}.4.3.{k}.0", op_name=f"{op}_lxslice{k}",
                           inputs=[part], outputs=[np.ascontiguousarray(part)], dump_time=TS,
                           attrs=attr(0, parts, [[parts if d == axis else 1 for d in range(full.ndim)]]))


def merged(folder, per_slice=False):
    group = next(iter(scan(folder)))
    plain, groups = ffts.group_slices(group.entries, per_slice)
    return plain, [(g, ffts.merge(g, open_dumps([e.path for e in g.entries]))) for g in groups]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_auto_slices_merge_back_equal(tmp_path, dtype, axis):
    full = (np.arange(4 * 6 * 5) % 97).reshape(4, 6, 5).astype(dtype)
    n = full.shape[axis]
    bounds = [(0, 1), (1, n - 1), (n - 1, n)]
    write_auto(tmp_path, "conv", full, axis, bounds)
    plain, [(group, dump)] = merged(tmp_path)
    assert plain == [] and group.op_name == "conv" and group.mode == "auto" and dump.missing == ""
    out = dump.outputs[0]
    assert out.array().dtype == full.dtype and np.array_equal(out.array(), full)
    assert np.array_equal(dump.inputs[0].array(), full.take(range(0, 1), axis=axis))  # the first slice's inputs


@pytest.mark.parametrize("axis", [0, 1])
def test_manual_slices_merge_back_equal(tmp_path, axis):
    full = np.random.default_rng(1).normal(size=(6, 4)).astype(np.float32)
    write_manual(tmp_path, "relu", full, axis, 3)
    _, [(group, dump)] = merged(tmp_path)
    assert group.op_name == "relu" and group.mode == "manual"
    assert np.array_equal(dump.outputs[0].array(), full)
    plain, groups = merged(tmp_path, per_slice=True)
    assert groups == [] and sorted(e.name.op_name for e in plain) == ["relu_lxslice0", "relu_lxslice1",
                                                                       "relu_lxslice2"]


def test_more_than_ten_manual_slices_in_number_order(tmp_path):
    full = np.arange(12 * 2, dtype=np.float32).reshape(12, 2)
    write_manual(tmp_path, "relu", full, 0, 12)
    _, [(_, dump)] = merged(tmp_path)
    assert np.array_equal(dump.outputs[0].array(), full)


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return {r["TensorIndex"]: r for r in csv.DictReader(f)}


def test_compare_merges_slices_against_the_whole_tensor(tmp_path):
    """A sliced op against the same op dumped whole: equal, once merged."""
    full = np.random.default_rng(2).normal(size=(2, 8, 3)).astype(np.float32)
    write_auto(tmp_path / "left", "conv", full, 1, [(0, 3), (3, 5), (5, 8)])
    write_manual(tmp_path / "left", "relu", full, 0, 2)
    (tmp_path / "right").mkdir()
    for op, typ in (("conv", "Conv2D"), ("relu", "Relu")):
        dumpcmp.write_dump(tmp_path / "right" / f"{typ}.{op}.3.{TS}", op_name=op, inputs=[full[:1] if op == "relu"
                           else full[:, :3]], outputs=[full], dump_time=TS)
    out = tmp_path / "r.csv"
    assert main(["compare", "-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"), "-o", str(out),
                 "--quiet"]) == 0
    got = rows(out)
    for op in ("conv", "relu"):
        r = got[f"{op}:output:0"]
        assert (r["CosineSimilarity"], r["MaxAbsoluteError"], r["Shape"]) == ("1.000000", "0.000000", "[2,8,3]")


def test_missing_slice_is_a_warning_and_the_failed_row_says_why(tmp_path, capsys):
    full = np.random.default_rng(3).normal(size=(2, 6)).astype(np.float32)
    write_auto(tmp_path / "left", "conv", full, 1, [(0, 2), (2, 4), (4, 6)], skip=(2,))
    write_auto(tmp_path / "right", "conv", full, 1, [(0, 2), (2, 4), (4, 6)])
    out = tmp_path / "r.csv"
    assert main(["compare", "-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "conv: FFTS+ slices missing: 2 files for slice_instance_num 3" in text
    reason = rows(out)["conv:output:0"]["CompareFailReason"]
    assert reason.startswith(ffts.MISSING_SLICES + ",") and "[2, 4] vs ND [2, 6]" in reason


def test_ffts_flag_spelt_both_ways_compares_manual_slices_one_by_one(tmp_path):
    full = np.random.default_rng(4).normal(size=(4, 3)).astype(np.float32)
    for side in ("left", "right"):
        write_manual(tmp_path / side, "relu", full, 0, 2)
    for flag in ("--ffts", "-ffts"):
        out = tmp_path / f"r{flag}.csv"
        assert main(["compare", "-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"), "-o", str(out),
                     "--quiet", flag]) == 0
        assert sorted(rows(out)) == ["relu_lxslice0:input:0", "relu_lxslice0:output:0", "relu_lxslice1:input:0",
                                     "relu_lxslice1:output:0"]
    out = tmp_path / "orig"
    assert main(["compare", "-m", str(tmp_path / "left"), "-g", str(tmp_path / "right"), "-out", str(out),
                 "-ffts", "--quiet"]) == 0
    [result] = list(out.glob("result_*.csv"))
    assert "relu_lxslice1:output:0" in rows(result)


def test_single_op_merges_the_slices(tmp_path):
    """-d OP on a sliced op: every element of the merged tensor, against the whole one."""
    full = np.random.default_rng(5).normal(size=(4, 6)).astype(np.float32)
    write_auto(tmp_path / "left", "conv", full, 1, [(0, 2), (2, 6)])
    (tmp_path / "right").mkdir()
    dumpcmp.write_dump(tmp_path / "right" / f"Conv2D.conv.3.{TS}", op_name="conv", inputs=[full[:, :2]],
                       outputs=[full], dump_time=TS)
    out = tmp_path / "detail"
    assert main(["compare", "-l", str(tmp_path / "left"), "-r", str(tmp_path / "right"), "-d", "conv", "-o",
                 str(out), "--quiet"]) == 0
    assert (out / "conv_output_0_summary.txt").read_text().startswith("TotalCount:24\n")


def test_sliced_dumps_are_not_sent_to_a_cluster(tmp_path):
    """A cluster's tasks carry file paths, and slices are merged in this process: a run holding FFTS+ slices is
    refused with `client=` (one slice would have stood for the whole op), before any worker is asked."""
    from dumpcmp.errors import DumpcmpError

    full = np.random.default_rng(3).normal(size=(2, 8, 3)).astype(np.float32)
    write_auto(tmp_path / "left", "conv", full, 1, [(0, 3), (3, 8)])
    (tmp_path / "right").mkdir()
    dumpcmp.write_dump(tmp_path / "right" / f"Conv2D.conv.3.{TS}", op_name="conv", inputs=[full[:, :3]],
                       outputs=[full], dump_time=TS)

    class NoCluster:  # never reached: the refusal comes first
        def __getattr__(self, name):
            raise AssertionError(f"the cluster was used: {name}")

    with pytest.raises(DumpcmpError, match="FFTS\\+ sliced dumps are merged and compared on this machine"):
        dumpcmp.compare(tmp_path / "left", tmp_path / "right", client=NoCluster())
