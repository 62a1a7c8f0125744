"""Hostile ONNX models, each built with onnx.helper in tmp_path, through every command that loads a model (golden,
simulate, extract --list, extract, locate), each command a `dumpcmp` child process: exit 2 with one line naming the
model file and what is wrong, never a traceback, never a signal (a Split with an output named '' made onnxruntime
itself crash with SIGSEGV), never a file read outside the model's folder, never a MemoryError.

The checks live in dumpcmp.onnx.model.check_model (every load goes through it) and dumpcmp.onnx.inputs (the size
of random data)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from helpers import graphjson as gj  # noqa: E402
from helpers.hostile import DUMP_NAME, GT_NAME, dump_bytes  # noqa: E402


def _vi(name="x", elem=TensorProto.FLOAT, shape=(1, 4)):
    return helper.make_tensor_value_info(name, elem, list(shape))


def _model(nodes, inputs, outputs, inits=(), opset=13):
    return helper.make_model(helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits)),
                             opset_imports=[helper.make_opsetid("", opset)])


def _external(location: str, **extra: str):
    w = numpy_helper.from_array(np.ones((1, 4), np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for k, v in {"location": location, "offset": "0", "length": "16", **extra}.items():
        e = w.external_data.add()
        e.key, e.value = k, v
    return _model([helper.make_node("Add", ["x", "w"], ["y"], name="add1")], [_vi()], [_vi("y")], [w])


def hostile_models(folder) -> dict[str, tuple[bytes, str, tuple[str, ...]]]:
    """name -> (model bytes, what the error says, the commands that must refuse it)."""
    outside = folder.parent / f"{folder.name}-secret.bin"
    outside.write_bytes(b"\0" * 16)
    (folder / "w.bin").write_bytes(b"\0" * 16)
    if not (folder / "link.bin").is_symlink():
        (folder / "link.bin").symlink_to(outside)
    every = ("golden", "simulate", "simulate-sigmastar", "extract-list", "extract", "locate")
    split = _model([helper.make_node("Split", ["x"], ["a", ""], name="split1", axis=1),
                    helper.make_node("Relu", ["a"], ["y"], name="relu1")], [_vi()], [_vi("y", shape=(1, 2))])
    split_mid = _model([helper.make_node("Split", ["x"], ["a", "", "c"], name="split1", axis=1, num_outputs=3)],
                       [_vi()], [_vi("a", shape=(1, None))], opset=18)
    then = helper.make_graph([helper.make_node("Neg", ["ghost"], ["t"], name="neg_in_then")], "then", [],
                             [_vi("t")])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="id_in_else")], "else", [],
                              [_vi("e")])
    dangling_sub = _model([helper.make_node("If", ["c"], ["y"], name="if1", then_branch=then, else_branch=other)],
                          [_vi(), _vi("c", TensorProto.BOOL, ())], [_vi("y")])
    bad_name = _model([helper.make_node("Relu", ["x"], ["y"], name="reluAAAA")], [_vi()], [_vi("y")])
    huge = (1 << 20, 1 << 20, 1 << 10)
    return {
        "external_traversal": (_external(f"../{outside.name}").SerializeToString(), "outside the model's folder",
                               every),
        "external_absolute": (_external(str(outside)).SerializeToString(), "outside the model's folder", every),
        "external_bad_offset": (_external("w.bin", offset="1e3").SerializeToString(), "offset '1e3'", every),
        "external_past_the_end": (_external("w.bin", length="999999").SerializeToString(),
                                  "its external data runs to byte 999999 of 'w.bin', which holds 16 bytes", every),
        "external_symlink": (_external("link.bin").SerializeToString(), "'link.bin', a symbolic link", every),
        "missing_initializer": (_model([helper.make_node("Add", ["x", "w"], ["y"], name="add1")], [_vi()],
                                       [_vi("y")]).SerializeToString(), "node 'add1' (Add) reads 'w'", every),
        "dangling_in_subgraph": (dangling_sub.SerializeToString(), "reads 'ghost'", every),
        "undefined_input": (_model([helper.make_node("Relu", ["x"], ["y"], name="relu1")],
                                   [_vi(elem=TensorProto.UNDEFINED)], [_vi("y")]).SerializeToString(),
                            "input 'x' has element type UNDEFINED", every),
        "huge_input": (_model([helper.make_node("Relu", ["x"], ["y"], name="relu1")], [_vi(shape=huge)],
                              [_vi("y", shape=huge)]).SerializeToString(),
                       f"input 'x' (float32 [{', '.join(map(str, huge))}]) would take {4 * (1 << 50)} bytes",
                       ("golden", "simulate", "simulate-sigmastar")),
        "split_empty_output": (split.SerializeToString(), "node 'split1' (Split): its output 1 has an empty name",
                               every),
        "split_empty_middle": (split_mid.SerializeToString(), "its output 1 has an empty name", every),
        "cycle": (_model([helper.make_node("Add", ["x", "b"], ["a"], name="add_a"),
                          helper.make_node("Relu", ["a"], ["b"], name="relu_b")], [_vi()], [_vi("b")])
                  .SerializeToString(), "the graph has a cycle; nodes never ready: add_a, relu_b", every),
        "name_not_utf8": (bad_name.SerializeToString().replace(b"reluAAAA", b"relu\xff\xfe\x80A"),
                          "is not UTF-8 text: b'relu\\xff\\xfe\\x80A'", every),
    }


def _argv(command: str, model, tmp_path) -> list[str]:
    out = str(tmp_path / "out" / command)
    dev, gt, graph = (str(tmp_path / n) for n in ("dev", "gt", "graph.json"))
    return {
        "golden": ["golden", model, "--seed", "1", "-o", out],
        "simulate": ["simulate", model, "--seed", "1", "-o", out],
        "simulate-sigmastar": ["simulate", "--target", "sigmastar", model, "--seed", "1", "-o", out],
        "extract-list": ["extract", model, "--list"],
        "extract": ["extract", model, "--start", "x", "--end", "y", "-l", dev, "-f", graph, "-o", out],
        "locate": ["locate", model, "-l", dev, "-r", gt, "-f", graph, "-o", out],
    }[command]


@pytest.fixture()
def sides(tmp_path):
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / DUMP_NAME).write_bytes(dump_bytes())
    (tmp_path / "gt").mkdir()
    np.save(tmp_path / "gt" / GT_NAME, np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))
    gj.write(tmp_path / "graph.json", gj.document(gj.op("conv1", "Conv2D", 1, originals=["relu1"])))
    (tmp_path / "models").mkdir()
    return tmp_path


CASES = ["external_traversal", "external_absolute", "external_bad_offset", "external_past_the_end", "external_symlink",
         "missing_initializer",
         "dangling_in_subgraph", "undefined_input", "huge_input", "split_empty_output", "split_empty_middle",
         "name_not_utf8"]


@pytest.mark.parametrize("case", CASES)
def test_hostile_model_is_refused_by_every_command(sides, case):
    data, says, commands = hostile_models(sides / "models")[case]
    model = sides / "models" / f"{case}.onnx"
    model.write_bytes(data)
    env = dict(os.environ, PYTHONWARNINGS="ignore", DUMPCMP_NUM_THREADS="1")
    for command in commands:
        proc = subprocess.run([sys.executable, "-m", "dumpcmp", *_argv(command, str(model), sides)],
                              capture_output=True, text=True, env=env, timeout=300, cwd=sides)
        where = f"dumpcmp {command} on {case}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        assert proc.returncode == 2, where  # a signal is negative: SIGSEGV shows as -11
        assert "Traceback" not in proc.stderr, where
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"dumpcmp: error: {model}: "), where
        assert says in lines[0], where
        assert not (sides / "out" / command).exists(), where


def test_optional_empty_names_and_outer_names_are_accepted(tmp_path):
    """What the checks must let through: '' for an optional input or output (Clip's min, Dropout's mask), a subgraph
    reading a value of the graph around it, names that are text beyond ASCII."""
    from dumpcmp.onnx.model import check_model

    inner = helper.make_graph([helper.make_node("Neg", ["y"], ["t"], name="neg_in_then")], "then", [], [_vi("t")])
    other = helper.make_graph([helper.make_node("Identity", ["y"], ["e"], name="id_in_else")], "else", [],
                              [_vi("e")])
    m = _model([helper.make_node("Clip", ["x", "", "hi"], ["c"], name="clip_é"),
                helper.make_node("Dropout", ["c"], ["y", ""], name="drop\U0001f600"),
                helper.make_node("If", ["cond"], ["z"], name="if1", then_branch=inner, else_branch=other)],
               [_vi(), _vi("cond", TensorProto.BOOL, ())], [_vi("z")],
               [numpy_helper.from_array(np.array(6, np.float32), "hi")])
    onnx.checker.check_model(m)
    check_model(m, tmp_path / "m.onnx")
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "golden", str(path), "--seed", "1", "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_external_data_beside_the_model_is_read(tmp_path):
    """The refusal is for locations outside the folder only: a relative one beside the model still loads."""
    from dumpcmp.onnx.model import load_model_with_weights

    (tmp_path / "w.bin").write_bytes(np.full(4, 2, np.float32).tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_external("w.bin").SerializeToString())
    model = load_model_with_weights(path)
    assert numpy_helper.to_array(model.graph.initializer[0]).tolist() == [[2, 2, 2, 2]]
