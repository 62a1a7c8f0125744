"""The core's `.npy` header reader (ground_truth.plain_npy, `core.compare.npy_heads`; issue #35: no `ast` per
ground-truth file) against the readers it stands for: `ast.literal_eval` (what plain_npy read headers with before)
and NumPy's own (numpy.lib.format), on headers NumPy writes and on generated near-misses (hypothesis). Each header is
put in a version 1.0 file with as many data bytes as it declares; whatever the core answers must be what both read."""

from __future__ import annotations

import ast
import io
import math
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dumpcmp.dumps.ground_truth import plain_npy

KEYS = ["descr", "fortran_order", "shape"]
SPACE = st.sampled_from(["", " ", "  ", "\t", "\n", "\r", "\x0c", "\xa0", " # c\n", "\\\n"])
DESCRS = st.one_of(st.sampled_from(["<f4", "<f2", "|b1", "<i8", "|u1", ">f4", "<c8", "|O", "<U2", "", "<f4\\n"]),
                   st.text(max_size=6))
DIM = st.one_of(st.integers(0, 2**70).map(str), st.sampled_from(["007", "00", "-1", "1.", "True", "3L", "1_0", "0x1",
                                                                 "", " ", "2**3"]))


@st.composite
def shape_texts(draw) -> str:
    dims = draw(st.lists(DIM, max_size=4))
    sep = draw(st.sampled_from([",", ", ", " ,", ",\n", ",,", " "]))
    trailing = draw(st.sampled_from(["", ",", ", ", " ,"]))
    opening, closing = draw(st.sampled_from([("(", ")"), ("(", ")"), ("[", "]"), ("", "")]))
    return opening + draw(SPACE) + sep.join(dims) + trailing + draw(SPACE) + closing


@st.composite
def headers(draw) -> str:
    values = {"descr": draw(DESCRS).join(draw(st.sampled_from([("'", "'"), ('"', '"'), ("", ""), ("b'", "'"),
                                                               ("u'", "'"), ("'", '"')]))),
              "fortran_order": draw(st.sampled_from(["False", "True", "0", "None", "Falsex", "false", "(False)"])),
              "shape": draw(shape_texts())}
    keys = draw(st.permutations(KEYS))
    keys += draw(st.sampled_from([[], [], [], ["descr"], ["other"]]))
    keys = keys[:draw(st.sampled_from([len(keys), len(keys), 2]))]
    quote = draw(st.sampled_from(["'", "'", '"']))
    entries = [f"{quote}{k}{quote}{draw(SPACE)}:{draw(SPACE)}{values.get(k, '1')}" for k in keys]
    text = "{" + draw(SPACE) + (draw(SPACE) + "," + draw(SPACE)).join(entries) + draw(st.sampled_from(["", ",", ", "]))
    text += draw(SPACE) + draw(st.sampled_from(["}", "}", "}", "", "},"])) + " " * draw(st.integers(0, 3)) + "\n"
    if draw(st.booleans()):  # a random edit somewhere
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(max_size=2)) + text[at + draw(st.integers(0, 2)):]
    return text


def core_reading(text: str, prefix: bytes = b"\x93NUMPY\x01\x00", width: int = 2) -> tuple | None:
    """(descr, fortran_order, shape) as the core reads a file of this header and the data it declares (None: it
    leaves the file to NumPy). A declared size too large to write is written short: the core must refuse it."""
    try:
        raw = text.encode("latin-1")
    except UnicodeEncodeError:  # not a version 1.0 header
        return None
    value = literal(text)
    size = 7  # no header NumPy would read (or a size too large to write): its declared size is no matter
    if value is not None and type(value[0]) is str and type(value[2]) is tuple and \
            all(type(d) is int and d >= 0 for d in value[2]):
        try:
            declared = math.prod(value[2]) * np.dtype(value[0]).itemsize
        except Exception:  # a descr NumPy does not know
            declared = -1
        if 0 <= declared <= 1 << 20:
            size = declared
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "t.npy")
        with open(path, "wb") as f:
            f.write(prefix + len(raw).to_bytes(width, "little") + raw + b"\0" * size)
        got = plain_npy(path)
    return None if got is None else (got.descr, False, got.shape)


