"""`ground_truth_sources` (issue #35: a batch of ground-truth `.npy` files opened in one call of the core) against the
one-file reader it stands for (`ground_truth_source` / `mapped_npy`): where the batch answers, the same shape, data
type, element count and bytes; where it does not (None), the caller reads that file the general way. Files NumPy
writes always take the batch; near-misses, odd files and hostile ones (a FIFO, a directory, a truncated file) never
change the answer and never wait."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dumpcmp.dumps import naming
from dumpcmp.dumps.ground_truth import ground_truth_sources, mapped_npy
from dumpcmp.support.native import core


def entry(path: Path) -> SimpleNamespace:
    return SimpleNamespace(name=SimpleNamespace(extension=naming.NPY), path=str(path))


def same_as_single(path: Path) -> tuple | None:
    """The batch's answer for one file, checked against mapped_npy's: None, or what mapped_npy gives."""
    got = ground_truth_sources([entry(path)])[0]
    single = mapped_npy(str(path))
    if got is None:
        return None
    assert single is not None, f"{path}: the batch read a file the one-file reader refuses"
    (src, shape, dtype), (ref, ref_shape, ref_dtype) = got, single
    assert (shape, dtype, src.count, src.data_type, src.stored_bytes) == \
        (ref_shape, ref_dtype, ref.count, ref.data_type, ref.stored_bytes)
    assert type(shape) is tuple and all(type(d) is int for d in shape)
    if src.count and dtype.startswith("float"):
        res = core.compare.compare_sources(src, ref, metrics=[1])
        assert res.value(1) == 0 or np.isnan(res.value(1))
    return got


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64",
                                   "uint16", "uint32", "uint64", "bool"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3), (1, 3, 5, 2), (2, 1, 1, 1, 3)])
def test_numpy_written_files_take_the_batch(tmp_path: Path, dtype: str, shape: tuple[int, ...]) -> None:
    path = tmp_path / "x.0.1.npy"
    np.save(path, (np.arange(int(np.prod(shape))) % 3).astype(dtype).reshape(shape))
    assert same_as_single(path) is not None
    assert mapped_npy(str(path)) is not None


def test_many_in_one_call_keep_their_order(tmp_path: Path) -> None:
    paths = []
    for k in range(70):
        p = tmp_path / f"op{k}.0.1.npy"
        np.save(p, np.full((k + 1,), k, np.float32))
        paths.append(p)
    entries = [entry(p) for p in paths]
    entries.insert(5, SimpleNamespace(name=SimpleNamespace(extension="pb"), path=str(paths[0])))  # not a .npy
    got = ground_truth_sources(entries)
    assert got[5] is None
    assert [g[1] for g in got if g is not None] == [(k + 1,) for k in range(70)]


def test_odd_and_hostile_files_fall_back_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.0.1.npy"
    os.mkfifo(fifo)  # opened without O_NONBLOCK this would wait for a writer forever
    folder = tmp_path / "dir.0.1.npy"
    folder.mkdir()
    good = tmp_path / "good.0.1.npy"
    np.save(good, np.ones((4, 4), np.float32))
    data = good.read_bytes()
    cases = {"truncated": data[:-1], "longer": data + b"\0", "empty": b"", "magic only": data[:8],
             "fortran": data.replace(b"'fortran_order': False", b"'fortran_order': True "),
             "big-endian": data.replace(b"'<f4'", b"'>f4'"), "object": data.replace(b"'<f4'", b"'|O' "),
             "zero dim": data.replace(b"(4, 4)", b"(0, 4)"), "number not tuple": data.replace(b"(4, 4)", b"(16)  "),
             "version 9": data[:6] + b"\x09" + data[7:]}
    paths = [fifo, folder, tmp_path / "missing.0.1.npy"]
    for name, content in cases.items():
        p = tmp_path / f"{name.replace(' ', '_')}.0.1.npy"
        p.write_bytes(content)
        paths.append(p)
    got = ground_truth_sources([entry(p) for p in paths])
    assert got == [None] * len(paths)


SPACE = st.sampled_from(["", " ", "  ", "\t", "\n"])


@st.composite
def near_numpy_headers(draw) -> tuple[str, int]:
    """A header close to NumPy's own text, and how many elements it describes (-1: not a plain header)."""
    descr = draw(st.sampled_from(["<f4", "<f2", "|b1", "<i8", "|u1", ">f4", "<f8", "=f4", "<c8", "<f4 "]))
    dims = draw(st.lists(st.integers(0, 6), max_size=4))
    sep = draw(st.sampled_from([", ", ", ", ",", " , "]))
    trailing = draw(st.sampled_from(["", ","])) if len(dims) != 1 else draw(st.sampled_from([",", ",", ""]))
    fortran = draw(st.sampled_from(["False", "False", "True"]))
    quote = draw(st.sampled_from(["'", "'", '"']))
    order = draw(st.sampled_from([("descr", "fortran_order", "shape")] * 3 + [("shape", "descr", "fortran_order")]))
    values = {"descr": f"'{descr}'", "fortran_order": fortran, "shape": "(" + sep.join(map(str, dims)) + trailing + ")"}
    body = ", ".join(f"{quote}{k}{quote}: {values[k]}" for k in order)
    text = "{" + body + draw(st.sampled_from([", }", ", }", "}", ",}"])) + draw(SPACE) * draw(st.integers(0, 3))
    text += draw(st.sampled_from(["\n", "\n", "", "\r\n"]))
    count = int(np.prod(dims)) if dims else 1
    return text, count


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(near_numpy_headers(), st.sampled_from([1, 2, 3]), st.sampled_from([0, 0, 0, 1, -1]))
def test_near_numpy_headers_read_as_the_one_file_reader(tmp_path: Path, header: tuple[str, int], version: int,
                                                        extra: int) -> None:
    text, count = header
    raw = text.encode("latin-1")
    width = 2 if version == 1 else 4
    prefix = b"\x93NUMPY" + bytes([version, 0]) + len(raw).to_bytes(width, "little")
    itemsize = 8 if ("8" in text.split("descr")[1][:8]) else (2 if "f2" in text else (4 if "f4" in text else 1))
    body = bytes(max(0, count * itemsize + extra))
    path = tmp_path / "h.0.1.npy"
    path.write_bytes(prefix + raw + body)
    same_as_single(path)
