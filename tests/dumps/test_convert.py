"""dumpcmp.dumps.convert: device tensors decoded into files, dump <-> .npy for every -type, text output, refusals.

Device tensors are built from known plain arrays with the spec's index formulas written as loops
(layout_reference.loops_*), so decoding is checked against the array it came from, not against the codec itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from helpers import layout_reference as ref
from dumpcmp.dumps import convert as C
from dumpcmp.dumps import naming
from dumpcmp.dumps.dump import FORMATS, TensorData
from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NotFoundError
from dumpcmp.dumps.layout import LayoutError

T0 = 1700000000000000
NAME = f"Conv2D.conv1.3.{T0}"


@pytest.fixture
def plain(rng):
    """The known plain tensors behind the test dump."""
    return {
        "x": rng.standard_normal((2, 20, 3, 5)).astype(np.float16),       # NCHW, C = 20: padded to 32
        "w": rng.standard_normal((33, 20, 3, 2)).astype(np.float32),      # NCHW weights, N and C padded
        "m": rng.standard_normal((3, 17, 40)).astype(np.float32),         # ND matrix batch, M and N padded
        "b": np.arange(7, dtype=np.int32) - 3,                             # ND
    }


def write_test_dump(folder, plain, name=NAME, nz_original=False):
    """inputs: NC1HWC0 (fp16), FRACTAL_Z (fp32, C0 16); outputs: FRACTAL_NZ (no original shape), ND int32."""
    x, w, m, b = plain["x"], plain["w"], plain["m"], plain["b"]
    os.makedirs(folder, exist_ok=True)
    return dumpcmp.write_dump(
        os.path.join(folder, name), op_name="net/conv1",
        inputs=[TensorData(ref.loops_nc1hwc0(x, 16), format="NC1HWC0", original_shape=x.shape),
                TensorData(ref.loops_fractal_z(w, 16), format="FRACTAL_Z", original_shape=w.shape)],
        outputs=[TensorData(ref.loops_fractal_nz(m, 16), format="FRACTAL_NZ",
                            original_shape=m.shape if nz_original else None),
                 TensorData(b)])


def converted(out, kind, index, shape, original=NAME):
    return os.path.join(out, f"{original}.{kind}.{index}.{'x'.join(map(str, shape))}.npy")


# --- shape_convert -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["NCHW", "NHWC", "HWCN", "CHWN"])
def test_inputs_decode_to_the_known_arrays(tmp_path, plain, fmt):
    dump = write_test_dump(tmp_path / "d", plain)
    out = str(tmp_path / "out")
    written = C.shape_convert(dump, fmt, out, tensor="input")
    x = ref.permute(plain["x"], "NCHW", fmt)
    w = ref.permute(plain["w"], "NCHW", fmt)
    assert [o.path for o in written] == [converted(out, "input", 0, x.shape), converted(out, "input", 1, w.shape)]
    assert sorted(os.listdir(out)) == sorted(os.path.basename(o.path) for o in written)
    got_x, got_w = (np.load(o.path) for o in written)
    assert got_x.dtype == np.float16 and got_w.dtype == np.float32  # the dump's own dtypes
    np.testing.assert_array_equal(got_x, x)
    np.testing.assert_array_equal(got_w, w)
    assert [(o.kind, o.index, o.shape, o.dtype, o.note) for o in written] == [
        ("input", 0, x.shape, "float16", ""), ("input", 1, w.shape, "float32", "")]


def test_index_selects_one_tensor_and_the_default_kind_is_output(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    out = str(tmp_path / "out")
    [o] = C.shape_convert(dump, "NCHW", out, tensor="input", index=1)
    assert o.path == converted(out, "input", 1, plain["w"].shape)
    assert os.listdir(out) == [os.path.basename(o.path)]
    [o] = C.shape_convert(dump, "ND", out, index=1)
    assert o.path == converted(out, "output", 1, (7,))
    np.testing.assert_array_equal(np.load(o.path), plain["b"])
    with pytest.raises(NotFoundError, match=r"no input 2 \(the dump has 2 inputs\)") as info:
        C.shape_convert(dump, "NCHW", out, tensor="input", index=2)
    assert dump in str(info.value)


def test_fractal_nz_needs_a_shape_without_original(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    out = str(tmp_path / "out")
    with pytest.raises(LayoutError, match="-shape") as info:
        C.shape_convert(dump, "ND", out, index=0)
    assert dump in str(info.value) and "output 0" in str(info.value)
    assert not os.path.exists(out)  # nothing written, not even the folder
    [o] = C.shape_convert(dump, "ND", out, index=0, shape="3,17,40")
    assert o.path == converted(out, "output", 0, (3, 17, 40))
    np.testing.assert_array_equal(np.load(o.path), plain["m"])


def test_fractal_nz_shape_that_does_not_fit_is_refused(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    with pytest.raises(LayoutError, match=r"-shape \[3, 40, 17\]"):
        C.shape_convert(dump, "ND", tmp_path / "out", index=0, shape=(3, 40, 17))
    with pytest.raises(LayoutError, match=r"-shape \[3, 15, 40\]"):   # 15 rows would be one block of 16, not 2
        C.shape_convert(dump, "ND", tmp_path / "out", index=0, shape=(3, 15, 40))


def test_fractal_nz_padded_keeps_the_padding(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    [o] = C.shape_convert(dump, "ND", tmp_path / "out", index=0, padded=True)
    got = np.load(o.path)
    assert got.shape == (3, 32, 48) and o.path.endswith(".output.0.3x32x48.npy")
    np.testing.assert_array_equal(got[:, :17, :40], plain["m"])
    assert not got[:, 17:, :].any() and not got[:, :, 40:].any()


def test_fractal_nz_uses_the_original_shape_when_the_dump_has_it(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain, nz_original=True)
    [o] = C.shape_convert(dump, "ND", tmp_path / "out", index=0)
    np.testing.assert_array_equal(np.load(o.path), plain["m"])


def test_fractal_z_takes_h_and_w_from_shape_without_original(tmp_path, rng):
    w = rng.standard_normal((20, 5, 3, 3)).astype(np.float16)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(ref.loops_fractal_z(w, 16), format="FRACTAL_Z")])
    with pytest.raises(LayoutError, match="H and W"):
        C.shape_convert(dump, "NCHW", tmp_path / "out")
    [o] = C.shape_convert(dump, "HWCN", tmp_path / "out", shape="3,3,5,20")
    np.testing.assert_array_equal(np.load(o.path), ref.permute(w, "NCHW", "HWCN"))


def test_grouped_fractal_z_from_sub_format(tmp_path, rng):
    w = rng.standard_normal((12, 3, 2, 2)).astype(np.float32)   # 4 groups of 3 output channels, 3 input channels
    dev = ref.loops_fractal_z_grouped(w, 4, 16)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(dev, format="FRACTAL_Z", sub_format=4,
                                                                   original_shape=w.shape)])
    [o] = C.shape_convert(dump, "NCHW", tmp_path / "out")
    np.testing.assert_array_equal(np.load(o.path), w)


def test_original_shape_in_another_axis_order(tmp_path, rng):
    """A TensorFlow model records NHWC original shapes; the original op's format says so."""
    x = rng.standard_normal((1, 20, 3, 5)).astype(np.float16)   # NCHW values
    nhwc = ref.permute(x, "NCHW", "NHWC")
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(
        ref.loops_nc1hwc0(x, 16), format="NC1HWC0", original_shape=nhwc.shape,
        original_op={"name": "conv", "output_index": 0, "data_type": 2, "format": FORMATS["NHWC"]})])
    [o] = C.shape_convert(dump, "NCHW", tmp_path / "a")
    np.testing.assert_array_equal(np.load(o.path), x)
    # without the original op's format the order is found by fitting the device shape
    dump2 = dumpcmp.write_dump(tmp_path / "Conv2D.b.1.1", outputs=[TensorData(
        ref.loops_nc1hwc0(x, 16), format="NC1HWC0", original_shape=nhwc.shape)])
    [o] = C.shape_convert(dump2, "NCHW", tmp_path / "b")
    np.testing.assert_array_equal(np.load(o.path), x)


