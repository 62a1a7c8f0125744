"""`dumpcmp locate` on the default output-only dumps (acl.json dump_mode output, what `dumpcmp simulate` writes
without `--dump-mode all`): an op's inputs are its producers' dumped outputs, found through the graph JSON, and a
model input is fed its ground truth; each row says which inputs came from where. The planted faults of
test_locate.py are named exactly from such dumps too."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

from helpers.locate_nets import simulated_net  # noqa: E402

import dumpcmp  # noqa: E402
from dumpcmp.cli import main  # noqa: E402


def _setup(d: Path, precision: str, *, attention: bool = True, weight: str | None = None,
           dump_mode: str = "output") -> dict:
    return simulated_net(d, precision, attention=attention, weight=weight, dump_mode=dump_mode)


@pytest.mark.parametrize("precision,attention,weight,op", [
    ("fp16", True, "b0b_w", "b0b_convb0b_bnb0b_relu"),     # fused Conv+BN+ReLU
    ("fp16", True, "wq", "att_q"),                          # unfused MatMul in the attention head
    ("int8", False, "b1a_w", "b1a_convb1a_bn"),             # fused Conv+BN in an int8 chain
    ("int8", False, "fc_w", "fc"),                          # unfused Gemm in an int8 chain
])
def test_a_planted_fault_is_named_exactly_from_an_output_only_dump(tmp_path: Path, precision: str, attention: bool,
                                                                   weight: str, op: str) -> None:
    s = _setup(tmp_path, precision, attention=attention, weight=weight)
    assert not any(".input." in p.name for p in s["dump"].rglob("*"))  # really output-only
    r = dumpcmp.locate(s["model"], s["dump"], s["gt"], fusion_json=s["json"])
    origin = r.origin
    assert origin is not None and origin.op == op, r.statement()
    assert origin.own.cosine < 0.99 and origin.inherited is not None and origin.inherited.cosine > 0.999
    assert [x.op for x in r.rows if x.verdict in ("origin", "adds")] == [op]
    assert "from " in origin.note
    if precision == "int8":  # the op alone is replayed on its dequantized input as well, and the note says whence
        assert "the op itself computes differently" in origin.note and "; dequantized inputs: " in origin.note


def test_the_numbers_match_a_full_dump_and_each_row_says_where_its_inputs_came_from(tmp_path: Path) -> None:
    full = _setup(tmp_path / "all", "fp16", weight="b0b_w", dump_mode="all")
    out = _setup(tmp_path / "out", "fp16", weight="b0b_w")
    a = dumpcmp.locate(full["model"], full["dump"], full["gt"], fusion_json=full["json"])
    b = dumpcmp.locate(out["model"], out["dump"], out["gt"], fusion_json=out["json"])
    assert [r.op for r in a.rows] == [r.op for r in b.rows]
    for x, y in zip(a.rows, b.rows):
        assert (x.op, x.verdict) == (y.op, y.verdict)
        assert y.own is not None, y.note
        # a producer's output and its consumer's input are the same device tensor: the same numbers
        assert y.own.cosine == pytest.approx(x.own.cosine, abs=1e-7), y.op
        assert "inputs:" not in x.note  # a full dump: nothing forwarded, notes as before
    rows = {r.op: r for r in b.rows}
    assert rows["b0_silu"].note == "inputs: b0a_bn from b0a_convb0a_bn:output:0, b0_sig from b0_sig:output:0"
    assert rows["trans_Cast_0"].note.endswith("inputs: x from the ground truth (a model input)")


def test_cli_locate_on_an_output_only_dump_names_the_fault(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    s = _setup(tmp_path, "fp16", weight="wq")
    code = main(["locate", str(s["model"]), "-l", str(s["dump"]), "-r", str(s["gt"]), "-f", str(s["json"]),
                 "-o", str(tmp_path / "loc")])
    text = capsys.readouterr().out
    assert code == 0 and "the error starts at att_q" in text
    assert "not replayed" not in (tmp_path / "loc" / "locate.csv").read_text().split("\n", 1)[1]


def test_an_input_neither_dumped_nor_produced_by_a_dumped_op_says_which_and_the_run_goes_on(tmp_path: Path) -> None:
    s = _setup(tmp_path, "fp16", weight="wq")
    next(s["dump"].rglob("Sigmoid.b0_sig.*")).unlink()  # a partial dump: b0_silu reads b0_sig's output
    r = dumpcmp.locate(s["model"], s["dump"], s["gt"], fusion_json=s["json"])
    rows = {x.op: x for x in r.rows}
    assert "b0_sig" not in rows and rows["b0_silu"].verdict == "not replayed"
    assert "input 1 was not dumped, nor was output 0 of its producer b0_sig" in rows["b0_silu"].note
    assert r.origin is not None and r.origin.op == "att_q"
    assert [x.op for x in r.rows if x.verdict == "not replayed"] == ["b0_silu"]
