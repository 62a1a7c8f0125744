"""A model-level compare keeps its rows as compact columns once they are handed on (issue #35): no `Row` per row is
held after the result file has it; `for row in result` rebuilds each row as it is reached, field for field the row
that was handed on, and the summary, advice, gates and tables read the same values as from the rows kept."""

from __future__ import annotations

import copy
import dataclasses
import gc
import math
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.comparison.compare import compare_runs
from dumpcmp.comparison.rows import Row

sys.path.insert(0, str(Path(__file__).parent))
from test_stream import TS, _model  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """The chain of test_stream (fused ops, ops without dump, one without ground truth, one outside the graph) and,
    outside the graph too, a device tensor with inf, one all zero, one whose element count differs."""
    root = tmp_path_factory.mktemp("store")
    dev, gt, graph = _model(root, n=16)
    rng = np.random.default_rng(2)
    for k, (name, x, y) in enumerate([
            ("overflowing", np.array([np.inf, 1, 2, 3], np.float32), np.ones(4, np.float32)),
            ("dead", np.zeros(6, np.float32), rng.standard_normal(6).astype(np.float32)),
            ("short", np.ones(5, np.float32), np.ones(3, np.float32))], 1):
        write_dump(dev / f"Relu.{name}.{100 + k}.{TS + 100 + k}", op_name=name, outputs=[TensorData(x)])
        np.save(gt / f"{name}.0.{TS + 100 + k}.npy", y)
    return dev, gt, graph


def _live_rows() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Row))


def _compare(model, kept=None):
    dev, gt, graph = model
    # the rows as they are handed on, copied: the run's own are let go and rebuilt from the columns
    sinks = None if kept is None else (lambda results: [lambda row: kept.append(copy.copy(row)) for _ in results])
    return compare_runs(dev, gt, fusion_json=graph, row_sinks=sinks)[0]


def test_no_row_is_held_once_compared_nor_by_the_summary_and_the_file(model, tmp_path) -> None:
    before = _live_rows()
    result = _compare(model)
    assert len(result) > 20
    assert _live_rows() == before  # the run's rows are columns now, not Row objects
    text = result.summary()
    assert "first below" in text or "every compared tensor" in text
    assert "largest drop" in text and "worst" in text and "1 device tensors hold NaN or inf" in text
    result.write(tmp_path / "r.csv")
    assert result.counts()["compared"] > 0 and result.never_dumped() is not None
    assert _live_rows() == before


def test_rows_rebuilt_are_the_rows_handed_on_field_by_field(model) -> None:
    from dumpcmp.comparison.rows import RowStore

    kept: list[Row] = []
    result = _compare(model, kept)
    assert isinstance(result.rows, RowStore) and not result.rows.kept
    rebuilt = list(result)
    assert len(rebuilt) == len(kept) == len(result)
    statuses = {r.status for r in kept}
    assert statuses >= {"compared", "failed", "unmatched"}
    for a, b in zip(rebuilt, kept):
        assert a is not b
        for f in dataclasses.fields(Row):
            x, y = getattr(a, f.name), getattr(b, f.name)
            if f.name in ("pair", "result", "sources"):
                assert x is y, f.name
            else:
                assert x == y and type(x) is type(y), (f.name, x, y)