def literal(text: str) -> tuple | None:
    """What ast.literal_eval makes of the header, in the core's terms (None where it would not answer)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or value.keys() != set(KEYS):
        return None
    return value["descr"], value["fortran_order"], value["shape"]


def numpy_reading(text: str) -> tuple | None:
    """NumPy's reading of a version 1.0 file with this header: (shape, fortran_order, dtype), None if it refuses."""
    raw = text.encode("latin-1")
    data = b"\x93NUMPY\x01\x00" + len(raw).to_bytes(2, "little") + raw
    try:
        stream = io.BytesIO(data)
        np.lib.format.read_magic(stream)  # the reader starts after the magic (it read every header as refused before)
        return np.lib.format.read_array_header_1_0(stream, max_header_size=1 << 16)
    except Exception:  # every refusal counts the same here
        return None


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=headers())
@example(text="{'descr': '<f4', 'fortran_order': False, 'shape': (3), }")
@example(text="{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'descr': '<f2'}")
@example(text="{'descr': '<f4', 'fortran_order': False, 'shape': (007,)}")
@example(text="{'descr': '<f4', 'fortran_order': False, 'shape': (True,)}")
@example(text="{'descr':'\x00','fortran_order':False,'shape':()}\n")  # CI: literal_eval refuses a NUL
@example(text="{'descr':'a\rb','fortran_order':False,'shape':()}\n")
@example(text="{'descr':'<f4','fortran_order':False,'shape':(163,14146276130145362,-1)}\n")  # a size past ssize_t
@example(text="{'descr':'<f4','fortran_order':False,'shape':(0,1.)}\n")  # a float dimension
def test_a_header_it_reads_is_what_literal_eval_and_numpy_read(text):
    got = core_reading(text)
    if got is None:
        return
    descr, fortran_order, shape = got
    want = literal(text)
    assert want == got and type(want[1]) is bool and all(type(d) is int for d in want[2])
    if text.isascii():  # NumPy's reader (version 1.0 headers are latin-1)
        read = numpy_reading(text)
        if read is not None:
            assert read[0] == shape and read[1] == fortran_order and read[2] == np.lib.format.descr_to_dtype(descr)


@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
@pytest.mark.parametrize("dtype", ["<f4", "<f2", "|b1", "<i8", "|u1", ">f4", "<c16"])
@pytest.mark.parametrize("shape", [(), (0,), (7,), (2, 3, 5), (1, 2**40, 3)])
@pytest.mark.parametrize("fortran", [False, True])
def test_every_header_numpy_writes_is_read(version, dtype, shape, fortran):
    header = np.lib.format.header_data_from_array_1_0(np.zeros((0,), dtype))
    header.update(shape=shape, fortran_order=fortran)
    buffer = io.BytesIO()
    np.lib.format.write_array_header_2_0(buffer, header) if version != (1, 0) else \
        np.lib.format.write_array_header_1_0(buffer, header)
    raw = buffer.getvalue()
    width = 2 if version == (1, 0) else 4
    text = raw[8 + width:].decode("latin-1")
    plain = not fortran and dtype[0] != ">" and dtype != "<c16" and 0 < math.prod(shape) < 1 << 20
    got = core_reading(text, raw[:8], width)
    assert got == ((np.dtype(dtype).str, fortran, shape) if plain else None)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(1, 40), max_size=3).map(tuple), dtype=st.sampled_from(["<f4", "<f2", "|b1", "<i8"]),
       at=st.integers(0, 80), edit=st.text(max_size=2), cut=st.integers(0, 2), edited=st.booleans())
def test_numpys_own_headers_edited_are_read_as_numpy_reads_them_or_left_to_it(shape, dtype, at, edit, cut, edited):
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    text = buffer.getvalue()[10:].decode("latin-1")
    if edited:
        text = text[:at] + edit + text[at + cut:]
    got = core_reading(text)
    if not edited:
        assert got == (np.dtype(dtype).str, False, shape)
    if got is not None and text.isascii():
        assert got == literal(text)
        read = numpy_reading(text)
        assert read is not None and read[0] == got[2] and not read[1] and read[2] == np.dtype(got[0])
