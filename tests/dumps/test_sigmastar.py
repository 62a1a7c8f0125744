"""SigmaStar DumpDebug dumps: byte fixtures written by our writer (every trailer, padding, every integer type, float
and fixed, text and binary, constants) read back; malformed files refused naming the file and the tensor."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.dumps.sigmastar import (DTYPES, TRAILERS, TensorSpec, is_sigmastar_dump, open_sigmastar, read_min_max,
                                     write_sigmastar_dump)
from dumpcmp.errors import DumpcmpError, DumpError

RNG = np.random.default_rng(7)


def float_specs():
    return [TensorSpec("images", RNG.standard_normal((1, 4, 5, 3)).astype(np.float32), "INPUT", 0, direction="in"),
            TensorSpec("conv1/w", RNG.standard_normal((3, 3)).astype(np.float32), "CONST", 1, constant=True),
            TensorSpec("conv 1:0", RNG.standard_normal((1, 4, 5, 8)).astype(np.float32), "CONV_2D", 2, slot=1),
            TensorSpec("prob", RNG.standard_normal(10).astype(np.float32), "SOFTMAX", 3)]


@pytest.mark.parametrize("trailer", TRAILERS)
def test_float_binary_every_trailer(tmp_path, trailer):
    specs = float_specs()
    path = write_sigmastar_dump(tmp_path / "d.bin", specs, is_float=True, trailer=trailer)
    raw = path.read_bytes()
    assert raw.startswith(b"isFloat: 1\n//in 0 s: 0.000000 z: 0 type: float name: images bConstant:0 "
                          b"shape:[1, 4, 5, 3] dims:4\nop_out[0] INPUT = {\n//buffer data size: 240\n")
    assert is_sigmastar_dump(path)
    dump = open_sigmastar(path)
    assert dump.is_float and not dump.text
    assert [t.name for t in dump.tensors] == [s.name for s in specs]
    assert [t.constant for t in dump.tensors] == [False, True, False, False]
    assert [t.direction for t in dump.tensors] == ["in", "out", "out", "out"]
    t = dump.tensors[2]
    assert (t.op_kind, t.op_index, t.op_type, t.slot, t.shape) == ("op_out", 2, "CONV_2D", 1, (1, 4, 5, 8))
    assert t.label == "2.conv.xx.output1"
    for spec, t in zip(specs, dump.tensors):
        np.testing.assert_array_equal(dump.values(t), spec.data)
    # the payload is a view on the file's mapping, not a copy
    assert not dump.raw(dump.tensors[0]).flags.owndata


@pytest.mark.parametrize("data_type", sorted(DTYPES))
def test_fixed_point_every_type_dequantised(tmp_path, data_type):
    dtype = np.dtype(DTYPES[data_type])
    if dtype.kind == "f":
        q = RNG.standard_normal((2, 3, 4)).astype(np.float32)
        expected = q
    else:
        info = np.iinfo(dtype)
        q = RNG.integers(max(info.min, -1000), min(info.max, 1000), (2, 3, 4), endpoint=True).astype(dtype)
        if data_type == "SGS_BOOL":
            q = (q % 2).astype(dtype)
        expected = ((q.astype(np.float64) - 3) * 0.25).astype(np.float32)
    spec = TensorSpec("t", q, "ADD", 5, scale=0.25, zero_point=3, data_type=data_type)
    path = write_sigmastar_dump(tmp_path / "fixed.bin", [spec], is_float=False)
    dump = open_sigmastar(path)
    t = dump.tensors[0]
    assert (t.scale, t.zero_point, t.data_type, t.size) == (0.25, 3, data_type, q.size * dtype.itemsize)
    np.testing.assert_array_equal(dump.raw(t), q.reshape(-1))
    np.testing.assert_array_equal(dump.values(t), expected)


def test_scale_zero_keeps_integers(tmp_path):
    q = np.arange(-4, 4, dtype=np.int16)
    path = write_sigmastar_dump(tmp_path / "f.bin", [TensorSpec("t", q, data_type="SGS_S16")], is_float=False)
    dump = open_sigmastar(path)
    np.testing.assert_array_equal(dump.values(dump.tensors[0]), q.astype(np.float32))


def test_dequantised_beyond_float32_is_inf_without_warning(tmp_path):
    spec = TensorSpec("t", np.array([1, -1, 0], np.int16), data_type="SGS_S16", scale=1e300)
    dump = open_sigmastar(write_sigmastar_dump(tmp_path / "f.bin", [spec], is_float=False))
    np.testing.assert_array_equal(dump.values(dump.tensors[0]), [np.inf, -np.inf, 0])


@pytest.mark.parametrize("is_float", [True, False])
def test_padding_of_innermost_dimension_is_cropped(tmp_path, is_float):
    data = np.arange(1 * 3 * 3 * 5, dtype=np.int8).reshape(1, 3, 3, 5)
    spec = TensorSpec("t", data, data_type="SGS_S8", scale=1.0, pad_to=8)
    dump = open_sigmastar(write_sigmastar_dump(tmp_path / "p.bin", [spec], is_float=is_float))
    t = dump.tensors[0]
    assert t.size == 3 * 3 * 8 * (4 if is_float else 1)
    np.testing.assert_array_equal(dump.values(t), data.astype(np.float32))


@pytest.mark.parametrize("is_float", [True, False])
def test_text_dump(tmp_path, is_float):
    data = RNG.standard_normal((1, 2, 3, 7)).astype(np.float32) if is_float else \
        RNG.integers(-128, 127, (1, 2, 3, 7)).astype(np.int8)
    specs = [TensorSpec("a", data, "CONV_2D", 0, data_type="float" if is_float else "SGS_S8", scale=0.5),
             TensorSpec("b", data, "RELU", 1, data_type="float" if is_float else "SGS_S8", scale=0.5, constant=True)]
    path = write_sigmastar_dump(tmp_path / "d.txt", specs, is_float=is_float, text=True)
    lines = path.read_text().splitlines()
    assert lines[4] == ("".join(f"{v:.6f}, " for v in data.reshape(-1)[:16]) if is_float
                        else "".join(f"{v:6d}, " for v in data.reshape(-1)[:16]))
    dump = open_sigmastar(path)
    assert dump.text and [t.name for t in dump.tensors] == ["a", "b"]
    expected = np.round(data, 6) if is_float else (data.astype(np.float32) * 0.5)
    for t in dump.tensors:
        np.testing.assert_allclose(dump.values(t), expected, atol=1e-6)


def test_text_dump_with_blank_line_after_size(tmp_path):
    """The SDK's ONNX writer puts an empty line after the size line and one before the closing brace."""
    path = tmp_path / "onnx_NHWC_outtensor_dump.txt"
    path.write_text("isFloat: 1\n//out 0 s: 0.000000 z: 0 type: float name: x bConstant:0 shape:[2, 2] dims:2\n"
                    "op_out[0] Conv_0 = {\n//buffer data size: 16\n\n1.000000, 2.000000, 3.000000, -4.500000, \n"
                    "}\n")
    dump = open_sigmastar(path)
    np.testing.assert_array_equal(dump.values(dump.tensors[0]), [[1, 2], [3, -4.5]])


