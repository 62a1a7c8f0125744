"""`dumpcmp locate` on an fp16 underflow: an epsilon of 1e-10 added before a Log is 0 in float16, so where the input
is 0 the device's Log gives -inf. Every op's fp32 replay on its own device inputs agrees with the device (the Add's
replay keeps 1e-10, a difference too small for any metric), so the own-error rule finds no origin; the op whose
output leaves float16's range (nonzero in fp32, 0 in float16 and on the device) is the origin. Through the CLI:
golden, simulate --precision fp16 (output-only and dump_mode all dumps), locate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402

ZEROS = 56


def _net(d: Path, eps: float = 1e-10) -> tuple[Path, Path]:
    """x (4, 64) -> Add(eps) -> Log -> MatMul -> y; x holds ZEROS exact zeros (silence in an audio front end)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(np.array(eps, np.float32), "eps"),
             numpy_helper.from_array((rng.standard_normal((64, 16)) * 0.2).astype(np.float32), "w")]
    nodes = [helper.make_node("Add", ["x", "eps"], ["a"], name="add_eps"),
             helper.make_node("Log", ["a"], ["l"], name="log"),
             helper.make_node("MatMul", ["l", "w"], ["y"], name="proj")]
    graph = helper.make_graph(nodes, "underflow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 16])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, d / "uf.onnx")
    x = np.abs(rng.standard_normal((4, 64))).astype(np.float32) + 0.01
    x.reshape(-1)[rng.choice(x.size, ZEROS, replace=False)] = 0.0
    np.save(d / "x.npy", x)
    return d / "uf.onnx", d / "x.npy"


def _run(tmp_path: Path, dump_mode: str, eps: float = 1e-10) -> tuple[int, str, dict]:
    model, x = _net(tmp_path, eps)
    gt, dump, out = tmp_path / "gt", tmp_path / "dump", tmp_path / "loc"
    assert main(["golden", str(model), "-i", f"x={x}", "-o", str(gt)]) == 0
    extra = ["--dump-mode", "all"] if dump_mode == "all" else []
    assert main(["simulate", str(model), "--precision", "fp16", "-i", f"x={x}", "-o", str(dump), *extra]) == 0
    code = main(["locate", str(model), "-l", str(dump), "-r", str(gt), "-f", str(dump / "model.json"), "-o", str(out),
                 "--json", str(tmp_path / "loc.json")])
    return code, str(out), json.loads((tmp_path / "loc.json").read_text())[0]


@pytest.mark.parametrize("dump_mode", ["output", "all"])
def test_an_fp16_underflow_before_a_log_is_named(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                 dump_mode: str) -> None:
    code, _, data = _run(tmp_path, dump_mode)
    text = capsys.readouterr().out
    assert code == 0
    rows = {r["op"]: r for r in data["rows"]}
    # the device's Log really holds -inf where the input was 0 (the finding as reported)
    assert rows["log"]["total"]["CosineSimilarity"] is None or rows["log"]["verdict"] == "inherited"
    assert data["origin"] == "add_eps", data["statement"]
    assert rows["add_eps"]["verdict"] == "origin"
    assert [r["op"] for r in data["rows"] if r["verdict"] in ("origin", "adds")] == ["add_eps"]
    statement = data["statement"]
    assert statement.startswith("the error starts at add_eps (Add): its output leaves float16's range")
    assert f"{ZEROS} of 256 values are nonzero in the replay (e.g. 1e-10)" in statement
    assert f"log (Log) downstream turns it into {ZEROS} inf" in statement
    assert "no single operator" not in text and "the error starts at add_eps" in text


def test_an_epsilon_float16_keeps_is_no_origin(tmp_path: Path) -> None:
    # 1e-3 is a normal float16: the Log stays finite, nothing leaves the range, no origin is made up
    code, _, data = _run(tmp_path, "output", eps=1e-3)
    assert code == 0 and data["origin"] is None
    assert data["statement"].startswith("no single operator adds error")


def test_range_exit_against_numpy() -> None:
    from dumpcmp.debug.locate import range_exit

    replay = np.array([1e-10, -3e-9, 0.0, 1.0, 7e4, -1e6, 2.0 ** -24, np.inf], np.float32)
    device = np.array([0.0, 0.0, 0.0, 1.0, np.inf, -np.inf, 2.0 ** -24, np.inf], np.float32)
    e = range_exit("FLOAT16", replay, device)
    # by NumPy: nonzero values whose float16 rounding is 0 (and 0 on the device), finite ones whose rounding is inf
    with np.errstate(over="ignore"):
        h = replay.astype(np.float16)
    assert e.underflow == int(((replay != 0) & (h == 0)).sum()) == 2
    assert e.overflow == int((np.isfinite(replay) & np.isinf(h)).sum()) == 2
    assert e.size == 8 and e.example == pytest.approx(1e-10)
    # the device kept the value (it computed in fp32): no exit; an fp32 dump: no range to leave
    assert range_exit("FLOAT16", replay[:2], np.array([1e-10, -3e-9], np.float32)) is None
    assert range_exit("FLOAT", replay, device) is None