def test_original_shape_that_fits_no_order_is_reported(tmp_path, rng):
    x = rng.standard_normal((1, 32, 3, 5)).astype(np.float16)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(
        ref.loops_nc1hwc0(x, 16), format="NC1HWC0", original_shape=(1, 7, 7, 7))])
    with pytest.raises(LayoutError, match=r"original shape \[1, 7, 7, 7\] does not fit"):
        C.shape_convert(dump, "NCHW", tmp_path / "out")
    [o] = C.shape_convert(dump, "NCHW", tmp_path / "out", padded=True)   # 32 channels: nothing was padded
    assert "original shape [1, 7, 7, 7]" in o.note
    np.testing.assert_array_equal(np.load(o.path), x)


def test_types_as_the_dump_reader_gives_them(tmp_path, rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.standard_normal((1, 3, 2, 2)).astype(ml_dtypes.bfloat16)
    dev = ref.loops_nc1hwc0(x, 16)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[
        TensorData(dev, format="NC1HWC0", original_shape=x.shape),
        TensorData(np.array([-8, 7, 0, 3, -1], np.int8), data_type="INT4")])
    [bf16] = C.shape_convert(dump, "NCHW", tmp_path / "out", index=0)
    [int4] = C.shape_convert(dump, "ND", tmp_path / "out", index=1)
    assert bf16.dtype == "float32" and int4.dtype == "int8"
    np.testing.assert_array_equal(np.load(bf16.path), x.astype(np.float32))
    np.testing.assert_array_equal(np.load(int4.path), [-8, 7, 0, 3, -1])


