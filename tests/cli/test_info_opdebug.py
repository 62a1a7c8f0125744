"""`dumpcmp info` lists OpDebug files with their overflow records (issue #38), and says what is wrong with a bad one
without failing the listing."""

from __future__ import annotations

import json

import numpy as np

from dumpcmp.cli import main
from dumpcmp.dumps.dump import TensorData, write_dump
from dumpcmp.dumps.opdebug import old_opdebug_bytes, opdebug_bytes


def _debug(path, record):
    write_dump(path, outputs=[TensorData(np.frombuffer(record, np.uint8), data_type="UINT8")])


def test_info_lists_overflow_records(tmp_path, capsys):
    _debug(tmp_path / "Opdebug.Node_OpDebug.5.1.1700000000000001",
           opdebug_bytes("AIV", status=0x40, task_id=5, stream_id=1, context_id=2, thread_id=0, pc_start=0xAB))
    _debug(tmp_path / "Opdebug.Node_OpDebug.6.1.1700000000000002", old_opdebug_bytes({"L2 Atomic Add": 2}, task_id=6))
    _debug(tmp_path / "Opdebug.Node_OpDebug.7.1.1700000000000003", opdebug_bytes(status=1)[:30])
    write_dump(tmp_path / "Add.add.5.1.1700000000000000", outputs=[np.ones(2, np.float16)])
    assert main(["info", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "overflow (current OpDebug record): AIV task 5 stream 1 status 64" in out
    assert "overflow (old OpDebug record): L2 Atomic Add task 6 stream 0 status 2" in out
    assert "OpDebug output.0: truncated OpDebug record: field model_id needs bytes 24..32" in out
    assert main(["info", "--json", str(tmp_path)]) == 0
    [tree] = json.loads(capsys.readouterr().out)["paths"]
    dumps = {d["file_name"]: d for run in tree["runs"] for d in run["dumps"]}
    [record] = dumps["Opdebug.Node_OpDebug.5.1.1700000000000001"]["overflow"]
    assert record["layout"] == "current" and record["overflows"][0]["pc_start"] == "0xab"
    assert record["overflows"][0]["context_id"] == 2 and record["overflows"][0]["type"] == "AIV"
    assert "overflow" not in dumps["Add.add.5.1.1700000000000000"]
