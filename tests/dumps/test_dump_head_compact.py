"""`core.dump.DumpHead` held in one block (issue #35): its tensors' records, their dimensions (4 bytes each when they
fit, else 8) and its path. A head reads as the Dump of the same file does whatever its dimensions and path, and what
it holds a dump is measured (RssAnon of a child process) so that it cannot grow back silently."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dumpcmp.dumps.dump import TensorData, open_dump, open_heads, write_dump


def _same(head, whole):
    for kind in ("input", "output"):
        assert head.count(kind) == len(whole.tensors(kind))
        for a, b in zip(head.tensors(kind), whole.tensors(kind), strict=True):
            assert a.to_dict() == b.to_dict()
            assert (a.desc.original_shape, a.desc.dim_range, a.desc.original_op) == \
                (b.desc.original_shape, b.desc.dim_range, b.desc.original_op)
    assert (head.path, head.file_size, head.header_size) == (whole.path, whole.file_size, whole.header_size)


@pytest.mark.parametrize("shapes", [
    [(0, 2**31 + 5), (3, 4)],          # one dimension past 32 bits: every one kept in 8 bytes
    [(2**31 - 1, 0), (0, 2**31)],      # the largest that fits, the smallest that does not
    [(0, 2**40, 7), (2, 2**33 + 1, 0)],
    [(), (1,)],                        # a scalar: no dimension at all
])
def test_wide_and_narrow_dimensions_read_as_written(tmp_path, shapes):
    path = write_dump(tmp_path / "Conv2D.conv1.1.1700000000000000", op_name="conv1", inputs=[
        TensorData(np.zeros(shapes[0], np.float16), original_shape=tuple(reversed(shapes[0]))),
    ], outputs=[TensorData(np.zeros(shapes[1], np.float32), original_shape=(5, 2**35) if shapes[1] else None,
                           original_op={"name": "o", "output_index": 3, "data_type": 1, "format": 2},
                           dim_range=[(1, 2**40)])])
    (head,) = open_heads([path])
    _same(head, open_dump(path))
    assert head.inputs[0].shape == shapes[0] and head.outputs[0].shape == shapes[1]


def test_a_head_of_many_tensors_and_a_path_not_utf8(tmp_path):
    name = os.fsdecode(b"Conv2D.conv\xff1.1.1700000000000000")
    tensors = [TensorData(np.full((k % 3 + 1, 2), k, np.float32), original_shape=(2, k % 3 + 1) if k % 2 else None)
               for k in range(40)]
    path = write_dump(tmp_path / name, op_name="conv", inputs=tensors[:25], outputs=tensors[25:],
                      buffers=[b"\x01"])
    (head,) = open_heads([path])
    whole = open_dump(path)
    _same(head, whole)
    assert os.fsencode(head.path).endswith(b"conv\xff1.1.1700000000000000")
    assert np.array_equal(head.outputs[14].array(), whole.outputs[14].array())
    assert head.buffers[0].raw().tobytes() == b"\x01"
    with pytest.raises(ValueError, match=r"conv.*only the inputs and outputs"):
        head._file.tensor("buffer", 0)


MEASURE = textwrap.dedent("""
    import ctypes, gc, sys, tracemalloc
    sys.path.insert(0, sys.argv[2])
    from dumpcmp.dumps.dump import open_heads
    from dumpcmp.dumps.scan import scan

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                     "keepcost")]

    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = MallInfo2
    (group,) = list(scan(sys.argv[1]))
    paths = [e.path for e in group.entries]
    gc.collect()
    tracemalloc.start()

    def held():  # the allocator's bytes in use (the core's) and Python's (its objects)
        gc.collect()
        return mallinfo2().uordblks + mallinfo2().hblkhd + tracemalloc.get_traced_memory()[0]

    before = held()
    heads = open_heads(paths, threads=1)
    print((held() - before) / len(paths), sum(map(len, paths)) / len(paths))
""")


def test_a_head_holds_little_a_dump(tmp_path):
    """What a HeadDump of one output holds (its Python objects, the core's head, the path; bytes in use, as the
    allocator and tracemalloc count them, 2,000 dumps): 632 bytes beside its path before the head was one block
    (main at e258a2a), 553 with it."""
    from helpers.many_dumps import many_dumps

    dump, _ = many_dumps(tmp_path, 2000)
    tests = str(Path(__file__).resolve().parents[1])
    run = subprocess.run([sys.executable, "-c", MEASURE, str(dump), tests], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-800:]
    held, path = (float(v) for v in run.stdout.split())
    assert held - path < 595, f"a head holds {held:.0f} bytes a dump (paths of {path:.0f} characters)"