def test_encoding_a_plain_tensor(tmp_path, rng):
    x = rng.standard_normal((2, 20, 3, 5)).astype(np.float16)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(x, format="NCHW")])
    [o] = C.shape_convert(dump, "NC1HWC0", tmp_path / "out")
    np.testing.assert_array_equal(np.load(o.path), ref.loops_nc1hwc0(x, 16))
    assert o.path.endswith(".output.0.2x2x3x5x16.npy")


def test_unknown_format_and_bad_shape_text(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    with pytest.raises(ConfigError, match="unknown format 'NCWH'"):
        C.shape_convert(dump, "NCWH", tmp_path / "out")
    for bad in ("3,0,40", "3;17", "", "a,b"):
        with pytest.raises(ConfigError, match="-shape|dimension"):
            C.shape_convert(dump, "ND", tmp_path / "out", shape=bad)
    assert C.parse_shape("1, 3,224,224") == (1, 3, 224, 224)


def test_not_a_dump_names_the_file(tmp_path):
    bad = tmp_path / NAME
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00abc")
    with pytest.raises(DumpError, match=NAME):
        C.shape_convert(bad, "NCHW", tmp_path / "out")


def test_refuses_to_overwrite_unless_forced(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    out = tmp_path / "out"
    [first, _] = C.shape_convert(dump, "NCHW", out, tensor="input")
    os.truncate(first.path, 0)   # a marker: a refused run must leave it alone
    with pytest.raises(ConfigError, match="exist.*nothing was written.*--force"):
        C.shape_convert(dump, "NCHW", out, tensor="input")
    assert os.path.getsize(first.path) == 0
    C.shape_convert(dump, "NCHW", out, tensor="input", force=True)
    np.testing.assert_array_equal(np.load(first.path), plain["x"])
    assert sorted(os.listdir(out)) == sorted([os.path.basename(first.path),
                                              os.path.basename(converted(out, "input", 1, plain["w"].shape))])


def test_output_dir_that_is_a_file(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a folder"):
        C.shape_convert(dump, "NCHW", tmp_path / "file")


# --- user converters -----------------------------------------------------------------------------------------------

def write_plugin(root, src, dst, body):
    folder = root / "format_convert"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"convert_{src}_to_{dst}.py").write_text(body)
    return root


PLUGIN_NC1HWC0 = """
import numpy as np
CALLS = []

def convert(shape_from, shape_to, array):
    # the spec's recipe, then times 2 so that the test sees this ran instead of the built-in
    n, c1, h, w, c0 = shape_from
    t = array.reshape(shape_from).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
    return (t[:, :shape_to[1]] * 2).astype(array.dtype)
"""


def test_custom_converter_overrides_the_built_in(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    custom = write_plugin(tmp_path / "plug", "NC1HWC0", "NCHW", PLUGIN_NC1HWC0)
    x_out, w_out = C.shape_convert(dump, "NCHW", tmp_path / "out", tensor="input", custom=custom)
    np.testing.assert_array_equal(np.load(x_out.path), plain["x"] * 2)
    np.testing.assert_array_equal(np.load(w_out.path), plain["w"])   # FRACTAL_Z: no plug-in, built-in


def test_custom_converter_for_a_pair_without_built_in(tmp_path, rng):
    data = rng.standard_normal((4, 6)).astype(np.float32)
    dump = dumpcmp.write_dump(tmp_path / NAME, outputs=[TensorData(data, format="FRACTAL_DECONV")])
    with pytest.raises(LayoutError):
        C.shape_convert(dump, "NCHW", tmp_path / "out")
    custom = write_plugin(tmp_path / "plug", "FRACTAL_DECONV", "NCHW", """
def convert(shape_from, shape_to, array):
    assert shape_from == [4, 6] and shape_to == [2, 3, 2, 2]
    return array[::-1].copy()
""")
    [o] = C.shape_convert(dump, "NCHW", tmp_path / "out", custom=custom, shape="2,3,2,2")
    assert o.path.endswith(".output.0.2x3x2x2.npy")
    np.testing.assert_array_equal(np.load(o.path), data.reshape(-1)[::-1].reshape(2, 3, 2, 2))


@pytest.mark.parametrize("body, message", [
    ("import no_such_module_here\n", "cannot import"),
    ("def convert(shape_from, shape_to, array):\n    return [1, 2]\n", "must return a NumPy array"),
    ("x = 1\n", "defines no function convert"),
])
def test_broken_custom_converter_names_its_file(tmp_path, plain, body, message):
    dump = write_test_dump(tmp_path / "d", plain)
    custom = write_plugin(tmp_path / "plug", "NC1HWC0", "NCHW", body)
    with pytest.raises(ConfigError, match=message) as info:
        C.shape_convert(dump, "NCHW", tmp_path / "out", tensor="input", custom=custom)
    assert "convert_NC1HWC0_to_NCHW.py" in str(info.value)


def test_custom_folder_without_format_convert(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    with pytest.raises(ConfigError, match="format_convert"):
        C.shape_convert(dump, "NCHW", tmp_path / "out", custom=tmp_path)


# --- dump_to_npy ---------------------------------------------------------------------------------------------------

def device_tree(root, plain):
    """Two iterations with equal dump names, a stray file and a corrupt dump."""
    a = write_test_dump(root / "0", plain)
    b = write_test_dump(root / "1", {k: v * 2 for k, v in plain.items()})
    (root / "0" / "README.txt").write_text("notes")
    corrupt = root / "1" / f"Relu.relu1.4.{T0 + 1}"
    corrupt.write_bytes(b"\xff" * 20)
    return a, b, str(corrupt)


@pytest.mark.parametrize("type", ["offline", "sim"])
def test_device_dumps_to_npy_whole_tree(tmp_path, plain, type):
    a, b, corrupt = device_tree(tmp_path / "dump", plain)
    out = tmp_path / "npy"
    report = C.dump_to_npy(tmp_path / "dump", out, type=type)
    assert report.converted == [a, b]
    assert [p.path for p in report.skipped] == [str(tmp_path / "dump" / "0" / "README.txt")]
    assert [p.path for p in report.failed] == [corrupt] and corrupt in report.failed[0].reason
    assert not report.ok
    for rel, src in (("0", plain), ("1", {k: v * 2 for k, v in plain.items()})):
        expected = {
            f"{NAME}.output.0.npy": ref.loops_fractal_nz(src["m"], 16),   # stored layout and shape
            f"{NAME}.output.1.npy": src["b"],
            f"{NAME}.input.0.npy": ref.loops_nc1hwc0(src["x"], 16),
            f"{NAME}.input.1.npy": ref.loops_fractal_z(src["w"], 16),
        }
        assert sorted(os.listdir(out / rel)) == sorted(expected)
        for name, value in expected.items():
            got = np.load(out / rel / name)
            assert got.dtype == value.dtype
            np.testing.assert_array_equal(got, value)
    assert len(report.written) == 8
    listed = (out / C.FAILED_LIST).read_text().splitlines()
    assert len(listed) == 1 and listed[0].startswith(corrupt + "\t")
    assert report.summary().startswith(f"2 files converted into 8 files in {out}, 1 skipped, 1 failed")


def test_dump_to_npy_one_file_and_hashed_names(tmp_path, plain):
    long_op = "layer" * 60
    real = f"Conv2D.{long_op}.3.{T0}"
    hashed = "123456789"
    write_test_dump(tmp_path / "d", plain, name=hashed)
    (tmp_path / "d" / "mapping.csv").write_text(f"{hashed},{real}\n")
    out = tmp_path / "out"
    report = C.dump_to_npy(tmp_path / "d" / hashed, out)
    assert report.ok and report.converted == [str(tmp_path / "d" / hashed)]
    # the converted names are too long for files: hashed, with the real name in the output's mapping.csv
    mapping = naming.read_mapping(out)
    assert sorted(mapping.values()) == sorted(f"{real}.{k}.{i}.npy" for k in ("output", "input") for i in (0, 1))
    for short, name in mapping.items():
        assert (out / short).exists() and short.endswith(".npy") and naming.is_hashed_name(short[:-4])
    by_name = {name: short for short, name in mapping.items()}
    np.testing.assert_array_equal(np.load(out / by_name[f"{real}.output.1.npy"]), plain["b"])


def test_framework_dumps_to_npy(tmp_path, rng):
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    y = rng.standard_normal((6,)).astype(np.float16)
    src = tmp_path / "pb"
    src.mkdir()
    dumpcmp.write_dump(src / f"conv1.0.{T0}.pb", op_name="conv1", outputs=[TensorData(x, format="NCHW")])
    # several outputs: the file's output index picks one
    dumpcmp.write_dump(src / f"split.1.{T0}.pb", op_name="split", outputs=[TensorData(x), TensorData(y)])
    dumpcmp.write_dump(src / f"fc.0.{T0}.quant", op_name="fc", outputs=[TensorData(y)])
    report = C.dump_to_npy(src, tmp_path / "out", type="caffe")
    assert report.ok and [os.path.basename(p) for p in report.converted] == [f"conv1.0.{T0}.pb", f"split.1.{T0}.pb"]
    assert [os.path.basename(p.path) for p in report.skipped] == [f"fc.0.{T0}.quant"]
    assert "-type caffe" in report.skipped[0].reason
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"conv1.0.{T0}.npy"), x)
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"split.1.{T0}.npy"), y)
    report = C.dump_to_npy(src, tmp_path / "q", type="quant")
    assert [os.path.basename(o.path) for o in report.written] == [f"fc.0.{T0}.npy"]