def bad_bin(tmp_path, body: bytes, name="bad.bin"):
    path = tmp_path / name
    path.write_bytes(b"isFloat: 1\n" + body)
    return path


HEADER = b"//out 0 s: 0.000000 z: 0 type: float name: conv1 bConstant:0 shape:[1, 2] dims:2\nop_out[3] CONV = {\n"


@pytest.mark.parametrize("body, message", [
    (HEADER + b"//buffer data size: 8\n" + b"\0" * 5, "tensor 0 ('conv1'): truncated: the payload has 8 bytes"),
    (HEADER + b"//buffer data size: 6\n" + b"\0" * 6, "not a whole number of 4-byte float values"),
    (HEADER + b"//buffer data size: 4\n" + b"\0" * 4, "the shape [1, 2] needs 2"),
    (HEADER.replace(b"[1, 2]", b"[2, 1]") + b"//buffer data size: 12\n" + b"\0" * 12,
     "more only as padding of the innermost dimension"),
    (HEADER + b"//buffer data size: 4\n" + b"\0" * 8, "unexpected bytes at offset"),
    (HEADER + b"//buffer data size: x\n", "expected the '//buffer data size: N' line"),
    (HEADER.replace(b"op_out[3] CONV = {", b"garbage"), "expected the 'op_out[k] TYPE = {' line"),
    (HEADER.replace(b"dims:2", b"dims:3") + b"//buffer data size: 8\n", "does not match dims:3"),
    (HEADER.replace(b"s: 0.000000", b"s: zz"), "bad number in the header line"),
    (HEADER.replace(b"z: 0", b"z: inf"), "bad number in the header line"),
    (b"//out 0 garbage\n", "tensor 0: bad header line"),
    (b"hello\n", "before the first tensor"),
])
def test_malformed_binary(tmp_path, body, message):
    path = bad_bin(tmp_path, body)
    with pytest.raises(DumpError) as info:
        open_sigmastar(path).values(open_sigmastar(path).tensors[0])
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


