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


def test_bisect_and_its_locate_print_the_graph_spelling(dotted, tmp_path, capsys):
    import shlex
    import sys

    from onnx import numpy_helper

    x = tmp_path / "x.npy"
    np.save(x, np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32))
    faulty = onnx.load(str(dotted["model"]))  # the device's copy: layer2.conv's weights broken
    w = next(t for t in faulty.graph.initializer if t.name == "conv2.w")
    a = numpy_helper.to_array(w)
    w.CopyFrom(numpy_helper.from_array((a + np.random.default_rng(5).standard_normal(a.shape) * 3).astype(np.float32),
                                       "conv2.w"))
    onnx.save(faulty, tmp_path / "faulty.onnx")
    assert main(["golden", str(dotted["model"]), "-i", f"x={x}", "-o", str(tmp_path / "gt"), "--quiet"]) == 0
    run = (f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 -i x={shlex.quote(str(x))} "
           "--acl-json {acl_json} -o {dump}")
    assert main(["bisect", str(dotted["model"]), "--run", run, "-r", str(tmp_path / "gt"), "-o", str(tmp_path / "b"),
                 "--device-model", str(tmp_path / "faulty.onnx")]) == 0
    text = capsys.readouterr().out
    assert "first layer below the threshold 0.99: layer2.conv" in text
    assert "the error starts at layer2.conv (Conv2D)" in text
    assert SANITIZED not in text and "layer2_conv" not in text


def test_extract_log_diff_and_op_errors_print_the_graph_spelling(dotted, tmp_path, capsys):
    # extract: export.log names the originals the fused device op stands for (its dump file keeps the dump's name)
    assert main(["extract", str(dotted["model"]), "--start", "Conv.2", "--end", "layer2.conv",
                 "-l", str(dotted["dump"]), "-f", str(dotted["json"]), "-r", str(dotted["gt"]),
                 "-o", str(tmp_path / "ex")]) == 0
    log = next((tmp_path / "ex").glob("*/export.log")).read_text()
    assert "Dump Layer:[Conv.2, BatchNormalization.2, layer1.relu]" in log and "Dump Layer:[layer2.conv]" in log
    assert f"Output File:Conv2D.{SANITIZED}." in log
    # diff of a result made with the graph and one without: the graph's spelling whichever side has it
    assert main(["compare", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-f", str(dotted["json"]),
                 "-o", str(tmp_path / "a.csv"), "--quiet"]) == 0
    assert main(["compare", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-o", str(tmp_path / "b.csv"),
                 "--quiet"]) == 0
    capsys.readouterr()
    for a, b in (("a", "b"), ("b", "a")):
        assert main(["diff", str(tmp_path / f"{a}.csv"), str(tmp_path / f"{b}.csv"), "--tolerance", "0"]) == 1
        text = capsys.readouterr().out
        assert f"{FUSED}:output:0" in text and SANITIZED not in text and "layer2_conv" not in text
    # compare -d: either spelling finds the op; the messages print the graph's
    args = ["compare", "-l", str(dotted["dump"]), "-r", str(dotted["gt"]), "-f", str(dotted["json"]),
            "-o", str(tmp_path / "d")]
    assert main(args + ["-d", FUSED[:-1]]) == 2
    assert f"did you mean {FUSED}?" in capsys.readouterr().err
    assert main(args + ["-d", SANITIZED, "-t", "output", "-i", "3"]) == 2
    assert f"op '{FUSED}' has no output 3" in capsys.readouterr().err
