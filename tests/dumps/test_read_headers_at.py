"""core.dump.read_headers opens each folder once and each file in it (#35: one path lookup a header, not one per
path component): what it gives for every path, folders mixed, missing or not folders, links, relative paths, is
what opening each file alone gives (core.dump.DumpFile)."""

from __future__ import annotations

import os

import numpy as np

import dumpcmp
from dumpcmp.support.native import core


def alone(path: bytes):
    try:
        f = core.dump.DumpFile(path)
    except Exception as error:  # noqa: BLE001 - the error text is what is compared
        return "error", str(error)
    return f.path, f.op_name, [t.shape for t in f.tensors("output")]


def test_headers_read_by_folder_are_those_read_alone(tmp_path, monkeypatch):
    for folder in ("a", "b", "c/d"):
        (tmp_path / folder).mkdir(parents=True)
        for k in range(3):
            dumpcmp.write_dump(tmp_path / folder / f"Add.{folder[0]}{k}.1.1700000000000000",
                               op_name=f"{folder}{k}", outputs=[np.ones(k + 1, np.float32)])
    (tmp_path / "a" / "bad").write_bytes(b"\x07" * 9)
    (tmp_path / "a" / "empty").write_bytes(b"")
    os.symlink(tmp_path / "b", tmp_path / "link")
    os.symlink(tmp_path / "b" / "Add.b0.1.1700000000000000", tmp_path / "c" / "filelink")
    (tmp_path / "c" / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    names = [f"{f}/Add.{f[0]}{k}.1.1700000000000000" for f in ("a", "b", "c/d") for k in range(3)]
    paths = [os.fsencode(tmp_path / n) for n in names]
    paths[1:1] = [os.fsencode(tmp_path / "b" / "Add.b2.1.1700000000000000")]  # folders interleaved
    paths += [os.fsencode(tmp_path / x) for x in ("a/bad", "a/empty", "missing/x", "a/bad/x", "link/Add.b1.1."
                                                  "1700000000000000", "c/filelink", "c/sub", "c/", "a/nothing")]
    paths += [b"a/Add.a1.1.1700000000000000", b"Add.x.1.1", b"./b/Add.b2.1.1700000000000000",
              b"c/d/../../a/Add.a0.1.1700000000000000", b"/", b"/nonexistent-dumpcmp"]
    got = core.dump.read_headers(paths, 2)
    for path, item in zip(paths, got):
        mine = ("error", item) if isinstance(item, str) else (item.path, item.op_name,
                                                             [t.shape for t in item.tensors("output")])
        assert mine == alone(path), path
    assert sum(not isinstance(item, str) for item in got) == 15
