"""`dumpcmp shape`, `dumpcmp convert`, `dumpcmp view`: options (the original tool's single-dash ones and long
ones), files written, messages and exit codes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dumpcmp
from helpers import layout_reference as ref
from dumpcmp.cli import build_parser, main
from dumpcmp.dumps.convert import FAILED_LIST
from dumpcmp.dumps.dump import TensorData

T0 = 1700000000000000
NAME = f"Conv2D.conv1.3.{T0}"


@pytest.fixture
def known(rng):
    return {
        "x": rng.standard_normal((1, 20, 3, 3)).astype(np.float16),
        "w": rng.standard_normal((17, 20, 2, 2)).astype(np.float32),
        "m": rng.standard_normal((18, 33)).astype(np.float32),
    }


@pytest.fixture
def dump(tmp_path, known):
    """inputs NC1HWC0 and FRACTAL_Z with original shapes; output FRACTAL_NZ without one."""
    return dumpcmp.write_dump(
        tmp_path / NAME, op_name="net/conv1",
        inputs=[TensorData(ref.loops_nc1hwc0(known["x"], 16), format="NC1HWC0", original_shape=known["x"].shape),
                TensorData(ref.loops_fractal_z(known["w"], 16), format="FRACTAL_Z",
                           original_shape=known["w"].shape)],
        outputs=[TensorData(ref.loops_fractal_nz(known["m"], 16), format="FRACTAL_NZ")])


def npy(out, kind, index, shape):
    return os.path.join(out, f"{NAME}.{kind}.{index}.{'x'.join(map(str, shape))}.npy")


def test_commands_are_registered():
    text = build_parser().format_help()
    for command in ("shape", "convert", "view"):
        assert command in text


@pytest.mark.parametrize("style", ["original", "long"])
def test_shape_inputs(tmp_path, dump, known, capsys, style):
    out = str(tmp_path / "out")
    if style == "original":
        args = ["shape", "-i", dump, "-format", "NCHW", "-o", out, "-tensor", "input"]
    else:
        args = ["shape", "--input", dump, "--format", "NCHW", "--output", out, "--tensor", "input"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    paths = [npy(out, "input", 0, known["x"].shape), npy(out, "input", 1, known["w"].shape)]
    assert [line.split()[0] for line in lines] == paths
    assert lines[0].split()[1:] == ["float16", "[1,20,3,3]"]
    np.testing.assert_array_equal(np.load(paths[0]), known["x"])
    np.testing.assert_array_equal(np.load(paths[1]), known["w"])


def test_shape_index_and_format(tmp_path, dump, known, capsys):
    out = str(tmp_path / "out")
    assert main(["shape", "-i", dump, "-format", "HWCN", "-o", out, "-tensor", "input", "-index", "1"]) == 0
    hwcn = ref.permute(known["w"], "NCHW", "HWCN")
    assert os.listdir(out) == [os.path.basename(npy(out, "input", 1, hwcn.shape))]
    np.testing.assert_array_equal(np.load(npy(out, "input", 1, hwcn.shape)), hwcn)
    capsys.readouterr()
    assert main(["shape", "-i", dump, "-format", "NCHW", "-o", out, "-tensor", "input", "-index", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error: ") and dump in err and "no input 2" in err


def test_shape_nz_needs_shape(tmp_path, dump, known, capsys):
    out = str(tmp_path / "out")
    assert main(["shape", "-i", dump, "-format", "ND", "-o", out]) == 2
    err = capsys.readouterr().err
    assert "output 0" in err and "-shape" in err
    assert main(["shape", "-i", dump, "-format", "ND", "-o", out, "-shape", "18,33"]) == 0
    np.testing.assert_array_equal(np.load(npy(out, "output", 0, (18, 33))), known["m"])
    assert main(["shape", "-i", dump, "-format", "ND", "-o", out, "--shape", "18,0"]) == 2
    assert "greater than 0" in capsys.readouterr().err


def test_shape_custom(tmp_path, dump, known):
    folder = tmp_path / "plug" / "format_convert"
    folder.mkdir(parents=True)
    (folder / "convert_FRACTAL_NZ_to_ND.py").write_text(
        "import numpy as np\n"
        "def convert(shape_from, shape_to, array):\n"
        "    return np.full(shape_to, float(len(shape_from)), np.float32)\n")
    out = str(tmp_path / "out")
    assert main(["shape", "-i", dump, "-format", "ND", "-o", out, "-shape", "18,33",
                 "-custom", str(tmp_path / "plug")]) == 0
    np.testing.assert_array_equal(np.load(npy(out, "output", 0, (18, 33))), np.full((18, 33), 4.0, np.float32))


def test_shape_refuses_to_overwrite(tmp_path, dump, known, capsys):
    out = str(tmp_path / "out")
    args = ["shape", "-i", dump, "-format", "NCHW", "-o", out, "-tensor", "input"]
    assert main(args) == 0
    target = npy(out, "input", 0, known["x"].shape)
    os.truncate(target, 0)
    capsys.readouterr()
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err and os.path.getsize(target) == 0
    assert main(args + ["--force"]) == 0
    np.testing.assert_array_equal(np.load(target), known["x"])


def test_shape_bad_options_are_argparse_errors(dump, tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["shape", "-i", dump, "-format", "NCHW", "-o", str(tmp_path), "-tensor", "weights"])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["shape", "-i", dump, "-o", str(tmp_path)])   # -format is required


def test_shape_not_a_dump(tmp_path, capsys):
    bad = tmp_path / NAME
    bad.write_bytes(b"not a dump at all")
    assert main(["shape", "-i", str(bad), "-format", "NCHW", "-o", str(tmp_path / "out")]) == 2
    assert str(bad) in capsys.readouterr().err


# --- convert -------------------------------------------------------------------------------------------------------

def test_convert_device_tree_with_a_corrupt_file(tmp_path, dump, known, capsys):
    tree = tmp_path / "tree" / "0"
    tree.mkdir(parents=True)
    os.rename(dump, tree / NAME)
    (tree / f"Relu.relu.4.{T0}").write_bytes(b"\x01" * 9)
    (tree / "mapping.csv").write_text("")   # bookkeeping: neither converted nor skipped
    (tree / "notes.md").write_text("x")
    out = tmp_path / "npy"
    assert main(["convert", "-type", "offline", "-target", "numpy", "-i", str(tmp_path / "tree"),
                 "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out.strip() == (f"1 file converted into 3 files in {out}, 1 skipped, 1 failed "
                                    f"(listed in {out / FAILED_LIST})")
    err = captured.err.splitlines()
    assert err[0].startswith(f"dumpcmp: skipped {tree / 'notes.md'}: ")
    assert err[1].startswith(f"dumpcmp: failed {tree / f'Relu.relu.4.{T0}'}: ")
    assert sorted(os.listdir(out / "0")) == sorted(f"{NAME}.{k}.{i}.npy" for k, i in
                                                   (("output", 0), ("input", 0), ("input", 1)))
    np.testing.assert_array_equal(np.load(out / "0" / f"{NAME}.input.0.npy"), ref.loops_nc1hwc0(known["x"], 16))


def test_convert_npy_to_dump_and_back(tmp_path, rng, capsys):
    a = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    src = tmp_path / "npy"
    src.mkdir()
    np.save(src / f"conv1.0.{T0}.npy", a)
    assert main(["convert", "--type", "tf", "--target", "dump", "--input", str(src),
                 "--output", str(tmp_path / "pb")]) == 0
    assert capsys.readouterr().out.startswith("1 file converted into 1 file in")
    assert os.listdir(tmp_path / "pb") == [f"conv1.0.{T0}.pb"]
    assert main(["convert", "-type", "tf", "-target", "numpy", "-i", str(tmp_path / "pb"),
                 "-o", str(tmp_path / "back")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "back" / f"conv1.0.{T0}.npy"), a)
    # offline: a device-style dump with the op type asked for
    assert main(["convert", "-type", "offline", "-target", "dump", "-i", str(src / f"conv1.0.{T0}.npy"),
                 "-o", str(tmp_path / "dev"), "--op-type", "Conv2D"]) == 0
    assert os.listdir(tmp_path / "dev") == [f"Conv2D.conv1.0.{T0}"]


def test_convert_nothing_or_missing_input_exits_2(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["convert", "-type", "caffe", "-target", "dump", "-i", str(tmp_path / "empty"),
                 "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().out.startswith("0 files converted")
    assert main(["convert", "-type", "caffe", "-target", "dump", "-i", str(tmp_path / "nope"),
                 "-o", str(tmp_path / "out")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_convert_refuses_to_overwrite(tmp_path, capsys):
    np.save(tmp_path / f"a.0.{T0}.npy", np.zeros(2, np.float32))
    args = ["convert", "-type", "quant", "-target", "dump", "-i", str(tmp_path / f"a.0.{T0}.npy"),
            "-o", str(tmp_path / "out")]
    assert main(args) == 0
    assert main(args) == 2
    assert "--force" in capsys.readouterr().err
    assert main(args + ["--force"]) == 0


# --- view ----------------------------------------------------------------------------------------------------------

def test_view_summary_and_files(tmp_path, dump, known, capsys):
    out = tmp_path / "v"
    assert main(["view", dump, "-o", str(out), "--txt"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{NAME}: op net/conv1, 2 inputs, 1 output, written to {out}"
    assert lines[1].split()[:8] == ["output.0", "FLOAT", "FRACTAL_NZ", "shape", "[3,2,16,16]", "original", "-", "->"]
    assert lines[2].split()[:7] == ["input.0", "FLOAT16", "NC1HWC0", "shape", "[1,2,3,3,16]", "original",
                                    "[1,20,3,3]"]
    assert lines[2].endswith(f"{NAME}.input.0.npy, {NAME}.input.0.txt")
    assert len(os.listdir(out)) == 6
    text = (out / f"{NAME}.input.0.txt").read_text().split()
    stored = ref.loops_nc1hwc0(known["x"], 16).reshape(-1)
    np.testing.assert_array_equal(np.array([float(s) for s in text]).astype(np.float16), stored)


def test_view_without_txt_and_errors(tmp_path, dump, capsys):
    out = tmp_path / "v"
    assert main(["view", dump, "-o", str(out)]) == 0
    assert sorted(os.listdir(out)) == sorted(f"{NAME}.{k}.{i}.npy" for k, i in
                                             (("output", 0), ("input", 0), ("input", 1)))
    capsys.readouterr()
    assert main(["view", dump, "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["view", str(tmp_path / "missing"), "-o", str(out)]) == 2
    assert "missing" in capsys.readouterr().err
