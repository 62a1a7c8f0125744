"""A small file is read without an fstat (#35: the kept 20,000-op model made 81,500 of them, one per open): a read
that ends short of the buffer is the whole file. Held here: the system calls counted by strace, and that every size
around the buffers (a dump header's 4096-byte first read, a 64 KiB file read whole, the size a header said), the
empty file, a directory, /dev/null, a FIFO and a file that changed since its header was read give what they gave
(the bytes written, or the same error) and never wait."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dumpcmp
from helpers.syscalls import count_syscalls, strace_path
from dumpcmp.support.native import core

T0 = 1700000000000000
STATS = ("newfstatat", "fstat", "statx", "fstatat64", "stat")


def make_dump(path, elements, op_name="op"):
    dumpcmp.write_dump(path, op_name=op_name, outputs=[np.arange(elements, dtype=np.float32)])
    return path


def head(path):
    got = core.dump.read_heads([os.fsencode(path)], 1)[0]
    return got if isinstance(got, str) else ("head", got.file_size, got.array("output", 0).tolist())


@pytest.mark.skipif(strace_path() is None, reason="needs strace")
def test_small_dumps_and_npy_files_are_read_without_fstat(tmp_path):
    for i in range(30):
        make_dump(tmp_path / f"Add.a{i}.{i + 1}.{T0 + i}", 10 + i)
        np.save(tmp_path / f"a{i}.0.{T0 + i}.npy", np.arange(10 + i, dtype=np.float32))
    code = (
        "import os, numpy as np\n"
        "from types import SimpleNamespace\n"
        "from dumpcmp.support.native import core\n"
        "from dumpcmp.dumps import naming\n"
        "from dumpcmp.dumps.ground_truth import ground_truth_sources\n"
        f"folder = {str(tmp_path)!r}\n"
        "names = sorted(os.listdir(folder))\n"
        "dumps = [os.fsencode(os.path.join(folder, n)) for n in names if n.startswith('Add.')]\n"
        "npys = [SimpleNamespace(name=SimpleNamespace(extension=naming.NPY), path=os.path.join(folder, n))\n"
        "        for n in names if n.endswith('.npy')]\n"
        "print('-- start --', flush=True)\n"
        "heads = core.dump.read_heads(dumps, 1)\n"
        "values = [h.array('output', 0) for h in heads]\n"  # the data: each dump opened once more
        "got = ground_truth_sources(npys)\n"
        "assert len(values) == 30 and all(g is not None for g in got)\n")
    counts = count_syscalls(code, STATS)
    assert sum(counts.values()) <= 4, counts  # 90 opens: 0 fstat (was one each)


@pytest.mark.parametrize("elements", [0, 1, 2, 900, 1000, 1010, 1024, 1030, 16300, 16380, 16384, 16390, 20000])
def test_dump_sizes_around_the_buffers_read_as_written(tmp_path, elements):
    path = make_dump(tmp_path / f"Add.a.1.{T0}", elements)
    kind, size, values = head(path)
    assert (kind, size) == ("head", os.path.getsize(path))
    assert values == list(range(elements))
    f = core.dump.DumpFile(os.fsencode(path))
    assert f.array("output", 0).tolist() == list(range(elements))


@pytest.mark.parametrize("file_bytes", [4095, 4096, 4097, 4104, 4108, 4120, 5000])
def test_a_header_around_the_first_read(tmp_path, file_bytes):
    # a long op name makes the file (and its header: all but 20 bytes) as long as asked, around the 4096-byte read
    path = tmp_path / f"Add.a.1.{T0}"
    name = file_bytes - os.path.getsize(make_dump(path, 3, op_name="x"))
    while os.path.getsize(make_dump(path, 3, op_name="x" * (1 + name))) > file_bytes:
        name -= 1
    assert os.path.getsize(path) == file_bytes
    kind, size, values = head(path)
    assert (kind, size, values) == ("head", file_bytes, [0, 1, 2])


@pytest.mark.parametrize("size", [1, 7, 8, 4095, 4096, 4097])
def test_files_that_are_not_dumps_give_the_errors_they_gave(tmp_path, size):
    path = tmp_path / f"Add.a.1.{T0}"
    path.write_bytes(b"\x07" * size)
    got = head(path)
    assert isinstance(got, str) and got.startswith(str(path) + ": ")
    with pytest.raises(Exception) as alone:
        core.dump.DumpFile(os.fsencode(path))
    assert str(alone.value) == got


def test_an_empty_file_a_folder_and_dev_null(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "folder").mkdir()
    assert head(tmp_path / "empty") == f"{tmp_path / 'empty'}: empty file (0 bytes): not a dump"
    assert head(tmp_path / "folder") == f"{tmp_path / 'folder'}: is a directory, not a file"
    assert head("/dev/null") == "/dev/null: empty file (0 bytes): not a dump"
    source = core.compare.source_from_file
    with pytest.raises(Exception, match="is a directory, not a file"):
        source(str(tmp_path / "folder"), 0, "FLOAT", 0)
    with pytest.raises(Exception, match="is not a regular file"):
        source("/dev/null", 0, "FLOAT", 1)


@pytest.mark.parametrize("nbytes", [4, 65532, 65536, 65540])
def test_a_data_file_around_the_read_whole_size(tmp_path, nbytes):
    data = np.arange(nbytes // 4, dtype=np.float32)
    path = tmp_path / "raw"
    path.write_bytes(data.tobytes())
    got = core.compare.source_from_file(str(path), 0, "FLOAT", data.size)
    assert got.count == data.size and got.stored_bytes == nbytes
    with pytest.raises(Exception, match="fewer than its header's"):
        core.compare.source_from_file(str(path), 0, "FLOAT", data.size + 1)


@pytest.mark.parametrize("change", ["shrank", "grew"])
def test_a_dump_changed_since_its_header_was_read(tmp_path, change):
    path = make_dump(tmp_path / f"Add.a.1.{T0}", 100)
    h = core.dump.read_heads([os.fsencode(path)], 1)[0]
    before = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.truncate(before - 40 if change == "shrank" else before + 40)
    with pytest.raises(Exception) as error:
        h.array("output", 0)
    after = os.path.getsize(path)
    assert str(error.value) == (f"{path}: changed on disk since its header was read ({before} bytes then, "
                                f"{after} now)")


def test_a_fifo_in_a_dumps_place_never_waits(tmp_path):
    fifo = tmp_path / f"Add.a.1.{T0}"
    os.mkfifo(fifo)
    code = ("import os, sys\n"
            "from dumpcmp.support.native import core\n"
            "print(core.dump.read_heads([os.fsencode(sys.argv[1])], 1)[0])\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(dumpcmp.__file__)))
    done = subprocess.run([sys.executable, "-c", code, str(fifo)], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{fifo}: empty file (0 bytes): not a dump"


@pytest.mark.skipif(strace_path() is None, reason="needs strace")
def test_plain_npy_headers_one_read_each_and_no_fstat(tmp_path):
    # `dumpcmp info GT` reads every .npy header this way (it was a Python open, fstat, read and close each)
    for i in range(30):
        np.save(tmp_path / f"a{i}.0.{T0 + i}.npy", np.arange(10 + i, dtype=np.float32))
    code = ("import os\n"
            "from dumpcmp.dumps.ground_truth import plain_npy\n"
            f"folder = {str(tmp_path)!r}\n"
            "paths = [os.path.join(folder, n) for n in sorted(os.listdir(folder))]\n"
            "plain_npy(paths[0])\n"
            "print('-- start --', flush=True)\n"
            "heads = [plain_npy(p) for p in paths]\n"
            "assert sorted(h.shape for h in heads) == [(10 + i,) for i in range(30)]\n")
    counts = count_syscalls(code, STATS + ("pread64", "read"), threads=False)
    assert sum(counts[c] for c in STATS) == 0 and counts["pread64"] == 30, counts
