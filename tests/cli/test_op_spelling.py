"""One spelling of device op names everywhere (issue #34): a model whose node names hold dots (`Conv.2`, fused on
the device into `Conv.2BatchNormalization.2layer1.relu`, dumped as `Conv_2BatchNormalization_2layer1_relu`) through
compare (summary, gate), locate (text and CSV), report and histogram. dumpcmp's own texts print the graph JSON's
spelling; only the original tool's own CSV cells (TensorIndex, its fail reasons) keep the dump's."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402

FUSED = "Conv.2BatchNormalization.2layer1.relu"
SANITIZED = "Conv_2BatchNormalization_2layer1_relu"


def _model(path):
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, a):
        return numpy_helper.from_array(np.asarray(a, np.float32), name)

    inits = [init("conv.w", rng.standard_normal((4, 3, 3, 3))), init("conv.b", rng.standard_normal(4)),
             init("bn.s", np.ones(4)), init("bn.b", np.zeros(4)), init("bn.m", np.zeros(4)), init("bn.v", np.ones(4)),
             init("conv2.w", rng.standard_normal((4, 4, 3, 3)))]
    nodes = [helper.make_node("Conv", ["x", "conv.w", "conv.b"], ["c1"], name="Conv.2", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["b1"],
                              name="BatchNormalization.2"),
             helper.make_node("Relu", ["b1"], ["r1"], name="layer1.relu"),
             helper.make_node("Conv", ["r1", "conv2.w"], ["c2"], name="layer2.conv", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c2"], ["y"], name="head.sig")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


@pytest.fixture(scope="module")
def dotted(tmp_path_factory):
    base = tmp_path_factory.mktemp("dotted")
    model = base / "m.onnx"
    _model(model)
    assert main(["golden", str(model), "-o", str(base / "gt"), "--seed", "1", "--quiet"]) == 0
    assert main(["simulate", str(model), "--precision", "int8", "--seed", "1", "-o", str(base / "dev"),
                 "--dump-mode", "all", "--quiet"]) == 0
    dump = next(p.parent for p in (base / "dev").rglob(f"*.{SANITIZED}.*"))
    return {"base": base, "model": model, "gt": base / "gt", "dump": dump, "json": base / "dev" / "model.json"}


def test_compare_summary_and_gate_print_the_graph_spelling(dotted, tmp_path, capsys):
    code = main(["compare", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-f", str(dotted["json"]),
                 "-o", str(tmp_path / "out.csv"), "--fail-below", "0.99999"])
    assert code == 1  # the gate fails on the int8 rows: their names are in its text
    text = capsys.readouterr().out
    assert f"{FUSED}:output:0" in text and "layer2.conv:output:0" in text
    assert SANITIZED not in text and "layer2_conv" not in text
    # the original tool's TensorIndex cell keeps the dump's spelling (byte-compatible with the original)
    with open(tmp_path / "out.csv", newline="") as f:
        cells = {r["TensorIndex"] for r in csv.DictReader(f)}
    assert f"{SANITIZED}:output:0" in cells


def test_locate_text_and_csv_print_the_graph_spelling(dotted, tmp_path, capsys):
    assert main(["locate", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-f", str(dotted["json"]),
                 "-o", str(tmp_path / "loc"), str(dotted["model"])]) == 0
    text = capsys.readouterr().out
    assert FUSED in text and SANITIZED not in text and "head_sig" not in text
    with open(tmp_path / "loc" / "locate.csv", newline="") as f:
        ops = [r["NPUOp"] for r in csv.DictReader(f)]
    assert FUSED in ops and "layer2.conv" in ops and "head.sig" in ops
    assert not any(op in ops for op in (SANITIZED, "layer2_conv", "head_sig"))


def test_report_and_histogram_print_the_graph_spelling(dotted, tmp_path, capsys):
    html = tmp_path / "r.html"
    assert main(["compare", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-f", str(dotted["json"]),
                 "-o", str(tmp_path / "out.csv"), "--html", str(html), "--quiet"]) == 0
    page = html.read_text(encoding="utf-8")
    assert f"{FUSED}:output:0" in page
    # the sanitised spelling only inside the original tool's cells: TensorIndex ("...) and its fail reasons ([...)
    for m in re.finditer(re.escape(SANITIZED), page):
        assert page[m.start() - 1] in "\"[" or page[m.start() - 48:m.start()].endswith("dump file for "), \
            page[m.start() - 80:m.end() + 20]
    assert main(["histogram", "-r", str(dotted["gt"]), "-f", str(dotted["json"]), "-o", str(tmp_path / "h"),
                 "--quiet", str(dotted["dump"])]) == 0
    names = [p.name for p in (tmp_path / "h").rglob("*.png")]
    assert any(FUSED in n for n in names) and any("layer2.conv" in n for n in names)
    assert not any(SANITIZED in n or "layer2_conv" in n for n in names)