def test_second_tensor_truncated_names_it(tmp_path):
    specs = float_specs()
    path = write_sigmastar_dump(tmp_path / "d.bin", specs)
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(DumpError, match=r"tensor 3 \('prob'\): truncated"):
        open_sigmastar(path)


@pytest.mark.parametrize("values, message", [
    ("1.0, x2, 3.0, 4.0,", "bad number 'x2'"),
    ("1.0, 2.0,", "2 values, but the declared 16 bytes"),
])
def test_malformed_text(tmp_path, values, message):
    path = tmp_path / "d.txt"
    path.write_text(f"isFloat: 1\n{HEADER.decode().replace('[1, 2]', '[4]').replace('dims:2', 'dims:1')}"
                    f"//buffer data size: 16\n{values}\n}}\n")
    dump = open_sigmastar(path)
    with pytest.raises(DumpError, match=message):
        dump.values(dump.tensors[0])


def test_text_not_closed(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("isFloat: 1\n" + HEADER.decode() + "//buffer data size: 8\n1.0, 2.0,\n")
    with pytest.raises(DumpError, match=r"tensor 0 \('conv1'\): truncated: its values are not closed"):
        open_sigmastar(path)


@pytest.mark.parametrize("content", [b"", b"isFloat: 2\n", b"\x00" * 10])
def test_not_a_dump(tmp_path, content):
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(DumpError, match="not a SigmaStar dump"):
        open_sigmastar(path)


def test_unknown_fixed_type(tmp_path):
    path = tmp_path / "x.bin"
    path.write_bytes(b"isFloat: 0\n" + HEADER.replace(b"type: float", b"type: SGS_F8") + b"//buffer data size: 2\n")
    with pytest.raises(DumpError, match="unknown type 'SGS_F8'"):
        open_sigmastar(path)


def test_writer_refuses_existing_file_and_symlink(tmp_path):
    target = tmp_path / "mine.bin"
    target.write_bytes(b"keep")
    with pytest.raises(DumpcmpError, match="already exists"):
        write_sigmastar_dump(target, float_specs())
    assert target.read_bytes() == b"keep"
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    write_sigmastar_dump(link, float_specs(), force=True)
    assert target.read_bytes() == b"keep" and not link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.bin", "mine.bin"]


def test_min_max(tmp_path):
    path = tmp_path / "tensor_min_max.txt"
    path.write_text("conv1, min: -1.234567, max: 2.345678;\nscope/x:0, min: 0.000000, max: 31.5;\n")
    assert read_min_max(path) == {"conv1": (-1.234567, 2.345678), "scope/x:0": (0.0, 31.5)}
