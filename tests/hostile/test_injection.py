"""Hostile values in the places a command line or a page is built from them.

bisect: the device command is a shell command line whose placeholders are replaced by shell-quoted values in ONE
pass over the template. A value holding `;`, `$()`, backquotes, quotes, spaces or a placeholder of its own (`{dump}`
inside --device-model) reaches the command as exactly one argument, never as shell syntax: the command here records
its argv, and no marker file any of the values tries to create exists afterwards. (Before the fix, `{dump}` inside
an already substituted --device-model was substituted again, which closed the quotes and ran `-o`'s `;touch ...`.)
"""

from __future__ import annotations

import json
import shlex
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402

RECORD = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"

HOSTILE_OUTPUTS = [  # -o: the folder {dump}, {acl_json} and {graph_json} live in
    "o;touch PWNED_A;/b",
    "o$(touch PWNED_B)x",
    "o`touch PWNED_C`x",
    "o'; touch PWNED_D; echo '",
    'o"; touch PWNED_E; echo "',
    "o {model} {round} x",
]
HOSTILE_MODELS = [  # --device-model: what {model} stands for, with placeholders and shell syntax of its own
    "dev{dump}.om",
    "dev{acl_json}{graph_json}{round}{model}.om",
    "dev'$(touch PWNED_F)'`touch PWNED_G`;touch PWNED_H {dump}.om",
    "dev\"{dump}\" 'x'.om",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    base = tmp_path_factory.mktemp("inject")
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = base / "net.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model)
    dump_golden(model, {"x": np.arange(-2, 2, dtype=np.float32).reshape(1, 4)}, base / "gt")
    return model, base / "gt"


@pytest.mark.parametrize("output, device_model", list(zip(HOSTILE_OUTPUTS, HOSTILE_MODELS * 2)))
def test_bisect_placeholders_are_substituted_once_and_never_run(tiny, tmp_path, monkeypatch, capsys, output,
                                                               device_model):
    model, gt = tiny
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where a relative `touch` would land
    record = tmp_path / "argv.json"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(RECORD)} {shlex.quote(str(record))} " \
              "{model} {acl_json} {dump} {graph_json} {round}; exit 3"
    code = main(["bisect", str(model), "--run", command, "-r", str(gt), "-o", output, "--device-model", device_model])
    assert code == 3, capsys.readouterr()  # the recorder ran, then the device run "failed": the bisect stops
    round_folder = (work / output / "round_01").absolute()
    assert json.loads(record.read_text()) == [
        device_model, str(round_folder / "acl.json"), str(round_folder / "dump"), str(round_folder / "model.json"),
        "1"]
    planted = sorted(p.name for p in tmp_path.rglob("PWNED*"))
    assert planted == [], planted


def test_bisect_placeholders_inside_the_template_are_all_replaced(tiny, tmp_path, monkeypatch):
    # the documented contract still holds: every placeholder, even repeated and glued to other text, is replaced
    model, gt = tiny
    monkeypatch.chdir(tmp_path)
    record = tmp_path / "argv.json"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(RECORD)} {shlex.quote(str(record))} " \
              "--model={model} {acl_json} {acl_json} r{round} {{literal}}; exit 4"
    assert main(["bisect", str(model), "--run", command, "-r", str(gt), "-o", "out"]) == 4
    acl = str((tmp_path / "out" / "round_01" / "acl.json").absolute())
    assert json.loads(record.read_text()) == [f"--model={model}", acl, acl, "r1", "{{literal}}"]
