"""Files up to 64 KiB are read into a buffer the source owns, larger ones mapped (issue #35, `MappedFile`): on either
side of the threshold a .npy and a dump give the same comparison as the arrays they hold."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp import TensorData, open_dump, write_dump
from dumpcmp.support.native import core

THRESHOLD = 64 << 10


@pytest.mark.parametrize("extra", [-4, 0, 4, 4096])
def test_npy_on_either_side_of_the_threshold(tmp_path, extra):
    count = (THRESHOLD - 128 + extra) // 4
    values = np.random.default_rng(count).standard_normal(count).astype(np.float32)
    path = tmp_path / "t.0.1.npy"
    np.save(path, values)
    assert path.stat().st_size == 128 + 4 * count
    reference = core.compare.compare_sources(core.compare.source_from_array(values), core.compare.source_from_array(
        values[::-1].copy()))
    batch = core.compare.npy_sources([str(path)], {"<f4": "FLOAT"})[0][0]
    one = core.compare.source_from_file(str(path), 128, "FLOAT", count)
    flipped = core.compare.source_from_array(values[::-1].copy())
    for src in (batch, one):
        got = core.compare.compare_sources(src, flipped)
        assert repr([got.value(m) for m in range(10)]) == repr([reference.value(m) for m in range(10)])


@pytest.mark.parametrize("elements", [16, 30000, 40000])
def test_dump_on_either_side_of_the_threshold(tmp_path, elements):
    values = np.linspace(-3, 3, elements, dtype=np.float16)
    path = tmp_path / "Add.add1.1.1700000000000000"
    write_dump(path, op_name="add1", outputs=[TensorData(values, format="ND")])
    d = open_dump(path)
    src = core.compare.source_from_dump(d._file, "output", 0)
    truth = core.compare.source_from_array(values.astype(np.float32))
    got = core.compare.compare_sources(src, truth, metrics=[0])
    assert got.value(0) == pytest.approx(1.0)
    np.testing.assert_array_equal(d.outputs[0].array(), values)
