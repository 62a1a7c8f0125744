"""After a model-level compare the summary, the largest drop, the advice and the verdict read the rows from RowStore's
columns (issue #35): a `Row` is built only for the rows they print, the drops are measured once, and every answer is
the one the rows themselves give (checked against plain loops over the rows, written here from Row's properties)."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.comparison.compare import compare_runs
from dumpcmp.comparison.rows import ComparisonResult, Row, RowStore

sys.path.insert(0, str(Path(__file__).parent))
from test_row_store import _row, odd_rows  # noqa: E402
from test_stream import TS, _model  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """test_stream's chain of 120 ops (fused ops, ops without dump, one without ground truth, one outside the
    graph) and, outside the graph, tensors with inf, all zero, NaN, a constant device side, a float16 one below
    float16's range and one whose element count differs."""
    root = tmp_path_factory.mktemp("columns")
    dev, gt, graph = _model(root, n=120)
    rng = np.random.default_rng(3)
    tiny = (rng.standard_normal(6) * 1e-6).astype(np.float32)
    for k, (name, x, y) in enumerate([
            ("overflowing", np.array([np.inf, 1, 2, 3], np.float32), np.ones(4, np.float32)),
            ("dead", np.zeros(6, np.float32), rng.standard_normal(6).astype(np.float32)),
            ("nan", np.array([np.nan, 1, 2], np.float32), np.array([1, 2, 3], np.float32)),
            ("flat", np.full(5, 2, np.float32), rng.standard_normal(5).astype(np.float32)),
            ("tiny", tiny.astype(np.float16), tiny),
            ("short", np.ones(5, np.float32), np.ones(3, np.float32))], 1):
        write_dump(dev / f"Relu.{name}.{100 + k}.{TS + 100 + k}", op_name=name, outputs=[TensorData(x)])
        np.save(gt / f"{name}.0.{TS + 100 + k}.npy", y)
    return dev, gt, graph


def _compare(model) -> ComparisonResult:
    dev, gt, graph = model
    return compare_runs(dev, gt, fusion_json=graph)[0]


def _counting(monkeypatch) -> dict[str, int]:
    """Counts the rows RowStore builds and the drops measured; the list of every row must not be built."""
    seen = {"rows": 0, "drops": 0}
    decode, measure = RowStore._decode, ComparisonResult._measure_drops

    def counting_decode(self, k):
        seen["rows"] += 1
        return decode(self, k)

    def counting_measure(self, graph):
        seen["drops"] += 1
        return measure(self, graph)

    def no_list(self):
        raise AssertionError("every row built")

    monkeypatch.setattr(RowStore, "_decode", counting_decode)
    monkeypatch.setattr(RowStore, "materialise", no_list)
    monkeypatch.setattr(ComparisonResult, "_measure_drops", counting_measure)
    return seen


def test_the_summary_advice_and_verdict_build_only_the_rows_they_print(model, monkeypatch) -> None:
    from dumpcmp.output.advice import advise
    from dumpcmp.output.report import verdict

    result = _compare(model)
    assert isinstance(result.rows, RowStore) and len(result) > 150
    seen = _counting(monkeypatch)
    text = result.summary(0.9999)
    advice = advise(result)
    judged = verdict(result, 0.9999)
    result.counts(), result.never_dumped(), result.largest_drop()
    assert "largest drop" in text and "worst 10" in text and judged["largest_drop"] is not None
    assert any(a.rule == "constant-output" for a in advice)
    # the worst ten, first below, largest drop and its upstream, the failed rows, the advised ones: not 150
    assert seen["rows"] <= 40, seen
    assert seen["drops"] == 1  # the summary, the advice and the verdict each ask for the largest drop


def _reference(result: ComparisonResult, threshold: float) -> dict:
    """The questions asked of the rows one by one, from Row's own properties."""
    rows = list(result)
    counts = {"compared": 0, "failed": 0, "skipped": 0, "unmatched": 0}
    for r in rows:
        counts[r.status] += 1
    first = next((k for k, r in enumerate(rows) if r.result is not None and not result.is_constant(r) and
                  not result.below_fp16_range(r) and
                  (r.cosine < threshold or (math.isnan(r.cosine) and (r.overflow or r.dead)))), None)

    def rank(r: Row) -> tuple:
        c = r.cosine
        broken = math.isnan(c) and (r.overflow or r.dead)
        return (math.isnan(c) and not broken, -math.inf if broken else c, r.index)

    worst = sorted((k for k, r in enumerate(rows) if r.result is not None and not result.is_constant(r)),
                   key=lambda k: rank(rows[k]))
    return {"counts": counts, "first": first, "worst": worst[:10], "statuses": [r.status for r in rows],
            "tiny": [k for k, r in enumerate(rows) if result.below_fp16_range(r)],
            "overflow": sum(r.overflow for r in rows)}