def test_framework_dump_output_follows_the_ground_truth_rule(tmp_path, rng):
    # The one output-index rule of ground truth (dumps.ground_truth.framework_output, the comparison's): output
    # {idx} of the dump, output 0 when it has fewer outputs; a dump with no output fails. (Before the readers were
    # unified, convert refused a dump of several outputs that lacks output {idx}, where compare read its output 0.)
    x = rng.standard_normal((3,)).astype(np.float32)
    y = rng.standard_normal((2,)).astype(np.float32)
    src = tmp_path / "pb"
    src.mkdir()
    dumpcmp.write_dump(src / f"split.2.{T0}.pb", outputs=[TensorData(x), TensorData(y)])
    dumpcmp.write_dump(src / f"none.0.{T0}.pb", outputs=[])
    dumpcmp.write_dump(src / f"ok.0.{T0}.pb", outputs=[TensorData(x)])
    report = C.dump_to_npy(src, tmp_path / "out", type="tf")
    assert [os.path.basename(p.path) for p in report.failed] == [f"none.0.{T0}.pb"]
    assert "the dump holds no output" in report.failed[0].reason
    assert sorted(os.listdir(tmp_path / "out")) == [C.FAILED_LIST, f"ok.0.{T0}.npy", f"split.2.{T0}.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "out" / f"split.2.{T0}.npy"), x)


def test_nothing_to_convert_is_not_ok(tmp_path):
    (tmp_path / "in").mkdir()
    report = C.dump_to_npy(tmp_path / "in", tmp_path / "out")
    assert not report.ok and report.summary().startswith("0 files converted into 0 files")
    with pytest.raises(NotFoundError, match="no such file"):
        C.dump_to_npy(tmp_path / "missing", tmp_path / "out")


def test_directory_conversion_refuses_to_overwrite(tmp_path, plain):
    a, b, _ = device_tree(tmp_path / "dump", plain)
    out = tmp_path / "npy"
    C.dump_to_npy(tmp_path / "dump", out)
    # 8 converted files and the failed-file list (device_tree holds one file that does not convert)
    stamp = {p: os.stat(p).st_mtime_ns for p in map(str, out.rglob("*.npy"))}
    with pytest.raises(ConfigError, match=r"already exists \(and 8 more\); nothing was written"):
        C.dump_to_npy(tmp_path / "dump", out)
    assert {p: os.stat(p).st_mtime_ns for p in map(str, out.rglob("*.npy"))} == stamp
    report = C.dump_to_npy(tmp_path / "dump", out, force=True)
    assert len(report.written) == 8


def test_output_folder_inside_the_input_is_not_read(tmp_path, plain):
    write_test_dump(tmp_path, plain)
    report = C.dump_to_npy(tmp_path, tmp_path / "out")
    assert report.ok and len(report.written) == 4
    report = C.dump_to_npy(tmp_path, tmp_path / "out", force=True)   # its own .npy files are not skipped inputs
    assert report.skipped == [] and len(report.written) == 4


# --- npy_to_dump and round trips -----------------------------------------------------------------------------------

@pytest.mark.parametrize("type, ext", [("caffe", "pb"), ("tf", "pb"), ("quant", "quant")])
def test_framework_round_trip(tmp_path, rng, type, ext):
    arrays = {
        f"conv1.0.{T0}.npy": rng.standard_normal((1, 3, 4, 4)).astype(np.float32),
        f"conv1.1.{T0 + 5}.npy": rng.standard_normal((2, 2, 3, 3, 3)).astype(np.float16),
        f"fc.0.{T0 + 9}.npy": rng.integers(-100, 100, (7, 9)).astype(np.int8),
        f"flag.0.{T0}.npy": rng.integers(0, 2, (5,)).astype(bool),
    }
    src = tmp_path / "npy"
    src.mkdir()
    for name, a in arrays.items():
        np.save(src / name, a)
    (src / "notes.txt").write_text("x")
    (src / "conv1.output.npy").write_bytes(b"")
    report = C.npy_to_dump(src, tmp_path / "dump", type=type)
    assert report.ok and len(report.converted) == 4
    assert sorted(os.path.basename(p.path) for p in report.skipped) == ["conv1.output.npy", "notes.txt"]
    names = sorted(os.listdir(tmp_path / "dump"))
    assert names == sorted(n[:-len("npy")] + ext for n in arrays)
    d = dumpcmp.open_dump(tmp_path / "dump" / f"conv1.0.{T0}.{ext}")
    assert d.op_name == "conv1" and d.dump_time == T0 and len(d.outputs) == 1 and not d.inputs
    assert d.outputs[0].format == ("NHWC" if type == "tf" else "NCHW")
    assert d.outputs[0].original_shape == (1, 3, 4, 4)
    assert dumpcmp.open_dump(tmp_path / "dump" / f"conv1.1.{T0 + 5}.{ext}").outputs[0].format == \
        ("NDHWC" if type == "tf" else "NCDHW")
    assert dumpcmp.open_dump(tmp_path / "dump" / f"fc.0.{T0 + 9}.{ext}").outputs[0].format == "ND"

    back = C.dump_to_npy(tmp_path / "dump", tmp_path / "back", type=type)
    assert back.ok and sorted(os.listdir(tmp_path / "back")) == sorted(arrays)
    for name, a in arrays.items():
        got = np.load(tmp_path / "back" / name)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, a)


