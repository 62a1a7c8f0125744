"""`dumpcmp simulate` with an acl.json saying `"dump_debug": "on"` (issue #38) dumps only the ops whose float16
outputs overflow (inf or NaN), inputs and outputs, each followed by its OpDebug file; the reference is the tensor
dump of the same simulation (mode all), read with NumPy; `dumpcmp overflow` then reports them."""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.device.acljson import new_acl_json, write_acl_json  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402
from dumpcmp.dumps.naming import parse_device_dump_name  # noqa: E402
from dumpcmp.dumps.opdebug import read_opdebug  # noqa: E402
from helpers.locate_nets import build_net, net_input  # noqa: E402


def test_dump_debug_writes_the_overflowing_ops_and_their_opdebug_files(tmp_path, capsys):
    model = build_net(tmp_path / "net.onnx", attention=False)
    sample = [{"x": net_input(seed=1) * np.float32(1e5)}]  # large enough for fp16 to overflow inside the net
    (tmp_path / "all").mkdir()
    reference = simulate(model, acl_json=write_acl_json(new_acl_json(["net"], dump_path=str(tmp_path / "all"),
                                                                     dump_mode="all"), tmp_path / "all.json"),
                         samples=sample)
    overflowing = {}
    for f in reference.files:
        d = open_dump(f)
        if any(t.data_type == "FLOAT16" and not np.isfinite(t.array()).all() for t in d.outputs):
            overflowing[d.op_name] = parse_device_dump_name(f.name).task_id
    assert overflowing, "the sample must make some fp16 output overflow"

    (tmp_path / "dbg").mkdir()
    debug = simulate(model, acl_json=write_acl_json(new_acl_json([], dump_path=str(tmp_path / "dbg"),
                                                                 dump_debug="on"), tmp_path / "dbg.json"),
                     samples=sample)
    assert debug.data == "debug"
    dumps = [f for f in debug.files if not f.name.startswith("Opdebug.")]
    opdebug = [f for f in debug.files if f.name.startswith("Opdebug.")]
    assert {open_dump(f).op_name: parse_device_dump_name(f.name).task_id for f in dumps} == overflowing
    assert len(opdebug) == len(dumps)
    for dump, record_file in zip(dumps, opdebug):
        [record] = read_opdebug(record_file)
        assert record.overflows[0].task_id == parse_device_dump_name(dump.name).task_id
        assert parse_device_dump_name(record_file.name).timestamp > parse_device_dump_name(dump.name).timestamp
    assert sorted(os.listdir(debug.sample_dirs[0])) == sorted(f.name for f in debug.files)

    out = tmp_path / "out"
    out.mkdir()
    assert main(["overflow", str(debug.run_dir), "-o", str(out), "-n", str(len(opdebug)), "--quiet"]) == 0
    [summary] = out.glob("overflow_summary_*.txt")
    text = summary.read_text()
    assert text.count("[AIC][TaskId:") == len(opdebug) and "Can't find" not in capsys.readouterr().err
    first = open_dump(dumps[0])
    assert f"] {first.op_name}\n" in text and ("inf" in text or "nan" in text)
