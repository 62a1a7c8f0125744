"""Real networks whose rewrites or cuts used to fail (issue 34): basic-pitch's audio CNN (an in-graph CQT; one bias
shared by 18 Convs, which onnxruntime's quantizer copies as `{bias}0`, `{bias}1`, ... onto names the model already
holds: "Duplicate definition of name") through simulate fp16 and int8, and an opset-9/IR-3 ShuffleNet (weights listed
among the graph inputs) through extract, with the region's input from the device dump. Fetched as
tests/helpers/realnets.py does; skipped with the reason when unreachable."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.realnets import REGISTRY, realnet_or_skip

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxruntime.quantization")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.graph.graph_json import load_graph  # noqa: E402


def _run(argv, capsys) -> str:
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, f"dumpcmp {' '.join(argv)} exited {code}: {out.err}"
    return out.out + out.err


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_audio_cnn_with_a_shared_bias_simulates(precision, tmp_path, capsys):
    model = realnet_or_skip("basic_pitch_nmp")
    shape = [f"--shape={a}" for a in REGISTRY["basic_pitch_nmp"].shape_args()]
    _run(["simulate", str(model), "--precision", precision, "--seed", "1", *shape, "-o", str(tmp_path / "dump")],
         capsys)
    graph = load_graph(tmp_path / "dump" / "model.json")
    names = {n.name for n in onnx.load(str(model)).graph.node}
    originals = {o for op in graph.ops for o in graph.original_names(op)}
    assert len(originals & names) > 100  # the network's own names, none of the quantizer's tokens
    assert not any("dcq" in name for op in graph.ops for name in (op.name, *graph.original_names(op)))


def test_ir3_shufflenet_region_is_extracted_from_the_device_dump(tmp_path, capsys):
    model = realnet_or_skip("shufflenet_op9")
    assert onnx.load(str(model)).ir_version == 3
    _run(["golden", str(model), "--seed", "1", "-o", str(tmp_path / "gt")], capsys)
    _run(["simulate", str(model), "--seed", "1", "-o", str(tmp_path / "dump")], capsys)
    out = _run(["extract", str(model), "--start", "n17", "--end", "n27", "-l", str(tmp_path / "dump"), "-f",
                str(tmp_path / "dump" / "model.json"), "-r", str(tmp_path / "gt"), "-o", str(tmp_path / "sub")],
               capsys)
    assert "from device dump Relu.n16." in out
    (folder,) = sorted((tmp_path / "sub").glob("dump_result_*"))
    sub = onnx.load(str(folder / "model.onnx"))
    onnx.checker.check_model(sub, full_check=True)
    assert sub.ir_version == 3
    x = np.load(folder / "inputs" / "r16.npy")
    got = ort.InferenceSession(str(folder / "model.onnx")).run(["r27"], {"r16": x})[0].ravel().astype(np.float64)
    want = np.load(folder / "expected" / "r27.npy").ravel().astype(np.float64)
    cosine = float(got @ want / (np.linalg.norm(got) * np.linalg.norm(want)))
    assert cosine > 0.999, cosine  # fp16 device input, fp32 sub-model: close to the network's ground truth