@pytest.mark.parametrize("type", ["offline", "sim"])
def test_device_round_trip(tmp_path, rng, type):
    a0 = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
    a1 = rng.integers(0, 9, (5,)).astype(np.int64)
    b0 = rng.standard_normal((2, 8)).astype(np.float16)
    src = tmp_path / "npy"
    (src / "sub").mkdir(parents=True)
    np.save(src / f"conv1.0.{T0}.npy", a0)
    np.save(src / f"conv1.1.{T0 + 3}.npy", a1)
    np.save(src / f"conv1.1.{T0 + 1}.npy", a1 * 0)          # older file of output 1: superseded
    np.save(src / "sub" / f"fc.0.{T0 + 7}.npy", b0)
    np.save(src / f"gap.0.{T0}.npy", b0)
    np.save(src / f"gap.2.{T0}.npy", b0)                    # no output 1: cannot make one dump
    report = C.npy_to_dump(src, tmp_path / "dump", type=type, op_type="Conv2D")
    assert sorted(os.path.basename(p.path) for p in report.failed) == [f"gap.0.{T0}.npy", f"gap.2.{T0}.npy"]
    assert "none for output 1" in report.failed[0].reason
    assert [os.path.basename(p.path) for p in report.skipped] == [f"conv1.1.{T0 + 1}.npy"]
    assert not report.ok
    conv = tmp_path / "dump" / f"Conv2D.conv1.0.{T0 + 3}"      # the newest timestamp of its files
    fc = tmp_path / "dump" / "sub" / f"Conv2D.fc.0.{T0 + 7}"
    assert conv.is_file() and fc.is_file()
    d = dumpcmp.open_dump(conv)
    assert d.op_name == "conv1" and d.dump_time == T0 + 3
    assert [t.format for t in d.outputs] == ["NCHW", "ND"]

    back = C.dump_to_npy(tmp_path / "dump", tmp_path / "back", type=type)
    assert back.ok
    np.testing.assert_array_equal(np.load(tmp_path / "back" / f"{conv.name}.output.0.npy"), a0)
    np.testing.assert_array_equal(np.load(tmp_path / "back" / f"{conv.name}.output.1.npy"), a1)
    np.testing.assert_array_equal(np.load(tmp_path / "back" / "sub" / f"{fc.name}.output.0.npy"), b0)
    assert sorted(p.name for p in (tmp_path / "back").rglob("*.npy")) == sorted(
        [f"{conv.name}.output.0.npy", f"{conv.name}.output.1.npy", f"{fc.name}.output.0.npy"])


