"""`dumpcmp file_compare` over broken and odd .npy files (issue #38): every case ends in exit 0 or 2 with dumpcmp's
own message naming the file, never a traceback, and nothing is left in the output folder by a refused run."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.cli import main


def _cases(d):
    good = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(d / "good.npy", good)
    raw = (d / "good.npy").read_bytes()
    out = {
        "truncated": raw[:len(raw) - 5],
        "header_only": raw[:128],
        "not_npy": b"hello world",
        "empty_file": b"",
        "bad_magic": b"\x93NUMPX" + raw[6:],
        "huge_shape": raw.replace(b"(3, 4)", b"(3000000000000, 4000000)"),
    }
    for name, data in out.items():
        (d / f"{name}.npy").write_bytes(data)
    arrays = {
        "object": np.array([{"a": 1}] * 12, dtype=object).reshape(3, 4),
        "complex": good.astype(np.complex64),
        "unicode": np.array([["abcd"] * 4] * 3),
        "structured": np.zeros((3, 4), dtype=[("a", "<f4"), ("b", "<i4")]),
        "fortran": np.asfortranarray(good),
        "inf16": np.full((3, 4), np.inf, np.float16),
        "int64": np.full((3, 4), 2**62, np.int64),
        "uint8": good.astype(np.uint8),
    }
    for name, a in arrays.items():
        np.save(d / f"{name}.npy", a, allow_pickle=True)
    np.save(d / "empty_a.npy", np.zeros((0, 4), np.float32))
    np.save(d / "empty_b.npy", np.zeros((0, 4), np.float32))
    (d / "folder.npy").mkdir()
    return sorted(p.name for p in d.iterdir())


@pytest.mark.parametrize("side", ["mine", "golden"])
def test_broken_and_odd_npy_files(tmp_path, capsys, side):
    d = tmp_path / "in"
    d.mkdir()
    names = _cases(d)
    out = tmp_path / "out"
    out.mkdir()
    for name in names:
        other = "empty_b.npy" if name == "empty_a.npy" else "good.npy"
        pair = [d / name, d / other] if side == "mine" else [d / other, d / name]
        code = main(["file_compare", "-m", str(pair[0]), "-g", str(pair[1]), "-out", str(out), "--force"])
        err = capsys.readouterr().err
        assert code in (0, 2), name
        if code == 2:
            assert err.startswith("dumpcmp") and "Traceback" not in err, (name, err)
            assert str(d / name) in err or name in err, (name, err)
        else:  # what may be compared: numbers of the same shape, in any order or width
            assert name in ("empty_a.npy", "good.npy", "fortran.npy", "inf16.npy", "int64.npy", "uint8.npy"), name
    assert all(p.name.startswith("file_result_") for p in out.iterdir())
