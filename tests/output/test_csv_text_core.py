"""The result file's and locate's CSV text, made in one core call (`_core.table.csv_text`, issue #35), against the
csv module writing the cells `csv_safe` returns: the same text for any cells (formula-like, quotes, separators, CR
and LF, NUL, lone surrogates, non-ASCII), any row length, either line end."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.output.table import csv_safe, csv_text, locate_csv_text


def reference(table, line_end):
    buf = io.StringIO()
    csv.writer(buf, lineterminator=line_end).writerows([csv_safe(c) for c in row] for row in table)
    return buf.getvalue()


_ALPHABET = list("ab1.,;\"\r\n\t =+-%@()[]\x00\x1f\uff1d\uff0b\uff0d\u00e9\u4e2d\udcff\U0001f600")
_CELLS = st.one_of(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6),
                   st.sampled_from(["NaN", "-0.000000", "1e5", "-inf", "=1", ";-1", "(-0.1;-0.2),(0.1;0.2)",
                                    "[1,3,224,224]", "\t-1", " 1_0 ", "\u0661\u0662", "-nan", "infinity"]),
                   st.text(max_size=8))
_TABLES = st.lists(st.lists(_CELLS, max_size=6), max_size=5)


@settings(max_examples=400, deadline=None)
@given(_TABLES)
def test_any_cells_give_the_csv_modules_text(table):
    assert csv_text(table) == reference(table, "\r\n")
    assert locate_csv_text(table) == reference(table, "\n")


@pytest.mark.parametrize("table", [[[""]], [[]], [["", ""]], [[None, "x"]], [[None]], [[0, "-1", "a\rb"]],
                                   [["a\x00b", "c"]], []])
def test_edge_rows(table):
    assert csv_text(table) == reference(table, "\r\n")
    assert locate_csv_text(table) == reference(table, "\n")


def test_a_cell_csv_safe_refuses_still_raises():
    with pytest.raises(TypeError):  # csv_safe cannot take a number but 0 (as before the core wrote the text)
        csv_text([[5, "a"]])


def test_rows_from_a_generator_and_tuples():
    rows = [("=a", "b,c"), ["d\"e", "-1.5"]]
    assert csv_text(iter(rows)) == reference(rows, "\r\n")
