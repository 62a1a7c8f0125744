"""`golden` writes each intermediate, then lets it go (issue #33: a 2 GiB intermediate was held twice, 4.2 GB).

The last output of a batch stayed referenced (a loop variable) while the next batch's run computed it again inside
onnxruntime. Checked with weak references to every intermediate each run returns: none may be alive when the next
run starts (final outputs are kept on purpose: they are the run's result)."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from dumpcmp.onnx.golden import dump_golden  # noqa: E402
from dumpcmp.onnx.runner import Runner  # noqa: E402


def expand_chain(path) -> None:
    """x [1, 256] -> Expand to [512, 256] -> Relu -> Tile x2 -> ReduceSum -> y: intermediates of 0.5-1 MB."""
    shape = numpy_helper.from_array(np.array([512, 256], np.int64), "shape")
    reps = numpy_helper.from_array(np.array([2, 1], np.int64), "reps")
    nodes = [helper.make_node("Expand", ["x", "shape"], ["big"], name="expand"),
             helper.make_node("Relu", ["big"], ["relu"], name="relu"),
             helper.make_node("Tile", ["relu", "reps"], ["tiled"], name="tile"),
             helper.make_node("ReduceSum", ["tiled"], ["y"], name="sum", keepdims=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
                              initializer=[shape, reps])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


@pytest.mark.parametrize("check", [True, False])
def test_no_intermediate_outlives_its_batch(tmp_path, monkeypatch, check):
    model = tmp_path / "m.onnx"
    expand_chain(model)
    earlier: list[weakref.ref] = []
    alive_at_start: list[list[str]] = []
    run = Runner.run

    def watched(self, session, names, feeds):
        alive_at_start.append([name for name, ref in earlier if ref() is not None])
        values = run(self, session, names, feeds)
        for name, value in zip(names, values):
            if name not in self.original_outputs and isinstance(value, np.ndarray):
                earlier.append((name, weakref.ref(value)))
        return values

    monkeypatch.setattr(Runner, "run", watched)
    x = np.linspace(-1, 1, 256, dtype=np.float32).reshape(1, 256)
    result = dump_golden(model, {"x": x}, tmp_path / "g", batch_bytes=1, check=check)  # one output a batch
    assert result.batches == [["big"], ["relu"], ["tiled"], ["y"]]
    assert len(earlier) == 3 and alive_at_start == [[]] * len(alive_at_start)
    # and what was written is right
    tiled = np.load(tmp_path / "g" / next(r.file for r in result.records if r.tensor_name == "tiled"))
    assert np.array_equal(tiled, np.tile(np.maximum(np.broadcast_to(x, (512, 256)), 0), (2, 1)))
    assert np.isclose(result.outputs["y"], tiled.sum(dtype=np.float64), rtol=1e-4)
