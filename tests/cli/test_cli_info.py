"""`dumpcmp info`: text and JSON output for dumps, .npy files and trees; exit codes for bad input."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import dumpcmp
from dumpcmp.cli import main
from dumpcmp.dumps.dump import TensorData

T0 = 1700000000000000


def write_conv(folder, name=f"Conv2D.conv1.3.9.{T0}"):
    os.makedirs(folder, exist_ok=True)
    return dumpcmp.write_dump(
        os.path.join(folder, name), op_name="resnet/conv1",
        inputs=[TensorData(np.zeros((1, 1, 2, 2, 16), np.float16), format="NC1HWC0", original_shape=(1, 3, 2, 2)),
                TensorData(np.ones((4, 1, 16, 16), np.float16), format="FRACTAL_Z", sub_format=2)],
        outputs=[TensorData(np.arange(6, dtype=np.float32).reshape(2, 3))],
        workspaces=[b"\0" * 32])


def run_json(capsys, *args):
    code = main(["info", "--json", *map(str, args)])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_one_dump_text(tmp_path, capsys):
    path = write_conv(tmp_path)
    assert main(["info", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Conv2D.conv1.3.9.{T0}"
    assert out[1].startswith(f"  op resnet/conv1; type Conv2D, task 3, stream 9, timestamp {T0}; version 2.0, ")
    assert out[1].endswith(f"{os.path.getsize(path)} bytes")
    assert out[2].split() == ["input.0", "FLOAT16", "NC1HWC0", "shape", "[1,1,2,2,16]", "original", "[1,3,2,2]",
                              str(2 * 64), "bytes"]
    assert out[3].split() == ["input.1", "FLOAT16", "FRACTAL_Z", "sub_format", "2", "shape", "[4,1,16,16]",
                              "original", "-", str(2 * 1024), "bytes"]
    assert out[4].split() == ["output.0", "FLOAT", "ND", "shape", "[2,3]", "original", "-", "24", "bytes"]
    assert out[5].split() == ["workspace.0", "32", "bytes"]


def test_one_dump_json_matches_the_reader(tmp_path, capsys):
    path = write_conv(tmp_path)
    code, doc, err = run_json(capsys, path)
    assert code == 0 and doc["ok"] is True and err == ""
    [item] = doc["paths"]
    assert item["kind"] == "dump" and item["path"] == path
    f = item["file"]
    dump = dumpcmp.open_dump(path)
    assert (f["op_name"], f["op_type"], f["version"], f["legacy"], f["file_size"], f["dump_time"]) == \
        (dump.op_name, "Conv2D", dump.version, dump.legacy, os.path.getsize(path), dump.dump_time)
    assert f["name"] == {"scheme": "device", "op_type": "Conv2D", "op_name": "conv1", "task_id": 3, "stream_id": 9,
                         "timestamp": T0, "dump_number": None, "ffts": None}
    expected = [{"kind": t.kind, "index": t.index, "data_type": t.data_type, "format": t.format,
                 "shape": list(t.shape),
                 "original_shape": None if t.original_shape is None else list(t.original_shape),
                 "sub_format": t.sub_format, "size": t.size} for t in dump.tensors()]
    assert f["tensors"] == expected
    assert [t["kind"] for t in f["tensors"]] == ["input", "input", "output", "workspace"]


def test_dump_with_a_name_of_no_scheme_is_still_read(tmp_path, capsys):
    path = write_conv(tmp_path, "renamed_by_hand.bin")
    code, doc, _ = run_json(capsys, path)
    assert code == 0
    f = doc["paths"][0]["file"]
    assert f["name"] is None and f["op_type"] is None and f["op_name"] == "resnet/conv1"
    assert main(["info", path]) == 0
    assert "file name fits no naming scheme" in capsys.readouterr().out


def test_npy_file(tmp_path, capsys):
    path = tmp_path / "conv1_Relu.0.1589195081588018.npy"
    np.save(path, np.asfortranarray(np.zeros((3, 4), np.float16)))
    code, doc, _ = run_json(capsys, path)
    assert code == 0
    f = doc["paths"][0]["file"]
    assert (f["type"], f["dtype"], f["shape"], f["bytes"], f["fortran_order"]) == ("npy", "float16", [3, 4], 24, True)
    assert f["name"] == {"scheme": "npy", "op_name": "conv1_Relu", "output_index": 0, "timestamp": 1589195081588018,
                         "extension": "npy"}
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert "float16 shape [3,4], Fortran order  24 bytes" in out


def make_tree(root):
    run0 = os.path.join(root, "20240101120000", "0", "resnet50", "1", "0")
    run1 = os.path.join(root, "20240101120000", "0", "resnet50", "1", "1")
    write_conv(run0, f"Conv2D.conv1.3.9.{T0}")
    dumpcmp.write_dump(os.path.join(run0, f"Relu.relu1.4.9.{T0 + 5}"), op_name="relu1",
                       outputs=[np.zeros(4, np.float32)])
    write_conv(run1, f"Conv2D.conv1.3.9.{T0 + 100}")
    gt = os.path.join(root, "gt")
    os.makedirs(gt)
    np.save(os.path.join(gt, "conv1.0.1589195081588018.npy"), np.zeros((2, 3), np.float32))
    np.save(os.path.join(gt, "conv1.0.1589195081588999.npy"), np.ones((2, 3), np.float32))
    return run0, run1, gt


def test_tree_json_groups_and_summary(tmp_path, capsys):
    run0, run1, gt = make_tree(tmp_path)
    code, doc, err = run_json(capsys, tmp_path)
    assert code == 0 and doc["ok"] and err == ""
    [tree] = doc["paths"]
    assert tree["kind"] == "tree" and tree["root"] == str(tmp_path)
    assert tree["summary"] == {"runs": 2, "dumps": 3, "ground_truth": 1, "converted": 0, "stats": 0,
                               "skipped": 0}
    assert [r["key"] for r in tree["runs"]] == [
        {"layout": "model", "folder": run, "time": "20240101120000", "device_id": 0, "model_name": "resnet50",
         "model_id": 1, "data_index": i} for i, run in enumerate((run0, run1))]
    assert [[d["file_name"] for d in r["dumps"]] for r in tree["runs"]] == [
        [f"Conv2D.conv1.3.9.{T0}", f"Relu.relu1.4.9.{T0 + 5}"], [f"Conv2D.conv1.3.9.{T0 + 100}"]]
    [g] = tree["ground_truth"]
    assert g["file_name"] == "conv1.0.1589195081588999.npy" and g["shape"] == [2, 3]
    assert tree["superseded"] == [os.path.join(gt, "conv1.0.1589195081588018.npy")]


def test_tree_text(tmp_path, capsys):
    make_tree(tmp_path)
    assert main(["info", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{tmp_path}: 2 runs, 3 dumps, 1 ground-truth file, 0 converted, 0 skipped"
    assert out[1] == "run time 20240101120000 / device 0 / model resnet50 / model_id 1 / iteration 0: 2 dumps"
    assert out[2] == f"  Conv2D.conv1.3.9.{T0}"
    assert "run time 20240101120000 / device 0 / model resnet50 / model_id 1 / iteration 1: 1 dump" in out
    assert "ground truth: 1 file" in out


def test_tree_with_bad_files_lists_good_ones_and_reports_bad_on_stderr(tmp_path, capsys):
    run0, _, gt = make_tree(tmp_path)
    bad = os.path.join(run0, f"Add.add.5.9.{T0 + 9}")
    with open(bad, "wb") as handle:
        handle.write(b"\x08" + b"\0" * 7 + b"garbage!")
    with open(os.path.join(gt, "relu.0.1589195081588018.npy"), "wb") as handle:
        handle.write(b"not numpy")
    with open(os.path.join(run0, "notes.txt"), "w") as handle:
        handle.write("hello")
    code, doc, err = run_json(capsys, tmp_path)
    assert code == 0 and doc["ok"]
    tree = doc["paths"][0]
    assert tree["summary"]["dumps"] == 3 and tree["summary"]["skipped"] == 3
    skipped = {os.path.basename(s["path"]): s["reason"] for s in tree["skipped"]}
    assert set(skipped) == {os.path.basename(bad), "relu.0.1589195081588018.npy", "notes.txt"}
    assert "not a .npy file" in skipped["relu.0.1589195081588018.npy"]
    assert "naming scheme" in skipped["notes.txt"]
    assert {os.path.dirname(s["path"]) for s in tree["skipped"]} == {run0, gt}
    for s in tree["skipped"]:
        assert f"dumpcmp: skipped {s['path']}: {s['reason']}\n" in err


def test_missing_path_exits_2_but_prints_the_rest(tmp_path, capsys):
    path = write_conv(tmp_path)
    assert main(["info", str(tmp_path / "nope"), path]) == 2
    captured = capsys.readouterr()
    assert f"Conv2D.conv1.3.9.{T0}" in captured.out
    assert f"dumpcmp: error: {tmp_path / 'nope'}: no such file or directory" in captured.err
    code, doc, _ = run_json(capsys, tmp_path / "nope", path)
    assert code == 2 and doc["ok"] is False
    assert [i["kind"] for i in doc["paths"]] == ["error", "dump"]
    assert doc["paths"][0]["error"].endswith("no such file or directory")


@pytest.mark.parametrize("corrupt", ["truncate", "empty", "garbage"])
def test_a_named_bad_dump_exits_2_naming_the_file(tmp_path, capsys, corrupt):
    path = write_conv(tmp_path)
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write({"truncate": data[:-5], "empty": b"", "garbage": b"\xff" * 64}[corrupt])
    assert main(["info", path]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"dumpcmp: error: {path}: ")
    assert captured.err.count("\n") == 1


def test_a_named_bad_npy_exits_2_naming_the_file(tmp_path, capsys):
    path = tmp_path / "x.0.1589195081588018.npy"
    np.save(path, np.zeros(100, np.float64))
    path.write_bytes(path.read_bytes()[:200])
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"dumpcmp: error: {path}: its header says float64 [100] (800 bytes) "
                          "but the file holds 72 bytes")


def test_folder_with_no_usable_file_exits_2(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["info", str(empty)]) == 2
    assert capsys.readouterr().err == f"dumpcmp: error: {empty}: no usable dump or .npy file in this folder " \
                                      "(it is empty)\n"
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.txt").write_text("x")
    (junk / f"Add.add.1.{T0}").write_bytes(b"")
    code, doc, err = run_json(capsys, junk)
    assert code == 2 and not doc["ok"]
    [item] = doc["paths"]
    assert item["kind"] == "error" and "(2 skipped)" in item["error"]
    assert sorted(os.path.basename(s["path"]) for s in item["skipped"]) == ["Add.add.1.1700000000000000", "a.txt"]
    assert err.count("dumpcmp: skipped ") == 2


def test_hashed_dump_shows_its_real_name(tmp_path, capsys):
    from dumpcmp.dumps import naming
    long_name = f"MatMul.{'very_long_' * 30}.1.2.{T0}"
    short = naming.safe_file_name(long_name, tmp_path)
    write_conv(tmp_path, short)
    code, doc, _ = run_json(capsys, tmp_path / short)
    assert code == 0
    f = doc["paths"][0]["file"]
    assert f["file_name"] == short and f["op_type"] == "MatMul" and f["name"]["op_name"] == "very_long_" * 30


def test_info_needs_a_path(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["info"])
    assert exit_.value.code == 2


def test_hashed_dump_in_a_tree_shows_its_real_name(tmp_path, capsys):
    from dumpcmp.dumps import naming
    long_name = f"MatMul.{'very_long_' * 30}.1.2.{T0}"
    short = naming.safe_file_name(long_name, tmp_path)
    write_conv(tmp_path, short)
    code, doc, err = run_json(capsys, tmp_path)
    assert code == 0 and err == ""
    [d] = doc["paths"][0]["runs"][0]["dumps"]
    assert d["file_name"] == short and d["op_type"] == "MatMul" and d["name"]["task_id"] == 1
