"""Names that are not text, through the real command in a child process under a strict UTF-8 locale (en_US.UTF-8,
built by the test: tests/helpers/strict_locale.py), where Python's stdout and stderr refuse what is not UTF-8 and
C.UTF-8 would hide it: dump header strings and file names with bytes that are not UTF-8, graph JSON, quantization
fusion rule and acl.json files with unpaired surrogate escapes (\\udcff).

Every run ends with exit 0 or 2 and no traceback; names are printed escaped (a byte that is not UTF-8 as \\xff);
the result CSV keeps a file name's bytes as they are (the same file on disk), and `diff` reads it back; JSON files
with an unpaired surrogate are refused with one line naming the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from helpers import graphjson as gj
from helpers.hostile import DUMP_NAME, GT_NAME, broken_dumps, dump_bytes
from helpers.strict_locale import environment

BAD_OP = b"\xff\xfe\x80op\xc3("  # the op name in the not_utf8_name dump's header (then a NUL)
BAD_FILE = os.fsdecode(b"Conv2D.conv\xff1.3.1700000000000000")  # a dump file name that is not UTF-8
BAD_GT = os.fsdecode(b"conv\xff1.0.1700000000000000.npy")  # its ground truth


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    env, why = environment(tmp_path_factory.mktemp("locale"))
    if env is None:
        pytest.skip(why)
    env["PYTHONWARNINGS"] = "ignore"
    env["DUMPCMP_NUM_THREADS"] = "1"
    return env


def run(env, *argv, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", *map(os.fspath, argv)], capture_output=True, env=env,
                          timeout=300, cwd=cwd)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {err[-2000:]}"
    assert "Traceback" not in err, err[-3000:]
    # what the locale's strict stdout received is UTF-8 (escapes, not raw bytes or surrogates)
    proc.stdout.decode("utf-8")
    err.encode("utf-8")
    return proc


@pytest.fixture()
def trees(tmp_path):
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / DUMP_NAME).write_bytes(broken_dumps()["not_utf8_name"])
    named = tmp_path / "named"
    named.mkdir()
    (named / BAD_FILE).write_bytes(dump_bytes())
    gt = tmp_path / "gt"
    gt.mkdir()
    np.save(gt / GT_NAME, np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))
    np.save(gt / BAD_GT, np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))
    return dev, named, gt


def test_info_prints_a_header_name_that_is_not_utf8_escaped(strict, trees):
    dev, named, _ = trees
    for target in (dev / DUMP_NAME, dev):
        proc = run(strict, "info", target)
        assert proc.returncode == 0
        assert "op \\xff\\xfe\\x80op\\xc3(" in proc.stdout.decode()
    assert "Conv2D.conv\\xff1.3.1700000000000000" in run(strict, "info", named).stdout.decode()
    # JSON: Python's escapes, the same every run; the name reads back as os.fsdecode would give it
    doc = json.loads(run(strict, "info", "--json", dev / DUMP_NAME).stdout)
    assert doc["paths"][0]["file"]["op_name"] == (BAD_OP + b"\x00").decode("utf-8", "surrogateescape")


def test_view_prints_the_name_escaped(strict, trees, tmp_path):
    dev, _, _ = trees
    proc = run(strict, "view", dev / DUMP_NAME, "-o", tmp_path / "v")
    assert proc.returncode == 0 and "\\xff\\xfe\\x80op" in proc.stdout.decode()
    assert sorted(p.name for p in (tmp_path / "v").iterdir()) == [f"{DUMP_NAME}.input.0.npy",
                                                                  f"{DUMP_NAME}.output.0.npy"]


def test_compare_and_diff_with_a_file_name_that_is_not_utf8(strict, trees, tmp_path):
    _, named, gt = trees
    csv = tmp_path / "r.csv"
    proc = run(strict, "compare", "-l", named, "-r", gt, "-o", csv)
    assert proc.returncode == 0, proc.stderr
    assert "conv\\xff1:output:0" in proc.stdout.decode()  # the table names the op escaped
    assert b",conv\xff1,float32," in csv.read_bytes()  # the file keeps the name's bytes: what is on disk
    assert b"conv\xff1:output:0" in csv.read_bytes()
    again = tmp_path / "r2.csv"
    run(strict, "compare", "-l", named, "-r", gt, "-o", again)
    assert again.read_bytes() == csv.read_bytes()
    proc = run(strict, "diff", csv, again)
    assert proc.returncode == 0, proc.stderr


def test_detail_export_and_convert_with_a_name_that_is_not_utf8(strict, trees, tmp_path):
    _, named, gt = trees
    op = os.fsdecode(b"conv\xff1")
    for fmt in ("csv", "npy"):
        out = tmp_path / f"detail-{fmt}"
        proc = run(strict, "compare", "-l", named, "-r", gt, "-d", op, "-o", out, "--format", fmt)
        assert proc.returncode == 0, proc.stderr.decode()
        files = sorted(os.listdir(os.fsencode(out)))
        assert files and all(b"conv\xff1" in f for f in files if not f.startswith(b"summary")), files
    proc = run(strict, "convert", "-type", "offline", "-target", "dump", "-i", gt, "-o", tmp_path / "dumps")
    assert proc.returncode == 0, proc.stderr.decode()
    made = os.listdir(os.fsencode(tmp_path / "dumps"))
    assert any(b"conv\xff1" in f for f in made), made
    proc = run(strict, "info", tmp_path / "dumps")
    assert proc.returncode == 0 and "op conv\\xff1;" in proc.stdout.decode()  # the header holds the same bytes
    proc = run(strict, "convert", "-type", "offline", "-target", "numpy", "-i", named, "-o", tmp_path / "npys")
    assert proc.returncode == 0, proc.stderr.decode()


def test_an_error_naming_a_path_that_is_not_utf8(strict, tmp_path):
    missing = os.fsdecode(os.fsencode(tmp_path) + b"/no\xffwhere")
    proc = run(strict, "compare", "-l", missing, "-r", missing, "-o", tmp_path / "r.csv")
    assert proc.returncode == 2
    assert "no\\xffwhere" in proc.stderr.decode()


def _graph(nm: str):
    return gj.document(gj.op("conv1", "Conv2D", 1, originals=[nm],
                             outputs=[gj.desc(dtype="DT_FLOAT", layout="NCHW", shape=(1, 2, 2, 2), origin_name=nm,
                                              origin_index=0, origin_shape=(1, 2, 2, 2))]),
                       gj.op(nm, "Relu", 2, inputs=["conv1:0"]))


@pytest.mark.parametrize("escape", ["\\ud800", "\\udcff", "\\ude00\\ud83d"])
def test_graph_json_with_an_unpaired_surrogate_is_refused(strict, trees, tmp_path, escape):
    _, _, gt = trees
    dev = tmp_path / "plain"
    dev.mkdir()
    (dev / DUMP_NAME).write_bytes(dump_bytes())
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(_graph("conv@")).replace("conv@", "conv" + escape), encoding="ascii")
    for argv in (["compare", "-l", dev, "-r", gt, "-f", graph, "-o", tmp_path / "r.csv"],
                 ["compare", "-l", dev, "-r", gt, "-q", graph, "-o", tmp_path / "r.csv"]):
        proc = run(strict, *argv)
        err = proc.stderr.decode()
        assert proc.returncode == 2 and err.count("\n") == 1, err
        assert err.startswith(f"dumpcmp: error: {graph}: ") and "unpaired surrogate" in err, err
        assert not (tmp_path / "r.csv").exists()


def test_graph_json_with_a_surrogate_pair_is_text(strict, trees, tmp_path):
    _, _, gt = trees
    dev = tmp_path / "plain"
    dev.mkdir()
    (dev / DUMP_NAME).write_bytes(dump_bytes())
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(_graph("conv\U0001f600")), encoding="ascii")  # written as \ud83d\ude00
    assert "\\ud83d\\ude00" in graph.read_text()
    proc = run(strict, "compare", "-l", dev, "-r", gt, "-f", graph, "-o", tmp_path / "r.csv")
    assert proc.returncode == 0, proc.stderr.decode()


def test_extract_list_with_a_graph_json_holding_an_unpaired_surrogate(strict, tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu1")], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    graph = tmp_path / "g.json"
    graph.write_text(json.dumps(_graph("relu@")).replace("relu@", "relu\\udcff"), encoding="ascii")
    proc = run(strict, "extract", tmp_path / "m.onnx", "--list", "-f", graph)
    err = proc.stderr.decode()
    assert proc.returncode == 2 and err.startswith(f"dumpcmp: error: {graph}: ") and "\\udcff" in err, err


@pytest.mark.parametrize("doc", [
    b'{"dump": {"dump_list": [], "dump_path": "out", "\\udcff": 1}}',           # a key
    b'{"dump": {"dump_list": [], "dump_path": "out", "\\ud800x": 1}}',
    b'{"dump": {"dump_list": [{"model_name": "m\\ud800"}], "dump_path": "out"}}',  # a value
])
def test_acl_json_check_with_an_unpaired_surrogate(strict, tmp_path, doc):
    (tmp_path / "out").mkdir()
    (tmp_path / "acl.json").write_bytes(doc)
    proc = run(strict, "acl-json", "check", "acl.json", cwd=tmp_path)
    out = proc.stdout.decode()
    assert proc.returncode == 2
    assert "unpaired surrogate escape \\ud" in out and out.startswith("acl.json: error: (file): "), out


def test_acl_json_check_prints_an_unknown_key_that_is_not_ascii(strict, tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "acl.json").write_bytes('{"dump": {"dump_list": [], "dump_path": "out", "中": 1}}'.encode())
    proc = run(strict, "acl-json", "check", "acl.json", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown key '中'" in proc.stdout.decode()


def test_the_escaping_is_the_same_under_c_utf8(strict, trees):
    """C.UTF-8 (surrogateescape on stdio) prints the same escapes: output does not depend on the locale."""
    dev, _, _ = trees
    env = {k: v for k, v in strict.items() if k != "LOCPATH"}
    env["LC_ALL"] = "C.UTF-8"
    assert run(env, "info", dev).stdout == run(strict, "info", dev).stdout


def test_the_child_really_runs_strict(strict):
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.stdout.errors); print('\\udcff')"],
                           capture_output=True, text=True, env=strict)
    assert probe.stdout.startswith("strict") and "UnicodeEncodeError" in probe.stderr