def test_npy_that_cannot_become_a_dump_fails_alone(tmp_path, rng):
    src = tmp_path / "npy"
    src.mkdir()
    np.save(src / f"text.0.{T0}.npy", np.array(["a", "b"]))
    (src / f"broken.0.{T0}.npy").write_bytes(b"\x93NUMPY garbage")
    good = rng.standard_normal((3,)).astype(np.float64)
    np.save(src / f"good.0.{T0}.npy", good)
    report = C.npy_to_dump(src, tmp_path / "dump", type="caffe")
    assert sorted(os.path.basename(p.path) for p in report.failed) == [f"broken.0.{T0}.npy", f"text.0.{T0}.npy"]
    assert any("dtype <U1" in p.reason for p in report.failed)
    assert sorted(os.listdir(tmp_path / "dump")) == [C.FAILED_LIST, f"good.0.{T0}.pb"]
    np.testing.assert_array_equal(dumpcmp.open_dump(tmp_path / "dump" / f"good.0.{T0}.pb").outputs[0].array(), good)


def test_convert_dispatches_and_checks_its_options(tmp_path, rng):
    np.save(tmp_path / f"a.0.{T0}.npy", np.ones(3, np.float32))
    report = C.convert("caffe", "dump", tmp_path / f"a.0.{T0}.npy", tmp_path / "out")
    assert [os.path.basename(o.path) for o in report.written] == [f"a.0.{T0}.pb"]
    with pytest.raises(ConfigError, match="-target"):
        C.convert("caffe", "npz", tmp_path, tmp_path / "o")
    with pytest.raises(ConfigError, match="-type"):
        C.convert("onnx", "dump", tmp_path, tmp_path / "o")


