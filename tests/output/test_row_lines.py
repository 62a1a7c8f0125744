"""The result file's lines made by the core from the rows themselves (`_core.table.row_lines`, `CsvRows`' common
columns, issue #35) against the per-row path (`_RowCells` cells, then `csv_text`): the same bytes for any row
(formula-like and quoted texts, None and empty sides, zero and huge addresses, unmatched rows, data types unknown,
metrics not computed, StandardDeviation's ';' cells, negative and non-finite metrics), any metrics, either address
column, in any number of calls."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.comparison.metrics import compare_arrays
from dumpcmp.comparison.rows import ComparisonResult, Row
from dumpcmp.output.table import CsvRows, _RowCells, csv_safe, csv_text, header
from dumpcmp.support.native import core

_ALPHABET = list("ab1.,;\"\r\n\t =+-%@()[]:\x00\uff1d\u00e9\u4e2d\udcff")
_TEXT = st.one_of(st.text(alphabet=st.sampled_from(_ALPHABET), max_size=6),
                  st.sampled_from(["", "=cmd", "-1", "a;=b", "conv1", "float16", "Conv2D"]))
_ARRAYS = [(np.array([1.0, -2.0, 3.5], np.float32), np.array([1.5, -2.0, 3.0], np.float32)),
           (np.zeros(4, np.float32), np.array([1, 2, 3, 4], np.float32)),
           (np.array([np.nan, 1, np.inf, -1], np.float32), np.array([1, 2, 3, 4], np.float32)),
           (np.array(2.5, np.float32), np.array(2.0, np.float32)),
           (np.array([True, False, True]), np.array([True, True, False])),
           (np.array([1.0, 2.0, -3.0], np.float32), np.array([-1.0, -2.5, 3.0], np.float32)),
           (np.array([1e30, -1e30], np.float32), np.array([-1e-30, 1e-30], np.float32))]


def _results(algorithms):
    return [compare_arrays(x, y, metrics=list(algorithms)) for x, y in _ARRAYS]


@st.composite
def _rows(draw, algorithms):
    results = _results(algorithms)
    out = []
    for k in range(draw(st.integers(0, 8))):
        result = draw(st.sampled_from([None, *results]))
        out.append(Row(
            index=draw(st.integers(0, 2 ** 40)), op_type=draw(_TEXT), npu_dump=draw(_TEXT),
            npu_data_type=draw(st.one_of(st.none(), _TEXT)),
            npu_address=draw(st.one_of(st.none(), st.just(0), st.integers(1, 2 ** 64 - 1))),
            ground_truth=draw(_TEXT), ground_truth_data_type=draw(st.one_of(st.none(), _TEXT)),
            ground_truth_address=draw(st.one_of(st.none(), st.just(0), st.integers(1, 2 ** 64 - 1))),
            tensor_index=draw(st.one_of(st.none(), _TEXT)),
            shape=draw(st.one_of(st.none(), st.lists(st.integers(0, 2 ** 40), max_size=4).map(tuple))),
            result=result, fail_reason=draw(_TEXT),
            unmatched=draw(st.booleans()), data_types_unknown=draw(st.booleans()),
            not_computed=draw(st.sampled_from([frozenset(), frozenset(a for a in algorithms if a != 0),
                                               frozenset(algorithms)]))))
    return out


def _result(algorithms, npu_address, truth_address):
    return ComparisonResult([], tuple(algorithms), "l", "r", "run", npu_has_address=npu_address,
                            ground_truth_has_address=truth_address)


def reference(result, rows):
    cells = _RowCells(result, False, False)
    return csv_text([header(result)] + [cells(r) for r in rows]).encode("utf-8", "surrogateescape")


def written(result, rows, lines=4096, many=False):
    f = io.BytesIO()
    out = CsvRows(f, result, lines=lines)
    if many:
        out.add_many(rows[:2])
        out.add_many(rows[2:])
    else:
        for r in rows:
            out.add(r)
    out.close()
    return f.getvalue()


_ALGORITHMS = st.sampled_from([(0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (0,), (5, 0), (3, 7, 1), (9, 8)])


@settings(max_examples=300, deadline=None)
@given(st.data(), _ALGORITHMS, st.booleans(), st.booleans(), st.integers(1, 5), st.booleans())
def test_any_rows_give_the_per_row_bytes(data, algorithms, npu_address, truth_address, lines, many):
    rows = data.draw(_rows(algorithms))
    result = _result(algorithms, npu_address, truth_address)
    assert written(result, rows, lines, many) == reference(result, rows)


def test_every_kind_of_row_at_once():
    algorithms = tuple(range(10))
    results = _results(algorithms)
    rows = [Row(k, "Conv2D", "=op,1", "float16", 0 if k % 3 else 2 ** 63, "gt\"x", "float32", None, f"op:output:{k}",
                (1, 3, k), result=res, fail_reason="a;-b" if k % 2 else "", not_computed=frozenset({1, 2}) if k == 4
                else frozenset()) for k, res in enumerate(results)]
    rows.append(Row(9, "Const", "w", None, None, "w", None, None, None, None, unmatched=True, fail_reason="no dump"))
    for npu, truth in [(True, False), (False, True), (True, True)]:
        result = _result(algorithms, npu, truth)
        assert written(result, rows) == reference(result, rows)


@pytest.mark.parametrize("extra,overflow", [(True, False), (False, True)])
def test_other_columns_keep_the_per_row_path(extra, overflow):
    algorithms = (0, 1)
    rows = [Row(1, "Add", "a", "float32", 5, "b", "float32", None, "a:output:0", (3,), result=_results(algorithms)[0])]
    result = _result(algorithms, True, False)
    f = io.BytesIO()
    out = CsvRows(f, result, extra=extra, overflow=overflow)
    out.add_many(rows)
    out.close()
    cells = _RowCells(result, extra, overflow)
    assert f.getvalue() == csv_text([header(result, extra=extra, overflow=overflow), cells(rows[0])]).encode()


_FORMULA = re.compile(r"(?:^|;)[\t\r\n]*[\uff1d\uff0b\uff0d+\-=%@]")  # the rule as a regular expression


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(";\t\r\n =+-%@a1.(),\uff1d\uff0b\uff0d\uff0e\u4e2d\udcff\U0001f600")),
               max_size=10))
def test_the_core_formula_rule_is_the_regular_expressions(text):
    assert core.table.formula_like(text) == bool(_FORMULA.search(text))
    assert csv_safe(text) in (text, " " + text)
