"""A dump's header is read with its 8-byte prefix in one read of the file's first 4 KiB, a longer header's rest in a
second (issue #35): headers on either side of that boundary, and every cut around it, read as before."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp import DumpError, open_dump, write_dump


def header_length(path) -> int:
    return int.from_bytes(path.read_bytes()[:8], "little")


@pytest.mark.parametrize("name_bytes", [1, 3000, 4000, 4060, 4070, 4080, 4090, 4100, 9000])
def test_headers_around_the_first_read(tmp_path, name_bytes):
    path = tmp_path / "Add.add1.1.1700000000000000"
    values = np.arange(24, dtype=np.float32)
    write_dump(path, op_name="a" * name_bytes, outputs=[values])
    d = open_dump(path)
    assert d.op_name == "a" * name_bytes
    np.testing.assert_array_equal(d.outputs[0].array(), values)


def test_every_cut_near_the_boundary_is_an_error_naming_the_file(tmp_path):
    whole = tmp_path / "whole"
    write_dump(whole, op_name="a" * 4070, outputs=[np.arange(4, dtype=np.float32)])
    data = whole.read_bytes()
    assert 4000 < header_length(whole) + 8 < 4096 + 64
    for cut in range(4000, min(len(data), 4200)):
        path = tmp_path / "Add.cut.1.1700000000000000"
        path.write_bytes(data[:cut])
        with pytest.raises(DumpError) as info:
            open_dump(path)
        assert str(path) in str(info.value)
