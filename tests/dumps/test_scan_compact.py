"""Scan entries are compact (issue #35: 10^6 of them): the entries of one folder share one string for the folder's
path (`path` joined on access) and one for each op name and op type, and still behave as the frozen dataclasses of
(path, file_name, name) they were: equality, hash, repr, pickling, constructors given any path."""

from __future__ import annotations

import dataclasses
import os
import pickle

import pytest

from dumpcmp.dumps import naming
from dumpcmp.dumps.scan import DumpEntry, GroundTruthEntry, scan

T0 = 1700000000000000


def _tree(tmp_path):
    run = tmp_path / "20240101120000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    gt = tmp_path / "gt"
    gt.mkdir()
    for k in range(6):
        (run / f"{'Conv2D' if k % 2 else 'Relu'}.op{k}.{k + 1}.{T0 + k}").write_bytes(b"x")
        for out in range(3):
            (gt / f"op{k}.{out}.{T0}.npy").write_bytes(b"x")
    return run, gt


def test_entries_of_a_folder_share_its_path_and_their_texts(tmp_path):
    run, gt = _tree(tmp_path)
    entries = list(scan(run).groups[0])
    assert [e.path for e in entries] == [str(run / e.file_name) for e in entries]
    assert len({id(e.head) for e in entries}) == 1
    assert len({id(e.name.op_type) for e in entries}) == 2  # Relu and Conv2D, each one object
    truth = list(scan(gt).ground_truth)
    assert [e.path for e in truth] == [str(gt / e.file_name) for e in truth]
    assert len({id(e.head) for e in truth}) == 1
    assert len({id(e.name.op_name) for e in truth}) == 6  # an op's outputs share its name


def test_entries_behave_as_the_dataclasses_they_were(tmp_path):
    run, gt = _tree(tmp_path)
    entry = scan(run).groups[0].entries[0]
    built = DumpEntry(entry.path, entry.file_name, entry.name)
    assert built == entry and hash(built) == hash(entry) and repr(built) == repr(entry)
    assert repr(entry) == f"DumpEntry(path={entry.path!r}, file_name={entry.file_name!r}, name={entry.name!r})"
    assert entry.with_dump("header") == entry and entry.with_dump("header").dump == "header"
    assert entry.with_dump("header").head is entry.head
    assert pickle.loads(pickle.dumps(entry.with_dump(None))) == entry
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.file_name = "other"
    truth = next(iter(scan(gt).ground_truth))
    assert pickle.loads(pickle.dumps(truth)) == truth and truth != entry
    assert GroundTruthEntry(truth.path, truth.file_name, truth.name) == truth


@pytest.mark.parametrize("path, file_name", [
    ("/r/Relu.a.1.2", "Relu.a.1.2"), ("Relu.a.1.2", "Relu.a.1.2"), ("/r/12345", "Relu.a.1.2"), ("", "Relu.a.1.2"),
    ("/r/", "Relu.a.1.2"), ("/r/xRelu.a.1.2", "Relu.a.1.2"), ("/r/Relu.a.1.2", ""),
])
def test_path_is_what_was_given(path, file_name):
    entry = DumpEntry(path, file_name, naming.parse_device_dump_name("Relu.a.1.2"))
    assert entry.path == path and entry.file_name == file_name
    assert entry == DumpEntry(path, file_name, entry.name)
    assert entry != DumpEntry(path + "x", file_name, entry.name)


def test_paths_of_names_that_are_not_utf8(tmp_path):
    # a folder and files named by bytes that are not UTF-8: the shared folder text joined to the file's name is the
    # path os.listdir gives, byte for byte, and the file opens by it
    folder = os.path.join(os.fsencode(tmp_path), b"run\xff\xfe")
    os.mkdir(folder)
    names = [b"Relu.op\xe9.1.%d" % T0, b"Conv2D.op\xc3\xa9.2.%d" % (T0 + 1), b"op\xe9.0.%d.npy" % T0]
    for name in names:
        with open(os.path.join(folder, name), "wb") as f:
            f.write(b"x")
    index = scan(os.fsdecode(folder))
    paths = [e.path for e in index.entries()] + [e.path for e in index.ground_truth]
    assert sorted(os.fsencode(p) for p in paths) == sorted(os.path.join(folder, n) for n in names)
    for p in paths:
        with open(p, "rb") as f:
            assert f.read() == b"x"