@pytest.mark.parametrize("constants", [False, True])
def test_the_columns_answer_as_the_rows_do(model, constants) -> None:
    result = _compare(model)
    if constants:  # a ground-truth file named a constant (golden_index.csv): left out of first below and worst
        bad = result.first_below(0.9999)
        result = dataclasses.replace(result, constant_files=frozenset({bad.pair.ground_truth_ref.path}))
    ref = _reference(result, 0.9999)
    assert ref["tiny"] and ref["overflow"] and {"compared", "failed", "unmatched"} <= set(ref["statuses"])
    assert result.counts() == ref["counts"] and result.statuses() == ref["statuses"]
    assert result.first_below_at(0.9999) == ref["first"] and result.tiny_positions() == ref["tiny"]
    assert [result.rows.index(r) for r in result.worst(10)] == ref["worst"]
    rows = result.rows  # built: the drops as rows name these objects
    assert [(None if u is None else rows[u], rows[k], d) for u, k, d in result.drop_positions()] == result.drops()
    u, k, d = result.largest_drop_at()
    assert result.largest_drop() == (None if u is None else rows[u], rows[k]) and d > 0


def test_a_store_gives_each_field_as_its_rows_do() -> None:
    """Every field, from the columns, from a row someone holds (the object `row` gives), from the kept list, and
    from a store turned into a plain list by a value beyond its columns."""
    rows = odd_rows()
    store = RowStore()
    for r in rows:
        store.append(r)
    names = [f.name for f in dataclasses.fields(Row)]

    def same() -> None:
        for name in names:
            got = store.column(name)
            want = [getattr(store.row(k), name) for k in range(len(store))]
            assert got == want and [type(x) for x in got] == [type(x) for x in want], name

    same()
    held = store.row(2)
    held.fail_reason = "changed by its holder"
    assert store.column("fail_reason")[2] == "changed by its holder"
    same()
    store.materialise()
    same()
    store.release()
    store.append(_row(5, npu_address=2 ** 64))  # a plain list from now on
    same()
    with pytest.raises(AttributeError):
        store.column("nothing")


def test_skipped_rows_and_a_list_of_rows_read_as_the_columns(model) -> None:
    """Rows skipped (a quantized op's raw integers) among the others: the summary, counts, advice and verdict from
    the columns are those of the same rows held as a list."""
    from dumpcmp.output.advice import advise
    from dumpcmp.output.report import verdict

    result = _compare(model)
    store = RowStore()
    rows = []
    for k, r in enumerate(result):
        if k % 7 == 3:
            r = dataclasses.replace(r, result=None, skipped=True, fail_reason="raw integers")
        rows.append(r)
        store.append(r)
    stored = dataclasses.replace(result, rows=store)
    listed = dataclasses.replace(result, rows=rows)
    assert stored.counts()["skipped"] == sum(r.status == "skipped" for r in rows) > 10

    def seen(r: ComparisonResult) -> tuple:
        judged = verdict(r, 0.9999)
        return (r.summary(0.9999), r.counts(), r.never_dumped(), [a.line() for a in advise(r)], judged,
                r.drop_positions(), r.first_below_at(0.9999))

    assert seen(stored) == seen(listed)


def test_a_gate_on_a_metric_builds_only_the_rows_that_fail(model, monkeypatch) -> None:
    from dumpcmp.output.gate import evaluate, parse_bounds

    result = _compare(model)
    listed = dataclasses.replace(result, rows=list(result))
    bounds = parse_bounds(["CosineSimilarity=0.9999"]) + parse_bounds(["RootMeanSquareError=0.001"], below=False)
    want = evaluate(listed, bounds=bounds)
    seen = _counting(monkeypatch)
    got = evaluate(result, bounds=bounds)
    assert got.failing == want.failing and len(got.failing) > 10 and "NaN" in " ".join(got.failing)
    assert seen["rows"] <= len(got.failing)
