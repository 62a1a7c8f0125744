"""Issue #35: the result file's per-row fast paths give the cells the general rule gives, on every case tried.

csv_safe skips its number test and its regex where the regex cannot match (first character no formula start, no ';');
the metric cells come from one `MetricResult.formatted()` call where the core computed exactly the row's metrics;
below_fp16_range asks the cheap question first. Each is checked against the rule it shortcuts."""

from __future__ import annotations

import math
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.comparison.rows import ComparisonResult, Row, metric_texts
from dumpcmp.output.table import csv_safe, row_cells
from dumpcmp.support.native import core

_RULE = re.compile(r"(?:^|;)[\t\r\n]*[\uff1d\uff0b\uff0d+\-=%@]")


def reference_csv_safe(cell: str) -> str:
    """docs' rule, written out without a fast path: a number as it is, a formula-like text behind a space."""
    try:
        float(cell)
        return cell
    except ValueError:
        return " " + cell if _RULE.search(cell) else cell


_ALPHABET = st.sampled_from(list("ab0123456789.eE;, \t\r\n\"'+-=%@_:") + ["\uff1d", "\uff0b", "\uff0d", "inf",
                                                                           "nan", "NaN", "\u00e9"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_ALPHABET, max_size=8).map("".join))
def test_csv_safe_matches_the_rule(cell: str) -> None:
    assert csv_safe(cell) == reference_csv_safe(cell)


def test_csv_safe_known_cells() -> None:
    for cell in ["", "NaN", "-0.5", "+1", "1e-3", "-inf", "=cmd", "a;=b", "\t=x", "x;\r\n@y", "\uff1dSUM", "-x", "%",
                 "@", "a;b", ";", "conv1;-", "Conv2D", "[1,3,224,224]", "-", "+-", "1;2"]:
        assert csv_safe(cell) == reference_csv_safe(cell), cell


def _result(metrics: list[int] | None = None) -> object:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(257).astype(np.float32)
    return core.metrics.compare_arrays(x, x + np.float32(1e-3), metrics=metrics)


def test_metric_texts_match_format() -> None:
    full = _result()
    for algos in [tuple(range(10)), (0, 1, 7), (7, 0), (3,), ()]:
        assert metric_texts(full, algos) == [full.format(i) for i in algos]
    part = _result([0, 7])
    for algos in [(0, 7), (7, 0), (0,)]:
        assert metric_texts(part, algos) == [part.format(i) for i in algos]


def test_row_cells_metric_columns_as_per_cell() -> None:
    res = _result()
    for algos, not_computed in [(tuple(range(10)), frozenset()), ((0, 1, 7), frozenset()),
                                (tuple(range(10)), frozenset(range(1, 10)))]:
        row = Row(index=0, op_type="Conv2D", npu_dump="conv", npu_data_type="float16", npu_address=0,
                  ground_truth="conv", ground_truth_data_type="float32", ground_truth_address=None,
                  tensor_index="conv:output:0", shape=(1, 257), result=res, not_computed=not_computed)
        result = ComparisonResult([row], algos, "l", "r", "run")
        cells = row_cells(result, row)
        start = result.header().index("Shape") + 1
        metric_cells = cells[start:start + len(algos)]
        assert metric_cells == ["NaN" if i in not_computed else res.format(i) for i in algos]


def test_below_fp16_range_as_the_rule() -> None:
    tiny = core.metrics.compare_arrays(np.full(8, 1e-6, np.float32), np.full(8, 1e-6, np.float32))
    big = _result()
    empty_nan = core.metrics.compare_arrays(np.full(4, np.nan, np.float32), np.full(4, np.nan, np.float32))
    for res in [tiny, big, empty_nan, None]:
        for dtype in ["float16", "float32", None, "FLOAT16"]:
            row = Row(index=0, op_type="Cast", npu_dump="c", npu_data_type=dtype, npu_address=0, ground_truth="c",
                      ground_truth_data_type="float32", ground_truth_address=None, tensor_index="c:output:0",
                      shape=(8,), result=res)
            expected = res is not None and (dtype or "").lower() == "float16" and res.count > 0 and \
                max(abs(float(res.min_y)), abs(float(res.max_y))) < 6.103515625e-05
            assert ComparisonResult([row], (0,), "l", "r", "run").below_fp16_range(row) is expected
    assert not math.isnan(big.value(0))


def test_streamed_result_file_is_the_whole_tables_csv(tmp_path) -> None:
    """write() streams the CSV in pieces of lines (issue #35: the table is never held whole): its bytes are the
    whole table's `csv_text`, across piece boundaries, with cells that need quoting or a formula guard."""
    from dumpcmp.output.table import csv_text, table, write

    res = _result()
    names = ["conv", "a,b", 'q"uote', "line\nbreak", "=cmd", "x;@y", "\u00e9t\u00e9", "cr\rlf", "-1", "tab\tx"]
    rows = [Row(index=k, op_type="Conv2D", npu_dump=names[k % len(names)], npu_data_type="float16",
                npu_address=k, ground_truth=names[(k * 7) % len(names)], ground_truth_data_type="float32",
                ground_truth_address=None, tensor_index=f"{names[k % 3]}:output:0", shape=(1, k),
                result=res if k % 5 else None, fail_reason="" if k % 5 else names[k % len(names)])
            for k in range(9000)]
    result = ComparisonResult(rows, tuple(range(10)), "l", "r", "run")
    out = write(result, tmp_path / "result.csv")
    assert out.read_bytes() == csv_text(table(result)).encode("utf-8", "surrogateescape")
    assert out.read_bytes().count(b"\r\n") >= 9001
