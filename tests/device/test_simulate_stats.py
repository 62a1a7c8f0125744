"""`dumpcmp simulate` with an acl.json saying `"dump_data": "stats"` writes one statistic.csv per sample folder, in
the place a runtime puts it, instead of the tensor dumps: a row per tensor the dump mode selects, whose statistics
equal NumPy's over the tensors the same simulation dumps in tensor mode (an independent reference), published
whole with the graph JSON."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.device.acljson import new_acl_json, write_acl_json  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.dumps.layout import convert, groups_of, plain_target  # noqa: E402
from dumpcmp.dumps.stats import read_stats  # noqa: E402
from dumpcmp.errors import DumpcmpError  # noqa: E402
from helpers.locate_nets import build_net, net_input  # noqa: E402
from helpers.statsfile import numpy_stats  # noqa: E402


def _acl(path, dump_path, data, mode="all", layers=None):
    models = [("net", layers)] if layers else ["net"]
    return write_acl_json(new_acl_json(models, dump_path=str(dump_path), dump_mode=mode, dump_data=data), path)


def _close(a, b):
    if a is None or b is None:
        return a is b
    if math.isnan(b):
        return math.isnan(a)
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _plain(t):
    """A dump tensor's values without the device layout's padding (statistics never count padding)."""
    if t.format in ("ND", "NCHW"):
        return t.array()
    return convert(t.array(), t.format, plain_target(t.format, ndim=len(t.original_shape)),
                   original_shape=t.original_shape, groups=groups_of(t))


def test_stats_acl_json_writes_statistic_csv_equal_to_numpy_over_the_tensor_dump(tmp_path):
    model = build_net(tmp_path / "net.onnx")
    samples = [{"x": net_input(seed=k)} for k in range(2)]
    (tmp_path / "s").mkdir()
    (tmp_path / "t").mkdir()
    stats = simulate(model, acl_json=_acl(tmp_path / "s.json", tmp_path / "s", "stats"), samples=samples)
    tensors = simulate(model, acl_json=_acl(tmp_path / "t.json", tmp_path / "t", "tensor"), samples=samples)
    assert stats.data == "stats" and tensors.data == "tensor"
    assert [f.name for f in stats.files] == ["statistic.csv", "statistic.csv"]
    for k, folder in enumerate(stats.sample_dirs):
        assert sorted(os.listdir(folder)) == ["statistic.csv"]  # no tensor dump beside it
        assert stats.files[k] == folder / "statistic.csv"
    assert stats.json_path.is_file()
    assert sorted(os.listdir(tmp_path / "s")) == sorted([stats.run_dir.name, "model.json"])  # nothing left over

    for k in range(2):
        records = read_stats(stats.sample_dirs[k] / "statistic.csv").records
        by_tensor = {(r.op_name, r.kind, r.slot): r for r in records}
        assert len(by_tensor) == len(records)
        expected = {}
        order = []
        for f in sorted(tensors.sample_dirs[k].iterdir()):
            d = open_dump(f)
            for t in d.inputs + d.outputs:
                expected[(d.op_name, t.kind, t.index)] = (t, numpy_stats(_plain(t)))
            order.append(d.op_name)
        assert by_tensor.keys() == expected.keys()
        # the rows come in execution order, each op with its task id, as its dump file is named
        assert list(dict.fromkeys(r.op_name for r in records)) == [
            n for n in stats.dumped_ops if n in set(order)]
        for key, (t, ref) in expected.items():
            r = by_tensor[key]
            for name in ("max", "min", "mean", "l2norm"):
                assert _close(getattr(r, name), ref[name]), (key, name, getattr(r, name), ref[name])
            for name in ("count", "nan_count", "neg_inf_count", "pos_inf_count", "zero_count"):
                assert getattr(r, name) == ref[name], (key, name)
            assert r.data_type == t.data_type and r.format == t.format
            assert r.shape == tuple(t.shape if t.original_shape is None else t.original_shape), (key, t)
            assert r.data_size == t.size  # the bytes the tensor dump holds for it


def test_stats_with_layers_and_output_mode_rows_only_for_what_is_selected(tmp_path):
    model = build_net(tmp_path / "net.onnx", attention=False)
    (tmp_path / "s").mkdir()
    full = simulate(model, tmp_path / "probe", samples=[{"x": net_input()}])
    layers = full.dumped_ops[2:4]
    r = simulate(model, acl_json=_acl(tmp_path / "s.json", tmp_path / "s", "stats", "output", layers),
                 samples=[{"x": net_input()}])
    records = read_stats(r.files[0]).records
    assert [(x.op_name, x.kind) for x in records] == [(n, "output") for n in layers]


def test_stats_simulation_cut_short_leaves_nothing(tmp_path, monkeypatch):
    import dumpcmp.device.simulate.run as run

    model = build_net(tmp_path / "net.onnx", attention=False)
    (tmp_path / "s").mkdir()
    acl = _acl(tmp_path / "s.json", tmp_path / "s", "stats")

    def broken(self, *a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run._Writer, "add_stats", broken)
    with pytest.raises(DumpcmpError, match="No space left"):
        simulate(model, acl_json=acl, samples=[{"x": net_input()}])
    assert os.listdir(tmp_path / "s") == []


def test_cli_simulate_stats_then_compare_stats_passes(tmp_path, capsys):
    from dumpcmp.cli.dispatch import main

    model = build_net(tmp_path / "net.onnx")
    np.save(tmp_path / "x.npy", net_input())
    (tmp_path / "s").mkdir()
    acl = _acl(tmp_path / "s.json", tmp_path / "s", "stats")
    assert main(["simulate", str(model), "-i", str(tmp_path / "x.npy"), "--acl-json", str(acl)]) == 0
    assert "statistics files" in capsys.readouterr().out
    assert main(["golden", str(model), "-i", str(tmp_path / "x.npy"), "-o", str(tmp_path / "gt")]) == 0
    capsys.readouterr()
    assert main(["compare", "-l", str(tmp_path / "s"), "-r", str(tmp_path / "gt"), "-f",
                 str(tmp_path / "s" / "model.json"), "-o", str(tmp_path / "r.csv")]) == 0
    out = capsys.readouterr().out
    assert " 0 error" in out and "no tensor is worse than pass" in out
