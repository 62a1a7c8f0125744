"""Scanning dump trees: every layout of the spec, execution order, selection, ground truth newest-wins, hashed
names through mapping.csv, and the reasons files are skipped."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dumpcmp
from dumpcmp.dumps import naming
from dumpcmp.errors import DumpError, NotFoundError
from dumpcmp.dumps.ground_truth import dtype_name, open_npy, plain_npy
from dumpcmp.dumps.scan import FLAT, MODEL, SINGLE_OP, scan, scan_ground_truth

T0 = 1700000000000000


def touch(folder, name, data=b""):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def write(folder, file_name, op_name, value=1.0):
    """A real little dump (one fp16 input, one fp32 output) named `file_name`."""
    os.makedirs(folder, exist_ok=True)
    return dumpcmp.write_dump(os.path.join(folder, file_name), op_name=op_name,
                              inputs=[np.full((2, 3), value, np.float16)],
                              outputs=[np.full((3,), value, np.float32)])


def model_tree(root, devices=(0, 1), iterations=(0, 1), model="resnet50", time="20240101120000"):
    """Three ops per run, written in an order that is not execution order; task ids deliberately not
    increasing with time."""
    ops = [("Relu", "relu1", 9, 20), ("Conv2D", "conv1", 5, 10), ("Add", "add1", 1, 30)]
    for d in devices:
        for it in iterations:
            folder = os.path.join(root, time, str(d), model, "1", str(it))
            for op_type, op_name, task, dt in ops:
                touch(folder, f"{op_type}.{op_name}.{task}.{d}.{T0 + 1000 * it + dt}")
    return ops


def test_model_layout_runs_in_execution_order(tmp_path):
    model_tree(tmp_path)
    index = scan(tmp_path)
    assert len(index) == 4 and index.dump_count == 12 and not index.skipped
    keys = [(g.key.layout, g.key.time, g.key.device_id, g.key.model_name, g.key.model_id, g.key.data_index)
            for g in index]
    assert keys == [(MODEL, "20240101120000", d, "resnet50", 1, it) for d in (0, 1) for it in (0, 1)]
    for group in index:
        assert [e.op_name for e in group] == ["conv1", "relu1", "add1"]
        ts = [e.timestamp for e in group]
        assert ts == sorted(ts)
        assert {e.stream_id for e in group} == {group.key.device_id}
        assert all(os.path.dirname(e.path) == group.key.folder for e in group)
    entry = index.groups[0].entries[0]
    assert (entry.op_type, entry.op_name, entry.task_id, entry.dump_number, entry.ffts) == \
        ("Conv2D", "conv1", 5, None, None)
    assert not entry.hashed


def test_any_level_of_the_tree_gives_the_same_keys(tmp_path):
    model_tree(tmp_path)
    whole = {g.key: [e.path for e in g] for g in scan(tmp_path)}
    for sub in ("20240101120000", "20240101120000/1", "20240101120000/1/resnet50/1/0"):
        part = {g.key: [e.path for e in g] for g in scan(tmp_path / sub)}
        assert part and all(whole[k] == v for k, v in part.items())
    one = scan(tmp_path / "20240101120000/1/resnet50/1/0")
    assert [(g.key.device_id, g.key.data_index) for g in one] == [(1, 0)]


def test_select_and_find(tmp_path):
    model_tree(tmp_path)
    model_tree(tmp_path, devices=(0,), iterations=(0,), model="ResNet-50_v2")
    index = scan(tmp_path)
    run = index.select(device_id=1, model_name="resnet50", data_index=1)
    assert (run.key.device_id, run.key.data_index) == (1, 1)
    # the model name is matched as the runtime writes the folder: sanitised
    assert index.select(model_name="ResNet-50.v2").key.model_name == "ResNet-50_v2"
    assert len(index.find(model_name="resnet50")) == 4
    assert len(index.find(data_index=0)) == 3
    with pytest.raises(NotFoundError, match="4 dump runs match"):
        index.select(model_name="resnet50")
    with pytest.raises(NotFoundError, match="no dump run matches.*device 1"):
        index.select(device_id=7)
    assert sum(1 for _ in index.entries()) == index.dump_count == 15


def test_single_op_layout_time_device(tmp_path):
    folder = tmp_path / "20240202101010" / "3"
    touch(folder, f"Add.add.1.{T0 + 5}")
    touch(folder, f"Mul.mul.2.{T0 + 1}")
    [group] = scan(tmp_path).groups
    assert (group.key.layout, group.key.time, group.key.device_id, group.key.model_name) == \
        (SINGLE_OP, "20240202101010", 3, None)
    assert [e.op_name for e in group] == ["mul", "add"]


def test_single_op_layout_device_op_name_folders_merge_per_device(tmp_path):
    for dev in (0, 2):
        touch(tmp_path / str(dev) / "add_1", f"Add.add_1.1.{T0 + 20}")
        touch(tmp_path / str(dev) / "conv", f"Conv2D.conv.3.{T0 + 10}")
    index = scan(tmp_path)
    assert [(g.key.layout, g.key.device_id, g.key.folder) for g in index] == \
        [(SINGLE_OP, 0, str(tmp_path / "0")), (SINGLE_OP, 2, str(tmp_path / "2"))]
    assert [[e.op_name for e in g] for g in index] == [["conv", "add_1"], ["conv", "add_1"]]


def test_flat_folders_are_one_run_each(tmp_path):
    touch(tmp_path / "left", f"Add.add.1.{T0}")
    touch(tmp_path / "right", f"Add.add.1.{T0}")
    index = scan(tmp_path)
    assert [(g.key.layout, g.key.folder) for g in index] == \
        [(FLAT, str(tmp_path / "left")), (FLAT, str(tmp_path / "right"))]
    assert index.groups[0].key.describe() == f"folder {tmp_path / 'left'}"


def test_an_op_dumped_twice_newest_wins(tmp_path):
    touch(tmp_path, f"Conv2D.conv1.3.{T0 + 1}")
    touch(tmp_path, f"Conv2D.conv1.3.{T0 + 9}")
    touch(tmp_path, f"Relu.relu.4.{T0 + 5}")
    [group] = scan(tmp_path).groups
    assert [e.timestamp - T0 for e in group.by_op()["conv1"]] == [1, 9]
    newest = group.newest()
    assert list(newest) == ["relu", "conv1"]          # execution order of the chosen dumps
    assert newest["conv1"].timestamp == T0 + 9


def test_every_device_naming_scheme_is_indexed(tmp_path):
    names = [f"A.a.1.{T0}", f"B.b.2.7.{T0 + 1}", f"C.c.3.4.5.{T0 + 2}", f"D.d.4.5.{T0 + 3}.FFTSPLUS.1.2.0",
             f"E.e.6.{T0 + 4}.4.487.1.0"]
    for n in names:
        touch(tmp_path, n)
    [group] = scan(tmp_path).groups
    assert [e.file_name for e in group] == names
    assert [e.name for e in group] == [naming.parse_device_dump_name(n) for n in names]


def test_ffts_threads_of_one_op_keep_thread_order(tmp_path):
    # same timestamp and task: the thread id orders them
    for thread in (2, 0, 1):
        touch(tmp_path, f"Conv2D.conv.3.4.{T0}.4.10.{thread}.0")
    [group] = scan(tmp_path).groups
    assert [e.ffts.thread_id for e in group] == [0, 1, 2]


def test_ground_truth_newest_wins_and_superseded(tmp_path):
    for name in ("conv1.0.1589195081588018.npy", "conv1.0.1589195081588999.npy", "conv1.1.1589195081588000.npy",
                 "conv1_Relu.0.1589195081580000.npy"):
        np.save(tmp_path / name, np.zeros(2, np.float32))
    touch(tmp_path, "notes.txt")
    gt = scan_ground_truth(tmp_path)
    assert list(gt.files) == ["conv1.0", "conv1.1", "conv1_Relu.0"]
    assert gt.files["conv1.0"].timestamp == 1589195081588999
    assert [e.file_name for e in gt.superseded] == ["conv1.0.1589195081588018.npy"]
    # looked up by the op name the graph has, sanitised as the file name has it
    assert gt.get("conv1/Relu", 0).file_name == "conv1_Relu.0.1589195081580000.npy"
    assert gt.get("conv1", 2) is None
    assert "conv1.1" in gt and len(gt) == 3
    assert [(os.path.basename(s.path), "no naming scheme" in s.reason) for s in gt.skipped] == [("notes.txt", True)]
    assert gt.files["conv1.0"].open().shape == (2,)


def test_ground_truth_scan_reports_npu_dumps_as_not_ground_truth(tmp_path):
    np.save(tmp_path / "conv1.0.1589195081588018.npy", np.zeros(1))
    touch(tmp_path, f"Conv2D.conv1.3.{T0}")
    touch(tmp_path, f"Conv2D.conv1.3.{T0}.output.0.npy")
    gt = scan_ground_truth(tmp_path)
    assert len(gt) == 1
    assert sorted(s.reason for s in gt.skipped) == ["a converted NPU dump, not ground truth",
                                                     "an NPU dump, not ground truth"]


def test_pb_and_quant_dumps_are_framework_files(tmp_path):
    write(tmp_path, "conv1.0.1589195081588018.pb", "conv1")
    write(tmp_path, "conv1.0.1589195081588018.quant", "conv1")
    index = scan(tmp_path)
    assert index.dump_count == 0
    # both have the key conv1.0 and the same timestamp: the larger path wins, the same one every time
    assert index.ground_truth.files["conv1.0"].file_name == "conv1.0.1589195081588018.quant"
    assert index.ground_truth.files["conv1.0"].open().op_name == "conv1"


def test_converted_files(tmp_path):
    np.save(tmp_path / f"Conv2D.conv1.3.{T0}.output.0.1x3.npy", np.zeros((1, 3)))
    index = scan(tmp_path)
    [c] = index.converted
    assert c.name.shape == (1, 3) and c.name.device.op_name == "conv1"
    assert c.open().shape == (1, 3)
    assert index.file_count == 1


def test_hashed_names_resolve_through_mapping_csv(tmp_path):
    long_name = f"BatchMatMul.{'layer_' * 50}attn.7.3.{T0}"
    short = naming.safe_file_name(long_name, tmp_path)
    write(tmp_path, short, "layer_attn")
    touch(tmp_path, f"Add.add.1.{T0 + 5}")
    index = scan(tmp_path, read_headers=True)
    [group] = index.groups
    [hashed] = group.entries
    assert hashed.file_name == short and hashed.hashed and hashed.op_type == "BatchMatMul"
    assert hashed.name.build() == long_name and hashed.dump.op_name == "layer_attn"
    assert [e.hashed for e in scan(tmp_path).groups[0]] == [True, False]   # before headers are read
    # the empty Add file is a name-valid dump that does not open
    assert [(os.path.basename(s.path), "empty file" in s.reason) for s in index.skipped] == [(f"Add.add.1.{T0 + 5}",
                                                                                           True)]
    # mapping.csv itself is bookkeeping, not a skipped file
    assert all(not s.path.endswith(naming.MAPPING_FILE) for s in index.skipped)


def test_hashed_ground_truth_resolves_too(tmp_path):
    long_name = f"{'block_' * 50}out.0.1589195081588018.npy"
    short = naming.safe_file_name(long_name, tmp_path)
    np.save(tmp_path / (short + ".tmp.npy"), np.zeros(3))
    os.rename(tmp_path / (short + ".tmp.npy"), tmp_path / short)
    gt = scan(tmp_path).ground_truth
    assert gt.get("block_" * 50 + "out", 0).file_name == short


def test_skip_reasons(tmp_path):
    touch(tmp_path / "a", "README.md")
    touch(tmp_path / "a", "123456")                    # hashed, folder has no mapping.csv
    touch(tmp_path / "b", "111")                       # hashed, no row
    touch(tmp_path / "b", "222")                       # maps to a name that fits no scheme
    touch(tmp_path / "b", f"Add.add.1.{T0}")
    (tmp_path / "b" / naming.MAPPING_FILE).write_text("222,not-a-dump.txt\nbroken-row\n")
    os.symlink(tmp_path / "nowhere", tmp_path / "a" / "dangling")
    index = scan(tmp_path)
    reasons = {os.path.relpath(s.path, tmp_path): s.reason for s in index.skipped}
    assert reasons == {
        "a/README.md": reasons["a/README.md"],
        "a/123456": "hashed (digits-only) name but the folder has no mapping.csv",
        "a/dangling": "not a regular file (a broken link, socket, ...)",
        "b/111": "hashed name with no row in mapping.csv",
        "b/222": "mapping.csv maps it to 'not-a-dump.txt', which fits no naming scheme",
        "b/mapping.csv": reasons["b/mapping.csv"],
    }
    assert reasons["a/README.md"].startswith("name fits no naming scheme")
    assert "line 2" in reasons["b/mapping.csv"]
    assert index.dump_count == 1
    assert [s.path for s in index.skipped] == sorted(s.path for s in index.skipped)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable_files_and_folders_are_skipped(tmp_path):
    path = touch(tmp_path / "x", f"Add.add.1.{T0}")
    os.chmod(path, 0)
    touch(tmp_path / "locked", f"Mul.mul.1.{T0}")
    os.chmod(tmp_path / "locked", 0)
    try:
        index = scan(tmp_path)
    finally:
        os.chmod(tmp_path / "locked", 0o755)
    reasons = {os.path.relpath(s.path, tmp_path): s.reason for s in index.skipped}
    assert reasons["x/" + f"Add.add.1.{T0}"] == "not readable (permission denied)"
    assert reasons["locked"].startswith("cannot list the folder")


def test_read_headers_opens_dumps_and_skips_corrupt_ones(tmp_path):
    good = write(tmp_path, f"Conv2D.conv1.3.{T0}", "conv1", 2.0)
    bad = write(tmp_path, f"Relu.relu1.4.{T0 + 1}", "relu1")
    with open(bad, "r+b") as handle:
        handle.truncate(os.path.getsize(bad) - 3)
    touch(tmp_path, f"Add.add.5.{T0 + 2}", b"\x05" * 40)
    index = scan(tmp_path, read_headers=True, threads=2)
    [group] = index.groups
    [entry] = group.entries
    assert entry.path == good and entry.dump.op_name == "conv1"
    np.testing.assert_array_equal(entry.dump.outputs[0].array(), np.full(3, 2.0, np.float32))
    assert entry.open() is entry.dump
    skipped = {os.path.basename(s.path): s.reason for s in index.skipped}
    assert set(skipped) == {f"Relu.relu1.4.{T0 + 1}", f"Add.add.5.{T0 + 2}"}
    # the reason is the reader's, without the path repeated in front
    assert all(not r.startswith(str(tmp_path)) and r for r in skipped.values())


def test_name_only_scan_does_not_open_files(tmp_path):
    touch(tmp_path, f"Add.add.5.{T0}", b"not a dump at all")
    index = scan(tmp_path)
    [entry] = index.entries()
    assert entry.dump is None and not index.skipped
    with pytest.raises(DumpError):
        entry.open()


def test_scan_of_one_file_and_of_missing_paths(tmp_path):
    path = touch(tmp_path / "0", f"Add.add.5.{T0}")
    index = scan(path)
    assert index.dump_count == 1 and index.groups[0].key.folder == str(tmp_path / "0")
    with pytest.raises(NotFoundError, match="no such file"):
        scan(tmp_path / "missing")


def test_empty_folder_gives_an_empty_index(tmp_path):
    index = scan(tmp_path)
    assert index.dump_count == 0 and index.file_count == 0 and not index.skipped
    with pytest.raises(NotFoundError, match="runs found: none"):
        index.select()


def test_symlink_loop_is_scanned_once(tmp_path):
    touch(tmp_path / "d", f"Add.add.5.{T0}")
    os.symlink(tmp_path, tmp_path / "d" / "up")
    index = scan(tmp_path)
    assert index.dump_count == 1


def test_open_npy_is_memory_mapped_and_reports_bad_files(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(6, dtype=np.int16).reshape(2, 3))
    array = open_npy(tmp_path / "a.npy")
    assert isinstance(array, np.memmap) and array.shape == (2, 3)
    np.testing.assert_array_equal(array, np.arange(6).reshape(2, 3))
    data = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(data[:-4])
    (tmp_path / "text.npy").write_bytes(b"hello, world")
    (tmp_path / "empty.npy").write_bytes(b"")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    for name in ("short.npy", "text.npy", "empty.npy", "obj.npy"):
        with pytest.raises(DumpError) as error:
            open_npy(tmp_path / name)
        assert name in str(error.value)


PLAIN = ["float16", "float32", "float64", "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
         "uint64"]


@pytest.mark.parametrize("version", [(1, 0), (2, 0), (3, 0)])
@pytest.mark.parametrize("dtype", PLAIN)
def test_plain_npy_reads_the_header_as_numpy_does(tmp_path, dtype, version):
    # The header of every data type the core maps, in every format version, against NumPy's own reading of the file.
    path = tmp_path / "a.npy"
    for shape in [(2, 3, 5), (7,), ()]:
        with open(path, "wb") as handle:
            np.lib.format.write_array(handle, np.zeros(shape, dtype), version=version)
        want = np.load(path, mmap_mode="r")
        got = plain_npy(path)
        assert (got.shape, dtype_name(got.data_type), got.offset) == (want.shape, want.dtype.name, want.offset)
        assert [t["numpy"] for t in dumpcmp._core.dtype.data_types() if t["name"] == got.data_type] == [want.dtype.str]


def test_plain_npy_leaves_everything_else_to_numpy(tmp_path):
    # None, never an error: np.load's path reads these files and words their errors.
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    files = {"fortran": np.asfortranarray(a), "big_endian": a.astype(">f4"), "empty": np.zeros((0, 3), np.float32),
             "complex": a.astype(np.complex64), "text": np.array(["ab"]), "structured": np.zeros(2, "<f4,<i4")}
    for name, array in files.items():
        np.save(tmp_path / f"{name}.npy", array)
    good = tmp_path / "good.npy"
    np.save(good, a)
    data = good.read_bytes()
    header_end = data.index(b"\n") + 1
    broken = {
        "short": data[:-1], "long": data + b"\0", "cut_header": data[:header_end - 5], "nothing": b"",
        "magic": b"\x93NUMPZ" + data[6:], "version": data[:6] + b"\x04\x00" + data[8:],
        "minor": data[:7] + b"\x01" + data[8:], "not_a_dict": data.replace(b"{", b"[", 1).replace(b"}", b"]", 1),
        "extra_key": data.replace(b"'shape'", b"'other': 1, 'shape'", 1),
        "call": data.replace(b"'<f4'", b"f()", 1), "float_dim": data.replace(b"(3, 4)", b"(3., 4)", 1),
        "bool_dim": data.replace(b"(3, 4)", b"(True, 12)", 1), "huge_length": data[:8] + b"\xff\xff" + data[10:],
    }
    for name, content in broken.items():
        (tmp_path / f"{name}.npy").write_bytes(content)
    assert plain_npy(good) is not None
    for name in [*files, *broken]:
        assert plain_npy(tmp_path / f"{name}.npy") is None, name
    assert plain_npy(tmp_path / "missing.npy") is None and plain_npy(tmp_path) is None


def test_unreadable_reporting_with_real_permissions():
    # as root the permission bits do not stop reading: the scan runs in a forked child that has given root up, on a
    # tree outside pytest's private (0700) folder, and meets the refusals of the real kernel (the listing and the
    # readability check are the core's system calls: a Python-level stand-in would not see them)
    import json
    import shutil
    import tempfile

    top = tempfile.mkdtemp(prefix="dumpcmp-perm-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        root = os.path.join(top, "t")
        locked_file = touch(os.path.join(root, "x"), f"Add.add.1.{T0}")
        touch(os.path.join(root, "x"), f"Mul.mul.2.{T0 + 1}")
        touch(os.path.join(root, "locked"), f"Mul.mul.1.{T0}")
        for folder, _, names in os.walk(top):
            os.chmod(folder, 0o755)
            for name in names:
                os.chmod(os.path.join(folder, name), 0o644)
        os.chmod(locked_file, 0)
        os.chmod(os.path.join(root, "locked"), 0)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.close(read)
                if os.geteuid() == 0:
                    os.setgroups([])
                    os.setgid(65534)
                    os.setuid(65534)
                index = scan(root)
                out = {"reasons": {os.path.relpath(s.path, root): s.reason for s in index.skipped},
                       "ops": [e.op_name for e in index.entries()]}
                os.write(write, json.dumps(out).encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            data = pipe.read()
        assert os.waitpid(pid, 0)[1] == 0
    finally:
        os.chmod(os.path.join(top, "t", "locked"), 0o755)
        shutil.rmtree(top)
    out = json.loads(data)
    assert out["reasons"] == {f"x/Add.add.1.{T0}": "not readable (permission denied)",
                              "locked": "cannot list the folder: Permission denied"}
    assert out["ops"] == ["mul"]
