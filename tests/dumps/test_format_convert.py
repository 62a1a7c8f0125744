"""dumpcmp.dumps.convert.format_convert and `dumpcmp convert -format` / the original's `convert -d -f -s -o -i -c -t`
(issue #38): device tensors decoded against arrays built by the layout's index formulas written as loops
(helpers.layout_reference), the original's file names, and its errors: exit 2, one line naming file and what.
Where the original's own output is wrong (-f NHWC of a dump whose original shape is NCHW: it slices the wrong axes
or keeps the padding), NumPy is the reference."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dumpcmp
from helpers import layout_reference as ref
from dumpcmp.cli import main
from dumpcmp.dumps import convert as C
from dumpcmp.dumps.dump import TensorData
from dumpcmp.errors import ConfigError, NotFoundError

T0 = 1700000000000000
NAME = f"Conv2D.conv1.3.7.{T0}"      # five parts: op type, op name, task id, stream id, timestamp


@pytest.fixture
def plain():
    rng = np.random.default_rng(38)
    return {"x": rng.standard_normal((1, 20, 5, 5)).astype(np.float32),     # NCHW, C padded to 32
            "m": rng.standard_normal((18, 33)).astype(np.float16),          # ND, M and N padded
            "b": np.arange(6, dtype=np.int32).reshape(2, 3)}


def dump(folder, plain, name=NAME):
    os.makedirs(folder, exist_ok=True)
    return str(dumpcmp.write_dump(
        os.path.join(folder, name), op_name="net/conv1_x",
        inputs=[TensorData(ref.loops_fractal_nz(plain["m"], 16), format="FRACTAL_NZ", original_shape=(18, 33)),
                TensorData(plain["b"])],
        outputs=[TensorData(ref.loops_nc1hwc0(plain["x"], 16), format="NC1HWC0", original_shape=(1, 20, 5, 5))]))


def files(folder):
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_nhwc_crops_the_channels_as_numpy(tmp_path, plain):
    out = str(tmp_path / "out")
    report = C.format_convert(dump(tmp_path / "d", plain), "NHWC", out, tensor="output", index=0)
    assert report.ok and files(out) == [f"{NAME}.output.0.1x5x5x20.npy"]
    np.testing.assert_array_equal(np.load(os.path.join(out, files(out)[0])), plain["x"].transpose(0, 2, 3, 1))


def test_every_tensor_and_the_three_file_types(tmp_path, plain):
    d = dump(tmp_path / "d", plain)
    assert main(["convert", "-d", d, "-f", "ND", "-out", str(tmp_path / "npy")]) == 0
    assert files(tmp_path / "npy") == [f"{NAME}.input.0.18x33.npy", f"{NAME}.input.1.2x3.npy",
                                       f"{NAME}.output.0.1x20x5x5.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "npy" / f"{NAME}.input.0.18x33.npy"), plain["m"])
    assert main(["convert", "-d", d, "-f", "NCHW", "-o", "0", "-t", "bin", "-out", str(tmp_path / "bin")]) == 0
    assert files(tmp_path / "bin") == [f"{NAME}.output.0.1_20_5_5.float32.NCHW.bin"]
    assert (tmp_path / "bin" / files(tmp_path / "bin")[0]).read_bytes() == plain["x"].tobytes()
    # msnpy: the op name part of a five-part name is the dump's op name after its last "/"
    assert main(["convert", "-d", d, "-t", "msnpy", "-out", str(tmp_path / "ms")]) == 0
    stem = f"Conv2D.conv1_x.3.7.{T0}"
    assert files(tmp_path / "ms") == [f"{stem}.input.0.FRACTAL_NZ.npy", f"{stem}.input.1.ND.npy",
                                      f"{stem}.output.0.NC1HWC0.npy"]
    np.testing.assert_array_equal(np.load(tmp_path / "ms" / f"{stem}.output.0.NC1HWC0.npy"),
                                  ref.loops_nc1hwc0(plain["x"], 16))


@pytest.mark.parametrize("flags, words", [
    (["-f", "NCHWX"], "unknown format 'NCHWX'"),
    (["-f", "NCHW", "-i", "5"], "no input 5 (the dump has 2 inputs)"),
    (["-f", "NCHW", "-o", "1"], "no output 1 (the dump has 1 output)"),
    (["-f", "NCHW", "-s", "0,3"], "every dimension must be greater than 0"),
    (["-f", "NCHW", "-s", "a,b"], "expected positive integers"),
    (["-c", "somewhere"], '"-c" or "--custom_script_path" takes effect only when -f exists'),
    (["-o", "0"], '"-o" or "--output_tensor" takes effect only when -f exists'),
    (["-f", "NCHW", "-o", "0", "-i", "0"], "cannot be used together"),
    (["-f", "NCHW", "-t", "txt"], "npy, bin or msnpy"),
])
def test_bad_arguments_exit_2_writing_nothing(tmp_path, plain, capsys, flags, words):
    d = dump(tmp_path / "d", plain)
    assert main(["convert", "-d", d, *flags, "-out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert words in err and err.startswith("dumpcmp: error:") and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err and not (tmp_path / "out").exists()


def test_a_shape_that_does_not_fit_fails_that_tensor_only(tmp_path, plain, capsys):
    d = dump(tmp_path / "d", plain)
    out = tmp_path / "out"
    assert main(["convert", "-d", d, "-f", "ND", "-s", "18,10", "-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"dumpcmp: failed {d}: input 0: -shape [18, 10] does not fit" in err
    # the other tensors are written (the ND one needs no crop; the NC1HWC0 one is cut to ND as stored)
    assert f"{NAME}.input.1.2x3.npy" in files(out) and C.FAILED_LIST in files(out)
    assert (out / C.FAILED_LIST).read_text().startswith(f"{d}\tinput 0: -shape [18, 10] does not fit")


def test_a_converter_that_raises_fails_that_tensor_only(tmp_path, plain, capsys):
    d = dump(tmp_path / "d", plain)
    conv = tmp_path / "custom" / "format_convert"
    conv.mkdir(parents=True)
    (conv / "convert_FRACTAL_NZ_to_ND.py").write_text("def convert(shape_from, shape_to, array):\n"
                                                     "    raise RuntimeError('broken on purpose')\n")
    out = tmp_path / "out"
    assert main(["convert", "-d", d, "-f", "ND", "-c", str(tmp_path / "custom"), "-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "input 0:" in err and "convert_FRACTAL_NZ_to_ND.py: convert() failed: RuntimeError: broken on purpose" \
        in err and "Traceback" not in err
    assert files(out) == sorted([C.FAILED_LIST, f"{NAME}.input.1.2x3.npy", f"{NAME}.output.0.1x20x5x5.npy"])


def test_lists_and_folders(tmp_path, plain, capsys):
    a = dump(tmp_path / "d", plain)
    b = dump(tmp_path / "d", plain, name=f"Relu.relu1.4.{T0}")
    junk = tmp_path / "d" / "notes.txt"
    junk.write_text("not a dump")
    out = tmp_path / "out"
    assert main(["convert", "-d", f"{a},{b}", "-f", "ND", "-out", str(out)]) == 0
    assert len(files(out)) == 6
    # a folder: the file that is not a dump fails, the dumps are converted
    assert main(["convert", "-d", str(tmp_path / "d"), "-f", "ND", "-out", str(tmp_path / "all")]) == 2
    assert len(files(tmp_path / "all")) == 7 and f"failed {junk}" in capsys.readouterr().err
    # a missing file in a list, or -o with a list: nothing written
    with pytest.raises(NotFoundError, match="nope"):
        C.format_convert([a, str(tmp_path / "nope")], "NCHW", tmp_path / "x")
    with pytest.raises(ConfigError, match="single dump file"):
        C.format_convert([a, b], "NCHW", tmp_path / "x", tensor="output", index=0)
    assert not (tmp_path / "x").exists()
    # two inputs with one name: refused, nothing written
    other = dump(tmp_path / "e", plain)
    with pytest.raises(ConfigError, match="two input files"):
        C.format_convert([a, other], "NCHW", tmp_path / "y")
    assert not (tmp_path / "y").exists()


def test_existing_files_refused_unless_force(tmp_path, plain, capsys):
    d = dump(tmp_path / "d", plain)
    out = tmp_path / "out"
    assert main(["convert", "-d", d, "-f", "NCHW", "-o", "0", "-out", str(out)]) == 0
    target = out / f"{NAME}.output.0.1x20x5x5.npy"
    target.write_bytes(b"mine")
    assert main(["convert", "-d", d, "-f", "NCHW", "-o", "0", "-out", str(out)]) == 2
    assert target.read_bytes() == b"mine" and files(out) == [target.name]
    assert "exist" in capsys.readouterr().err
    assert main(["convert", "-d", d, "-f", "NCHW", "-o", "0", "-out", str(out), "--force"]) == 0
    np.testing.assert_array_equal(np.load(target), plain["x"])


def test_dumpcmp_spelling_needs_format_for_its_options(tmp_path, plain, capsys):
    d = dump(tmp_path / "d", plain)
    assert main(["convert", "-type", "offline", "-target", "numpy", "-i", d, "-shape", "1,2",
                 "-o", str(tmp_path / "o")]) == 2
    assert "-shape takes effect only with -format" in capsys.readouterr().err
    assert main(["convert", "-type", "caffe", "-target", "numpy", "-i", d, "-format", "NCHW",
                 "-o", str(tmp_path / "o")]) == 2
    assert "NPU dumps" in capsys.readouterr().err
    assert main(["convert", "-i", d, "-o", str(tmp_path / "o")]) == 2
    assert "needs -type and -target" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_converter_returning_padded_data_is_cut_as_the_original_cuts_it(tmp_path, plain):
    d = dump(tmp_path / "d", plain)
    conv = tmp_path / "custom" / "format_convert"
    conv.mkdir(parents=True)
    (conv / "convert_NC1HWC0_to_NCHW.py").write_text(
        "def convert(shape_from, shape_to, array):\n"
        "    n, c1, h, w, c0 = shape_from\n"
        "    return array.reshape(n, c1, h, w, c0).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w) - 1\n")
    out = tmp_path / "out"
    report = C.format_convert(d, "NCHW", out, tensor="output", index=0, custom=tmp_path / "custom")
    assert report.ok and files(out) == [f"{NAME}.output.0.1x20x5x5.npy"]
    np.testing.assert_array_equal(np.load(out / files(out)[0]), plain["x"] - 1)
