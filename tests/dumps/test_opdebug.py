"""OpDebug files (`"dump_debug": "on"`, issue #38): both record layouts read field by field against bytes packed
here with struct (an independent reference of docs/formats.md#opdebug-files), and every malformed record is a
DumpError naming the file and the field."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from dumpcmp.dumps.dump import TensorData, write_dump
from dumpcmp.dumps.opdebug import is_opdebug_name, old_opdebug_bytes, opdebug_bytes, parse_opdebug_bytes, read_opdebug
from dumpcmp.errors import DumpError


def _write(path, *records):
    write_dump(path, outputs=[TensorData(np.frombuffer(r, np.uint8), data_type="UINT8") for r in records])
    return str(path)


def test_current_layout_fields_as_packed_by_hand(tmp_path):
    # magic, version, valid, acc_type (1 = AIV), rsv, data_len = 11 uint64, then the AIV fields in order
    fields = [2, 3, 17, 0, 5, 6, 0x1000, 0x2000, 1, 9, 0x80]
    data = struct.pack("<6I", 0x5A5A5A5A, 7, 1, 1, 0, 88) + struct.pack("<11Q", *fields)
    path = _write(tmp_path / "Opdebug.Node_OpDebug.17.3.1700000000000001", data)
    [record] = read_opdebug(path)
    assert record.new_layout and record.version == 7 and not record.warnings
    [o] = record.overflows
    assert (o.kind, o.task_id, o.stream_id, o.context_id, o.thread_id, o.status) == ("AIV", 17, 3, 5, 6, 0x80)
    assert o.fields["pc_start"] == "0x1000" and o.fields["block_id"] == 9
    assert opdebug_bytes("AIV", status=0x80, task_id=17, stream_id=3, context_id=5, thread_id=6, version=7,
                         model_id=2, pc_start=0x1000, para_base=0x2000, core_id=1, block_id=9) == data


def test_old_layout_reports_each_status_set(tmp_path):
    data = bytearray(2048)
    for at in (0, 128, 256):  # model_id, stream_id, task_id, task_type, pc_start, para_base
        struct.pack_into("<6Q", data, at, 1, 4, 12, 0, 0xABC, 0xDEF)
    struct.pack_into("<Q", data, 512, 3)  # DHA Atomic Add status
    struct.pack_into("<3Q", data, 1024, 0x55, 2, 9)  # AI Core kernel_code, block_idx, status
    path = _write(tmp_path / "Opdebug.Node_OpDebug.12.4.1700000000000001", bytes(data))
    [record] = read_opdebug(path)
    assert not record.new_layout
    assert [(o.kind, o.task_id, o.stream_id, o.status) for o in record.overflows] == [
        ("DHA Atomic Add", 12, 4, 3), ("AI Core", 12, 4, 9)]
    assert record.overflows[1].fields["kernel_code"] == "0x55"
    assert old_opdebug_bytes({"DHA Atomic Add": 3, "AI Core": 9}, task_id=12, stream_id=4)[512:520] == data[512:520]


def test_warnings_do_not_stop_reading():
    record = parse_opdebug_bytes(opdebug_bytes("SDMA", status=1, valid=0, data_len=8), "x")
    assert [w.split(": ", 1)[1] for w in record.warnings] == [
        "OpDebug field valid is 0, not 1", "OpDebug field data_len is 8, not 80 for SDMA"]


@pytest.mark.parametrize("cut", range(0, 24 + 88, 7))
def test_truncated_record_names_file_and_field(tmp_path, cut):
    path = _write(tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000001", opdebug_bytes(status=1)[:cut])
    with pytest.raises(DumpError) as error:
        read_opdebug(path)
    message = str(error.value)
    assert message.startswith(path) and "\n" not in message
    assert "field" in message or "not an OpDebug record" in message


@pytest.mark.parametrize("data, field", [
    (opdebug_bytes(status=0), "status is 0"),
    (struct.pack("<6I", 0x5A5A5A5A, 0, 1, 9, 0, 88) + bytes(88), "acc_type is 9"),
    (old_opdebug_bytes({}), "status of AI Core, DHA Atomic Add and L2 Atomic Add is 0"),
    (bytes(2047), "size is 2047 bytes"),
])
def test_wrong_fields(tmp_path, data, field):
    path = _write(tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000001", data)
    with pytest.raises(DumpError, match=field):
        read_opdebug(path)


def test_no_output_and_names(tmp_path):
    path = tmp_path / "Opdebug.Node_OpDebug.1.1.1700000000000001"
    write_dump(path, inputs=[np.zeros(3, np.float16)])
    with pytest.raises(DumpError, match="without outputs"):
        read_opdebug(path)
    assert is_opdebug_name(path.name) and is_opdebug_name("Opdebug.Node_OpDebug.0.3.1673383728094391.4.1.0.0")
    assert not is_opdebug_name("Add.Node_OpDebug.1.1.1700000000000001") and not is_opdebug_name("x.npy")
