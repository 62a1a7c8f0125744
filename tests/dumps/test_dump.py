"""The dump reader and writer against protobuf itself, NumPy, and corrupted files."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from dumpcmp import DumpError, TensorData, open_dump, open_dumps, write_dump
from dumpcmp.dumps.dump import DATA_TYPES, FORMATS

from helpers.dumpproto import DumpData, current_format

NATIVE = ["float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32", "int64", "uint32", "uint64",
          "bool", "complex64", "complex128"]


def random_values(rng, dtype, shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", NATIVE)
@pytest.mark.parametrize("shape", [(), (1,), (7,), (2, 3, 5), (1, 2, 3, 4, 16)])
def test_native_dtypes_round_trip_zero_copy(tmp_path, rng, dtype, shape):
    values = random_values(rng, dtype, shape)
    path = write_dump(tmp_path / "Op.op.1.1700000000000000", op_name="op", outputs=[values])
    d = open_dump(path)
    t = d.outputs[0]
    assert t.shape == shape and t.size == values.nbytes and t.format == "ND"
    a = t.array()
    assert a.dtype == values.dtype and a.shape == shape
    np.testing.assert_array_equal(a, values)
    assert not a.flags.writeable
    # zero-copy: two arrays of the same tensor share the mapped bytes
    assert np.shares_memory(a, t.array())


@pytest.mark.parametrize(
    "data_type, values",
    [
        ("BF16", [0.0, -0.0, 1.0, -2.5, 3.140625, 2.0**100, -(2.0**-120), np.inf, -np.inf]),
        ("FLOAT8_E5M2", [0.0, 1.0, -1.5, 57344.0, 2.0**-16, np.inf]),
        ("FLOAT8_E4M3FN", [0.0, 1.0, -1.125, 448.0, 2.0**-9]),
        ("FLOAT8_E8M0", [1.0, 2.0**-127, 2.0**127, 0.5]),
        ("FLOAT6_E3M2", [0.0, 28.0, -0.0625, 1.25]),
        ("FLOAT6_E2M3", [0.0, 7.5, -0.125, 1.125]),
        ("FLOAT4_E2M1", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, -6.0, 6.0]),
        ("FLOAT4_E1M2", [0.0, 0.25, 1.75, -1.0, 0.5]),
        ("HIFLOAT8", [0.0, 1.0, -1.125, 32768.0, 2.0**-22, 0.5, 3.0]),
    ],
)
def test_decoded_types_round_trip(tmp_path, data_type, values):
    values = np.array(values, dtype=np.float32)
    path = write_dump(tmp_path / "d", outputs=[TensorData(values, data_type=data_type)])
    t = open_dump(path).outputs[0]
    assert t.data_type == data_type
    got = t.array()
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, values)


@pytest.mark.parametrize("data_type, bits, lo, hi", [("INT4", 4, -8, 7), ("INT2", 2, -2, 1), ("UINT2", 2, 0, 3),
                                                     ("UINT1", 1, 0, 1)])
@pytest.mark.parametrize("n", [1, 3, 8, 13])
def test_packed_subbyte_ints(tmp_path, rng, data_type, bits, lo, hi, n):
    values = rng.integers(lo, hi, size=n, endpoint=True).astype(np.int8 if lo < 0 else np.uint8)
    path = write_dump(tmp_path / "d", outputs=[TensorData(values, data_type=data_type)])
    t = open_dump(path).outputs[0]
    assert t.size == (n * bits + 7) // 8
    # independent packing: low bits first
    codes = values.astype(np.int64) & ((1 << bits) - 1)
    expected = np.zeros(t.size, np.uint8)
    for i, c in enumerate(codes):
        expected[(i * bits) // 8] |= np.uint8(c << ((i * bits) % 8))
    np.testing.assert_array_equal(t.raw(), expected)
    np.testing.assert_array_equal(t.array(), values)


def test_complex32(tmp_path):
    values = np.array([1 + 2j, -0.5 - 0.25j, 65504 + 0j], np.complex64)
    path = write_dump(tmp_path / "d", outputs=[TensorData(values, data_type="COMPLEX32")])
    t = open_dump(path).outputs[0]
    assert t.size == 12
    np.testing.assert_array_equal(t.raw().view(np.float16).astype(np.float32), values.view(np.float32))
    np.testing.assert_array_equal(t.array(), values)


def full_message(rng):
    """A DumpData with every field set, built with protobuf, plus the raw payloads in file order."""
    m = DumpData(version="2.0", dump_time=1700000000123456, op_name="conv1/relu", dfx_message="dfx")
    x = rng.standard_normal((1, 1, 4, 4, 16)).astype(np.float16)
    w = rng.standard_normal((4, 1, 16, 16)).astype(np.float16)
    y = rng.standard_normal((1, 2, 4, 4, 16)).astype(np.float32)
    i0 = m.input.add(data_type=2, format=3, size=x.nbytes, sub_format=0, address=0x1000, offset=5, arg_index=0)
    i0.shape.dim.extend(x.shape)
    i0.original_shape.dim.extend([1, 3, 4, 4])
    i1 = m.input.add(data_type=2, format=4, size=w.nbytes, sub_format=2, address=0x2000, arg_index=1, input_type=1)
    i1.shape.dim.extend(w.shape)
    o = m.output.add(data_type=1, format=3, size=y.nbytes, address=0x3000, offset=7)
    o.shape.dim.extend(y.shape)
    o.original_shape.dim.extend([1, 20, 4, 4])
    o.original_op.name = "relu"
    o.original_op.output_index = 1
    o.original_op.data_type = 1
    o.original_op.format = 0
    o.dim_range.add(dim_start=1, dim_end=4)
    m.buffer.add(buffer_type=0, size=3)
    m.attr.add(name="k", value="v")
    m.space.add(type=0, size=5)
    return m, [x.tobytes(), w.tobytes(), y.tobytes(), b"abc", b"12345"], (x, w, y)


def test_reads_protobuf_written_file(tmp_path, rng):
    m, payloads, (x, w, y) = full_message(rng)
    path = tmp_path / "Conv2D.conv1_relu.2.1700000000123456"
    path.write_bytes(current_format(m, payloads))
    d = open_dump(path)
    assert (d.version, d.dump_time, d.op_name, d.attrs, d.legacy) == ("2.0", 1700000000123456, "conv1/relu",
                                                                       [("k", "v")], False)
    a, b = d.inputs
    assert (a.data_type, a.format, a.shape, a.original_shape, a.address, a.desc.offset) == (
        "FLOAT16", "NC1HWC0", x.shape, (1, 3, 4, 4), 0x1000, 5)
    assert (b.format, b.sub_format, b.desc.arg_index, b.desc.input_type, b.original_shape) == \
        ("FRACTAL_Z", 2, 1, 1, None)
    out = d.outputs[0]
    assert out.original_op == {"name": "relu", "output_index": 1, "data_type": 1, "format": 0}
    assert out.desc.dim_range == [(1, 4)]
    np.testing.assert_array_equal(a.array(), x)
    np.testing.assert_array_equal(b.array(), w)
    np.testing.assert_array_equal(out.array(), y)
    assert bytes(d.buffers[0].raw()) == b"abc" and bytes(d.workspaces[0].raw()) == b"12345"
    # raw segments follow the header in file order: inputs, outputs, buffers, workspaces
    assert a.file_offset == 8 + d.header_size and out.file_offset == b.file_offset + w.nbytes


def test_writer_header_is_byte_identical_to_protobuf(tmp_path, rng):
    m, payloads, (x, w, y) = full_message(rng)
    path = write_dump(
        tmp_path / "d", op_name="conv1/relu", version="2.0", dump_time=1700000000123456, dfx_message="dfx",
        attrs=[("k", "v")],
        inputs=[TensorData(x, format="NC1HWC0", original_shape=(1, 3, 4, 4), address=0x1000, offset=5),
                TensorData(w, format="FRACTAL_Z", sub_format=2, address=0x2000, arg_index=1, input_type=1)],
        outputs=[TensorData(y, format="NC1HWC0", original_shape=(1, 20, 4, 4), address=0x3000, offset=7,
                            original_op={"name": "relu", "output_index": 1, "data_type": 1, "format": 0},
                            dim_range=[(1, 4)])],
        buffers=[b"abc"], workspaces=[b"12345"],
    )
    assert Path(path).read_bytes() == current_format(m, payloads)


def test_read_write_read_is_lossless(tmp_path, rng):
    m, payloads, _ = full_message(rng)
    src = tmp_path / "src"
    src.write_bytes(current_format(m, payloads))
    d = open_dump(src)

    def again(t):
        return TensorData(t.raw(), data_type=t.data_type, format=t.format, shape=t.shape,
                          original_shape=t.original_shape, sub_format=t.sub_format, address=t.address,
                          offset=t.desc.offset, original_op=t.original_op, dim_range=t.desc.dim_range,
                          arg_index=t.desc.arg_index, input_type=t.desc.input_type, raw=True)

    out = write_dump(tmp_path / "copy", op_name=d.op_name, version=d.version, dump_time=d.dump_time,
                     attrs=d.attrs, dfx_message=d._file.dfx_message.decode(),
                     inputs=[again(t) for t in d.inputs], outputs=[again(t) for t in d.outputs],
                     buffers=[t.raw() for t in d.buffers], workspaces=[t.raw() for t in d.workspaces])
    assert Path(out).read_bytes() == src.read_bytes()


def test_unpacked_dims_unknown_fields_and_field_order(tmp_path):
    # Hand-made wire bytes: dims unpacked, an unknown field (number 15) at every level, output before version.
    def varint(v):
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        return bytes(out)

    def field(num, wt, payload):
        return varint(num << 3 | wt) + (varint(len(payload)) + payload if wt == 2 else payload)

    shape = field(1, 0, varint(2)) + field(1, 0, varint(3)) + field(15, 0, varint(9))
    output = field(15, 2, b"zz") + field(2, 0, varint(2)) + field(3, 2, shape) + field(1, 0, varint(1)) + \
        field(6, 0, varint(24))
    header = field(3, 2, output) + field(1, 2, b"2.0") + field(15, 2, b"future") + field(6, 2, b"op")
    data = np.arange(6, dtype=np.float32)
    (tmp_path / "d").write_bytes(len(header).to_bytes(8, "little") + header + data.tobytes())
    d = open_dump(tmp_path / "d")
    assert d.op_name == "op" and d.outputs[0].shape == (2, 3) and d.outputs[0].format == "ND"
    np.testing.assert_array_equal(d.outputs[0].array(), data.reshape(2, 3))


def test_legacy_inline_format(tmp_path, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    y = rng.integers(0, 100, 5).astype(np.int32)
    m = DumpData(version="1.0", dump_time=1600000000000000, op_name="old")
    o = m.output.add(data_type=1, format=2, data=x.tobytes())  # no size: taken from the data
    o.shape.dim.extend(x.shape)
    i = m.input.add(data_type=7, format=2, data=y.tobytes(), size=y.nbytes)
    i.shape.dim.extend(y.shape)
    (tmp_path / "old").write_bytes(m.SerializeToString())
    d = open_dump(tmp_path / "old")
    assert d.legacy and d.version == "1.0"
    np.testing.assert_array_equal(d.outputs[0].array(), x)
    np.testing.assert_array_equal(d.inputs[0].array(), y)


def test_legacy_size_disagreeing_with_data_is_an_error(tmp_path):
    m = DumpData(version="1.0", op_name="old")
    o = m.output.add(data_type=1, format=2, data=b"\0" * 8, size=12)
    o.shape.dim.extend([3])
    (tmp_path / "old").write_bytes(m.SerializeToString())
    with pytest.raises(DumpError, match="size 12 but holds 8 bytes"):
        open_dump(tmp_path / "old")


def small_dump(tmp_path, name="Add.add1.1.1700000000000000"):
    return write_dump(tmp_path / name, op_name="add1",
                      inputs=[np.arange(12, dtype=np.float16).reshape(3, 4)],
                      outputs=[TensorData(np.arange(6, dtype=np.float32), format="NCHW", original_shape=(6,))])


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"abc", "too short"),
    (b"\xff" * 64, "runs past the end"),
    ((10).to_bytes(8, "little") + b"\x00" * 10, "not a DumpData message"),
])
def test_garbage_files(tmp_path, content, message):
    path = tmp_path / "Op.op.1.1700000000000000"
    path.write_bytes(content)
    with pytest.raises(DumpError, match=message) as info:
        open_dump(path)
    assert str(path) in str(info.value)


def test_every_truncation_is_reported(tmp_path):
    good = Path(small_dump(tmp_path)).read_bytes()
    for n in range(len(good)):
        path = tmp_path / "cut"
        path.write_bytes(good[:n])
        with pytest.raises(DumpError) as info:
            open_dump(path)
        assert "cut" in str(info.value)


def test_extra_bytes_are_reported(tmp_path):
    path = small_dump(tmp_path)
    with open(path, "ab") as f:
        f.write(b"xx")
    with pytest.raises(DumpError, match="has extra bytes"):
        open_dump(path)


def test_random_byte_flips_never_crash(tmp_path, rng):
    good = bytearray(Path(small_dump(tmp_path)).read_bytes())
    header_end = 8 + int.from_bytes(good[:8], "little")
    outcomes = {"ok": 0, "error": 0}
    for trial in range(400):
        bad = bytearray(good)
        for _ in range(rng.integers(1, 4)):
            pos = int(rng.integers(0, header_end))
            bad[pos] ^= int(rng.integers(1, 256))
        path = tmp_path / f"flip{trial}"
        path.write_bytes(bytes(bad))
        try:
            d = open_dump(path)
            for t in d.inputs + d.outputs:
                try:
                    t.array()
                except DumpError:
                    pass
            outcomes["ok"] += 1
        except DumpError as error:
            assert str(path) in str(error)
            outcomes["error"] += 1
    assert outcomes["error"] > 0


@pytest.mark.parametrize("field, value, message", [
    ("data_type", 99, "unknown data type number 99"),
    ("format", 77, "unknown format number 77"),
])
def test_unknown_enum_values(tmp_path, field, value, message):
    m = DumpData(version="2.0", op_name="x")
    o = m.output.add(data_type=1, format=2, size=4)
    o.shape.dim.append(1)
    setattr(o, field, value)
    path = tmp_path / "x"
    path.write_bytes(current_format(m, [b"\0" * 4]))
    with pytest.raises(DumpError, match=message):
        open_dump(path)


def test_size_not_matching_shape_is_reported_on_read(tmp_path):
    m = DumpData(version="2.0", op_name="x")
    o = m.output.add(data_type=1, format=2, size=8)
    o.shape.dim.extend([3])
    path = tmp_path / "x"
    path.write_bytes(current_format(m, [b"\0" * 8]))
    t = open_dump(path).outputs[0]
    assert "needs 12 bytes but the dump holds 8" in t.problem()
    with pytest.raises(DumpError, match=r"FLOAT of shape \[3\] needs 12 bytes but the dump holds 8"):
        t.array()


def test_types_without_numeric_value(tmp_path):
    m = DumpData(version="2.0", op_name="x")
    o = m.output.add(data_type=13, format=2, size=5)  # STRING
    o.shape.dim.extend([5])
    path = tmp_path / "x"
    path.write_bytes(current_format(m, [b"hello"]))
    t = open_dump(path).outputs[0]
    assert t.data_type == "STRING"
    assert bytes(t.raw()) == b"hello"
    with pytest.raises(DumpError, match="STRING has no numeric value"):
        t.array()


def test_missing_and_directory(tmp_path):
    with pytest.raises(DumpError, match="cannot open"):
        open_dump(tmp_path / "nope")
    with pytest.raises(DumpError, match="is a directory"):
        open_dump(tmp_path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions")
def test_unreadable(tmp_path):
    path = small_dump(tmp_path)
    os.chmod(path, 0)
    with pytest.raises(DumpError, match="Permission denied"):
        open_dump(path)


def test_array_outlives_the_dump_object(tmp_path):
    path = small_dump(tmp_path)
    a = open_dump(path).inputs[0].array()
    gc.collect()
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float16).reshape(3, 4))


def test_file_changed_after_header_read(tmp_path):
    path = small_dump(tmp_path)
    d = open_dump(path)
    with open(path, "ab") as f:
        f.write(b"more")
    with pytest.raises(DumpError, match="changed on disk"):
        d.outputs[0].array()


def test_open_dumps_reports_each_bad_file(tmp_path):
    good = small_dump(tmp_path)
    (tmp_path / "bad").write_bytes(b"\x01" * 20)
    results = open_dumps([good, tmp_path / "bad", tmp_path / "missing"])
    assert isinstance(results[0], dumpcmp.Dump) and results[0].op_name == "add1"
    assert isinstance(results[1], DumpError) and "bad" in str(results[1])
    assert isinstance(results[2], DumpError) and "cannot open" in str(results[2])


def test_writer_never_leaves_partial_files(tmp_path):
    with pytest.raises(DumpError):
        write_dump(tmp_path / "no_such_dir" / "x", outputs=[np.zeros(3, np.float32)])
    assert not (tmp_path / "no_such_dir").exists()
    with pytest.raises(DumpError, match="do not fill shape"):
        write_dump(tmp_path / "x", outputs=[TensorData(np.zeros(3, np.float32), shape=(2, 2))])
    assert list(tmp_path.iterdir()) == []


def test_enum_tables_match_the_spec():
    assert DATA_TYPES["FLOAT16"] == 2 and DATA_TYPES["BF16"] == 27 and DATA_TYPES["HIFLOAT4_SCALE"] == 42
    assert FORMATS["FRACTAL_NZ"] == 29 and FORMATS["NDC1HWC0"] == 32 and FORMATS["C1HWC0"] == 49
    assert FORMATS["MAX"] == 255 and FORMATS["NULL"] == 42