# --- view and text -------------------------------------------------------------------------------------------------

def test_view_writes_every_tensor_and_text(tmp_path, plain):
    dump = write_test_dump(tmp_path / "d", plain)
    written = C.view(dump, tmp_path / "v", txt=True)
    names = [os.path.basename(o.path) for o in written]
    assert names == [f"{NAME}.{k}.{i}.{ext}" for k in ("output", "input") for i in (0, 1) for ext in ("npy", "txt")]
    stored = {("output", 0): ref.loops_fractal_nz(plain["m"], 16), ("output", 1): plain["b"],
              ("input", 0): ref.loops_nc1hwc0(plain["x"], 16), ("input", 1): ref.loops_fractal_z(plain["w"], 16)}
    for o in written:
        value = stored[(o.kind, o.index)]
        if o.path.endswith(".npy"):
            np.testing.assert_array_equal(np.load(o.path), value)
        else:
            lines = Path(o.path).read_text().splitlines()
            assert len(lines) == value.size
            np.testing.assert_array_equal(np.array([float(s) for s in lines]).astype(value.dtype),
                                          value.reshape(-1))
    assert Path(tmp_path / "v" / f"{NAME}.output.1.txt").read_text() == "".join(f"{v}\n" for v in plain["b"])
    with pytest.raises(ConfigError, match="already exist"):
        C.view(dump, tmp_path / "v")


