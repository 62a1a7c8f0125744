"""Rows handed on a batch at a time (issue #35): `ReorderBuffer.put_many` lets go the same rows in the same order as
`put` of each, to a sink taking them together (`many`) or one by one; `RowStore.extend` keeps the same columns as
`append` of each, a row the columns cannot hold included."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from dumpcmp.comparison.rows import Row, RowStore
from dumpcmp.comparison.stream import ReorderBuffer, RowLayout, Slot, pair_layout
from dumpcmp.graph.graph_json import Op


def _row(index: int = 0, **fields) -> Row:
    base = dict(index=index, op_type="Add", npu_dump=f"op{index}", npu_data_type="float16", npu_address=4096 + index,
                ground_truth=f"gt{index}", ground_truth_data_type="float32", ground_truth_address=None,
                tensor_index=f"op{index}:output:0", shape=(1, index), fail_reason="")
    base.update(fields)
    return Row(**base)


def _fields(r: Row) -> tuple:
    return tuple(getattr(r, f) for f in Row.__dataclass_fields__)


_ODD = [dict(), dict(npu_address=None, ground_truth_address=2 ** 64 - 1, skipped=True, fail_reason="why"),
        dict(unmatched=True, graph_op="g", tensor_index=None, shape=None, npu_data_type=None),
        dict(not_computed=frozenset({1, 2}), data_types_unknown=True, failed=True), dict(shape=(), op_type="")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, len(_ODD) - 1), max_size=12), st.lists(st.integers(1, 5), max_size=6),
       st.sampled_from([None, dict(npu_address=2 ** 64), dict(index=-2 ** 63 - 1), dict(shape=[1, 2])]))
def test_extend_keeps_what_append_keeps(kinds, cuts, odd):
    rows = [_row(k, **_ODD[kind]) for k, kind in enumerate(kinds)]
    if odd is not None and rows:  # a value the columns cannot hold, somewhere in a batch
        rows[len(rows) // 2] = _row(**{"index": len(rows) // 2, **odd})
    one, many = RowStore(), RowStore()
    for r in rows:
        one.append(r)
    at = 0
    for cut in cuts + [len(rows)]:
        many.extend(rows[at:at + cut])
        at += cut
    assert len(many) == len(one) == len(rows)
    assert [_fields(r) for r in many.each()] == [_fields(r) for r in one.each()] == [_fields(r) for r in rows]
    assert many.kept == one.kept


def test_extend_after_the_list_is_kept_adds_to_it():
    store = RowStore()
    store.extend([_row(0), _row(1)])
    kept = store.materialise()
    store.extend([_row(2), _row(3)])
    assert store.materialise() is kept and [r.index for r in kept] == [0, 1, 2, 3] and len(store) == 4


def _graph_layout(count: int) -> RowLayout:
    """Pairs laid out backwards in pairs of two, a graph op without dump file after every third slot."""
    slots, order = [], [n for k in range(0, count, 2) for n in (k + 1, k) if n < count][::-1]
    for k, number in enumerate(order):
        slots.append(Slot(number, k, f"unit{k}", f"truth{k}"))
        if k % 3 == 2:
            slots.append(Slot(-1, k, f"unit{k}", f"truth{k}", Op(f"trans{k}", "TransData", k, "g", k)))
    return RowLayout(slots, count)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 14), st.randoms(use_true_random=False), st.booleans(), st.booleans())
def test_put_many_lets_go_what_put_lets_go(count, rnd, graph, many_sink):
    layout = _graph_layout(count) if graph else pair_layout(count)
    chunks, at = [], 0
    while at < count:
        size = rnd.randint(1, 4)
        chunks.append((at, size))
        at += size
    rnd.shuffle(chunks)

    def run(batched: bool) -> tuple[list, list]:
        out: list = []
        calls: list = []
        buffer = ReorderBuffer(layout, out.append, (lambda rows: (calls.append(len(rows)), out.extend(rows)))
                               if many_sink else None)
        buffer.start()
        for first, size in chunks:
            rows = [_row(n) for n in range(first, min(count, first + size))]
            if batched:
                buffer.putter().many(first, rows)
            else:
                for n, r in enumerate(rows, first):
                    buffer.putter()(n, r)
        assert buffer.complete
        return [_fields(r) for r in out], calls

    (one, _), (many, calls) = run(False), run(True)
    assert many == one and len(one) == len(layout)
    assert sum(calls) == (len(layout) if many_sink else 0)


def test_a_teed_sink_with_many_takes_the_rows_together():
    class Sink:
        def __init__(self) -> None:
            self.batches: list[list[int]] = []

        def __call__(self, row: Row) -> None:
            self.batches.append([row.index])

        def many(self, rows: list[Row]) -> None:
            self.batches.append([r.index for r in rows])

    out: list = []
    sink = Sink()
    buffer = ReorderBuffer(pair_layout(5), out.append)
    buffer.tee(sink)
    buffer.put_many(2, [_row(2), _row(3), _row(4)])  # held: rows 0 and 1 not yet
    buffer.put_many(0, [_row(0), _row(1)])
    assert sink.batches == [[0, 1, 2, 3, 4]] and [r.index for r in out] == [0, 1, 2, 3, 4]
