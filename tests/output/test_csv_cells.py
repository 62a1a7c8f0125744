"""Formula injection through the result CSV: a text cell a spreadsheet would run as a formula gets a leading space,
also when TABs, CRs or LFs come before the `=` (spreadsheets skip them: "\\t=cmd" ran). Numbers and ordinary names
stay byte for byte as the original tool writes them (tests/oracle)."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.cli import main
from dumpcmp.output.table import csv_safe

TS = 1700000000000000


@pytest.mark.parametrize("cell", ["\t=cmd|' /C calc'!A0", "\r=1+1", "\n=1", "\t\r\n@SUM(1)", "\t+x", "\r-x", "\t%x",
                                  "\t\uff1dx", "a;\t=b", "a;\r\n+b"])
def test_whitespace_before_a_formula_is_neutralised(cell):
    assert csv_safe(cell) == " " + cell


@pytest.mark.parametrize("cell", ["conv1", "\tconv1", "a\t=b", "a\r=b", " =b", "-1.5", "\t-1", "nan", "inf",
                                  "(-0.011;0.957),(-0.010;0.958)", "layer1/conv_2:output:0"])
def test_ordinary_cells_and_numbers_are_kept(cell):
    assert csv_safe(cell) == cell


def test_compare_csv_with_a_tab_formula_op_name(tmp_path):
    # a real run: the op name reaches the CSV's NPUDump and TensorIndex cells behind a space, read back by csv
    dev, gt = tmp_path / "dev", tmp_path / "gt"
    dev.mkdir()
    gt.mkdir()
    name = "\t=cmd|' calc'!A0"
    y = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 1, 4, 4)
    write_dump(dev / f"Relu.{name}.1.{TS}", op_name=name, outputs=[TensorData(y, format="NCHW")])
    np.save(gt / f"{name}.0.{TS}.npy", y)
    out = tmp_path / "result.csv"
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-o", str(out)]) == 0
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    cells = [c for row in rows[1:] for c in row if name in c]
    assert cells and all(c.startswith(" \t=") for c in cells), rows


def test_locate_csv_cells_are_neutralised_as_the_result_files(tmp_path):
    # locate.csv carries op names too (NPUOp, Originals, Inputs, Output): the same rule, numbers and NaN kept
    from dumpcmp.output.table import locate_csv_text

    header = ["Index", "OpType", "NPUOp", "Originals", "Inputs", "Output", "Verdict", "OwnCosine", "OwnRelRMSE", "Note"]
    row = ["1", "Relu", "=HYPERLINK(\"x\")", "a;-b;c", "\t@x", "+y:0", "origin", "-0.5", "NaN", "conv1"]
    rows = list(csv.reader(io.StringIO(locate_csv_text([header, row]), newline="")))
    assert rows == [header, ["1", "Relu", " =HYPERLINK(\"x\")", " a;-b;c", " \t@x", " +y:0", "origin", "-0.5", "NaN",
                             "conv1"]]