def test_every_consumer_reads_the_same_as_from_the_rows_kept(model, tmp_path) -> None:
    """Summary, records, tables, worst, first below, drops, advice and gates: the same from the columns as from a
    result holding the list of rows."""
    from dumpcmp.output.advice import advise
    from dumpcmp.output.gate import evaluate, parse_bounds, parse_rules

    kept: list[Row] = []
    result = _compare(model, kept)
    listed = dataclasses.replace(result, rows=list(kept))

    def records(r):
        return [{k: ("nan" if isinstance(v, float) and math.isnan(v) else v) for k, v in rec.items()}
                for rec in r.to_records()]

    def seen(r):
        drops = [(None if up is None else up.index, row.tensor_index, d) for up, row, d in r.drops()]
        worst = [(w.index, w.tensor_index) for w in r.worst(4, distinct=True)] + \
            [(w.index, w.tensor_index) for w in r.worst(len(r))]
        first = r.first_below(0.9999)
        advice = advise(r)
        gate = evaluate(r, fail_on=parse_rules(["any"], []), advice=advice,
                        bounds=parse_bounds(["CosineSimilarity=0.99"], columns=["CosineSimilarity"]))
        return (r.summary(0.9999), r.counts(), r.never_dumped(), records(r), r.table(extra=True), drops, worst,
                None if first is None else first.tensor_index, [a.line() for a in advice], gate.text())

    assert seen(result) == seen(listed)
    result.write(tmp_path / "a.csv")
    listed.write(tmp_path / "b.csv")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_the_list_api_keeps_one_object_per_row(model) -> None:
    """Consumers that key rows by identity (advice, gates, the report) see the rows `result.rows` built, whatever
    the summary asked before; `release` lets them go."""
    from dumpcmp.output.report import verdict

    assert verdict(_compare(model), 0.9999)["first_below"] is not None  # it asks first_below and drops, then keys
    result = _compare(model)
    first_worst = result.worst(3)
    first, drops = result.first_below(0.9999), result.drops()
    result.summary()
    rows = result.rows
    ids = {id(r) for r in rows}
    assert len(ids) == len(result) and rows[0] is rows[0] and list(rows) == list(result)
    assert all(id(r) in ids for r in result.worst(5)) and all(r in ids for r in map(id, first_worst))
    assert id(first) in ids and all(id(row) in ids and (up is None or id(up) in ids) for up, row, _ in drops)
    del first, drops
    assert all(id(row) in ids and (up is None or id(up) in ids) for up, row, _ in result.drops())
    assert rows.index(rows[3]) == 3
    before = _live_rows()
    del first_worst
    result.release()
    assert _live_rows() < before - len(result) // 2


def sources() -> tuple:
    return (np.zeros(1), np.zeros(1))


def _row(k: int, **fields) -> Row:
    base = dict(index=k, op_type="Conv2D", npu_dump=f"op{k}", npu_data_type="float16", npu_address=k * 64,
                ground_truth=f"op{k}", ground_truth_data_type="float32", ground_truth_address=None,
                tensor_index=f"op{k}:output:0", shape=(1, k))
    base.update(fields)
    return Row(**base)


def odd_rows() -> list[Row]:
    """Five rows of the values the columns find hardest: no address, 2**64 - 1, skipped, unmatched, None fields,
    metrics not computed, held sources, an empty shape and op type."""
    return [_row(0), _row(1, npu_address=None, ground_truth_address=2 ** 64 - 1, skipped=True, fail_reason="why"),
            _row(2, unmatched=True, graph_op="g", tensor_index=None, shape=None, npu_data_type=None),
            _row(3, not_computed=frozenset({1, 2}), data_types_unknown=True, failed=True, sources=sources),
            _row(4, shape=(), op_type="", npu_dump="*")]


def test_odd_values_round_trip_and_a_value_beyond_the_columns_keeps_a_list() -> None:
    from dumpcmp.comparison.rows import RowStore

    rows = odd_rows()
    store = RowStore()
    for r in rows:
        store.append(r)
    assert [store.row(k) for k in range(len(rows))] == rows and store.row(3).sources is sources
    del rows[:]
    again = pickle.loads(pickle.dumps(store))  # a worker's or a user's pickled result
    assert [again.row(k) for k in range(len(store))] == list(store.each()) and again.row(3).sources is sources
    with pytest.raises(IndexError):
        store.row(len(store))
    big = _row(5, npu_address=2 ** 64)  # beyond the address column: the rows become a plain list
    store.append(big)
    assert len(store) == 6 and store[5] is big and store.row(5) is big and store.kept
    store.append(_row(6))
    assert len(store) == 7 and [r.index for r in store.each()] == list(range(7))
