"""Device ops ordered by their dump's (timestamp, task id, FFTS+ context, thread, file name) compare part by part as
numbers, the way the original compares timestamps (as integers; tests/oracle/test_order.py holds its output): task
9 runs before task 10, a 15-digit timestamp before a 16-digit one, and of two dumps of one op the greater wins."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from helpers import graphjson as gj
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import DeviceOp, pair_device_to_device, pair_with_ground_truth

T = 1700000000000000


def dev(name, timestamp, task, ref=None, ffts=(-1, -1)):
    return DeviceOp(name, "Add", 0, 1, order=(timestamp, task, *ffts, f"Add.{name}.{task}.{timestamp}"),
                    ref=ref or f"{name}@{task}")


def ops_of(pairs):
    return list(dict.fromkeys(p.npu_op for p in pairs if p.npu_op))


def test_task_ids_at_one_timestamp_compare_as_numbers():
    device = [dev("b", T, 10), dev("a", T, 9), dev("c", T, 100), dev("d", T, 2)]
    assert ops_of(pair_with_ground_truth(device, {})) == ["d", "a", "b", "c"]


def test_timestamps_of_different_lengths_compare_as_numbers():
    device = [dev("late", 1000000000000000, 1), dev("early", 999999999999999, 2), dev("later", T, 3)]
    assert ops_of(pair_with_ground_truth(device, {})) == ["early", "late", "later"]


def test_ffts_context_and_thread_compare_as_numbers():
    device = [dev("t10", T, 4, ffts=(0, 10)), dev("t9", T, 4, ffts=(0, 9)), dev("c2", T, 4, ffts=(2, 0))]
    assert ops_of(pair_with_ground_truth(device, {})) == ["t9", "t10", "c2"]


def test_of_two_dumps_of_one_op_the_greater_task_wins():
    device = [dev("x", T, 10, "task10"), dev("x", T, 9, "task9"), dev("y", 999999999999999, 1, "short"),
              dev("y", 1000000000000000, 0, "long")]
    refs = {p.npu_op: p.npu_ref for p in pair_with_ground_truth(device, {})}
    assert refs == {"x": "task10", "y": "long"}
    left = [dev("x", T, 9, "l9"), dev("x", T, 10, "l10")]
    right = [dev("x", T, 10, "r10"), dev("x", T, 9, "r9")]
    [pair] = pair_device_to_device(left, right)
    assert (pair.npu_ref, pair.ground_truth_ref) == ("l10", "r10")


def test_device_to_device_rows_follow_the_numeric_order_on_both_sides():
    left = [dev("a", T, 10), dev("b", T, 9)]
    right = [dev("a", T, 10), dev("only_right", T, 9), dev("b", T, 8)]
    pairs = pair_device_to_device(left, right)
    shown = list(dict.fromkeys((p.npu_op, p.ground_truth_op) for p in pairs))
    # left: b (9) then a (10); right's extra op, task 9, runs after b (8) on the right
    assert shown == [("b", "b"), (None, "only_right"), ("a", "a")]


def test_ops_outside_the_graph_keep_their_place_by_numeric_order(tmp_path):
    graph = load_graph(gj.write(tmp_path / "g.json", gj.document(gj.op("in_graph", "Add", 1))))
    device = [dev("after10", T, 10), dev("in_graph", T, 8), dev("after9", T, 9)]
    assert ops_of(pair_with_ground_truth(device, {}, graph)) == ["in_graph", "after9", "after10"]


def test_parts_of_mixed_types_sort_without_raising_and_numbers_first():
    device = [DeviceOp(f"op{k}", "T", 0, 1, order=o) for k, o in enumerate([(1, "b"), (1, None), (1, 2), (0, None)])]
    assert ops_of(pair_with_ground_truth(device, {})) == ["op3", "op2", "op0", "op1"]


def test_many_ops_sort_as_the_numeric_rule_says():
    rng = random.Random(5)
    orders = [(T + rng.randrange(3) * 10 ** rng.randrange(2), rng.randrange(20), -1, -1, f"f{k}") for k in range(500)]
    device = [DeviceOp(f"op{k}", "T", 0, 1, order=o) for k, o in enumerate(orders)]
    expected = [f"op{k}" for k in sorted(range(len(orders)), key=lambda k: orders[k])]
    assert ops_of(pair_with_ground_truth(device, {})) == expected


parts = st.one_of(st.integers(-3, 12), st.sampled_from(["a", "b", "10", "9"]), st.none(), st.just(2.5))
orders = st.one_of(st.tuples(parts, parts), st.tuples(parts, parts, parts), st.integers(0, 5), st.none(),
                   st.sampled_from(["x", "10"]))


def reference_key(order):
    """The rule, written apart: numbers by value; tuples part by part (numbers by value, then text, then None),
    a shorter tuple first when it is a prefix; other values by their text; None last."""
    def part(p):
        if p is None:
            return (2, "")
        return (0, p) if isinstance(p, (int, float)) else (1, str(p))
    if order is None:
        return (3, "")
    if isinstance(order, (int, float)):
        return (0, order)
    if isinstance(order, tuple):
        return (1, [part(p) for p in order])
    return (2, str(order))


@settings(max_examples=400, deadline=None)
@given(st.lists(orders, max_size=12), st.booleans())
def test_any_orders_sort_by_the_rule_and_never_raise(values, only_tuples):
    if only_tuples:
        values = [v for v in values if isinstance(v, tuple)]
    device = [DeviceOp(f"op{k}", "T", 0, 1, order=o) for k, o in enumerate(values)]
    got = ops_of(pair_with_ground_truth(device, {}))
    assert got == [f"op{k}" for k in sorted(range(len(values)), key=lambda k: reference_key(values[k]))]