def test_text_of_every_float16_reads_back_exactly(tmp_path):
    values = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    values = values[np.isfinite(values)]
    C.write_txt(tmp_path / "h.txt", values, chunk=10000)
    back = np.array([float(s) for s in Path(tmp_path / "h.txt").read_text().splitlines()]).astype(np.float16)
    np.testing.assert_array_equal(back.view(np.uint16), values.view(np.uint16))   # -0.0 too


def test_text_of_float32_and_float64_reads_back_exactly(tmp_path, rng):
    f32 = np.concatenate([rng.standard_normal(5000), 10.0 ** rng.uniform(-44, 38, 5000)]).astype(np.float32)
    f32[:4] = [np.float32(1) / 3, np.finfo(np.float32).max, np.finfo(np.float32).smallest_subnormal, np.inf]
    C.write_txt(tmp_path / "f.txt", f32)
    lines = Path(tmp_path / "f.txt").read_text().splitlines()
    back = np.array([float(s) for s in lines], np.float64).astype(np.float32)
    np.testing.assert_array_equal(back, f32)
    f64 = rng.standard_normal(3000) * 10.0 ** rng.uniform(-300, 300, 3000)
    C.write_txt(tmp_path / "d.txt", f64)
    np.testing.assert_array_equal(np.array([float(s) for s in Path(tmp_path / "d.txt").read_text().split()]), f64)


def test_text_of_integers_bools_and_complex(tmp_path):
    C.write_txt(tmp_path / "i.txt", np.array([[np.iinfo(np.int64).min, 0], [7, np.iinfo(np.int64).max]]))
    assert Path(tmp_path / "i.txt").read_text().split() == [str(np.iinfo(np.int64).min), "0", "7",
                                                       str(np.iinfo(np.int64).max)]
    C.write_txt(tmp_path / "b.txt", np.array([True, False]))
    assert Path(tmp_path / "b.txt").read_text() == "1\n0\n"
    z = np.array([1.5 - 2j, -0.25 + 1e-30j], np.complex64)
    C.write_txt(tmp_path / "c.txt", z)
    lines = Path(tmp_path / "c.txt").read_text().split()
    np.testing.assert_array_equal(np.array([complex(s) for s in lines], np.complex64), z)
    with pytest.raises(DumpcmpError, match="exists"):
        C.write_txt(tmp_path / "c.txt", z)
