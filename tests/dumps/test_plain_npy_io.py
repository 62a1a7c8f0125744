"""plain_npy reads a header in one read (#35): a header longer than that read, a file cut inside its header, and a
FIFO in the place of a file (no wait) give what NumPy's own reader says, or None (the general path)."""

from __future__ import annotations

import os
import threading

import numpy as np

from dumpcmp.dumps.ground_truth import plain_npy


def npy_with_header_padding(path, a: np.ndarray, pad: int) -> None:
    """A version 1.0 .npy whose header dict is followed by `pad` more spaces (the format allows any padding)."""
    text = f"{{'descr': '{a.dtype.str}', 'fortran_order': False, 'shape': {a.shape}, }}"
    text += " " * pad
    text += " " * ((-(10 + len(text) + 1)) % 64) + "\n"
    assert len(text) < 65536
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode("latin-1") + a.tobytes())


def test_a_header_longer_than_the_first_read(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for pad in (0, 4000, 5000, 9000):  # NumPy refuses headers past 10,000 bytes by default
        path = tmp_path / f"p{pad}.npy"
        npy_with_header_padding(path, a, pad)
        np.testing.assert_array_equal(np.load(path), a)  # NumPy reads it as that array
        h = plain_npy(path)
        assert h is not None and h.shape == (3, 4) and h.descr == "<f4"
        assert h.offset == os.path.getsize(path) - a.nbytes


def test_a_file_cut_inside_its_header(tmp_path):
    path = tmp_path / "cut.npy"
    npy_with_header_padding(path, np.ones(3, np.float32), 6000)
    data = path.read_bytes()
    for end in (5, 9, 100, 4095, 4096, 4097, 5000):
        path.write_bytes(data[:end])
        assert plain_npy(path) is None


def test_a_fifo_is_not_waited_on(tmp_path):
    path = tmp_path / "f.npy"
    os.mkfifo(path)
    got = []
    t = threading.Thread(target=lambda: got.append(plain_npy(path)), daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and got == [None]
