"""Rows in graph order as batches finish (issue #35): the order known before comparing, a reorder buffer that holds
only the rows that came early, the local run and the cluster through it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dumpcmp.comparison.compare as compare_module
from dumpcmp import TensorData, write_dump
from dumpcmp.comparison.compare import compare
from dumpcmp.comparison.runs import paired_runs
from dumpcmp.comparison.sources import Sides
from dumpcmp.comparison.stream import ReorderBuffer, graph_layout

from helpers import graphjson as G

TS = 1700000000000000


def _d() -> dict:
    return G.desc(dtype="DT_FLOAT", layout="ND", shape=(8,), ge_origin_format="ND", origin_shape=(8,))


def _model(root, n: int = 12):
    """n ops in a chain; every fourth fused (two original ops), a TransData without dump after every third, one op
    without ground truth, one op dumped first that the graph does not hold (its row goes last)."""
    dev, gt = root / "dump", root / "gt"
    dev.mkdir()
    gt.mkdir()
    rng = np.random.default_rng(1)
    ops, task, before = [], 0, None
    for k in range(n):
        fused = k % 4 == 3
        name = f"fused{k}" if fused else f"op{k}"
        ops.append(G.op(name, "Conv2D", len(ops), [f"{before}:0"] if before else [], outputs=[_d()],
                        originals=[f"op{k}_bn", f"op{k}"] if fused else G.ABSENT))
        before = name
        x = rng.standard_normal(8).astype(np.float32)
        task += 1
        write_dump(dev / f"Conv2D.{name}.{task}.{TS + task}", op_name=name,
                   outputs=[TensorData(x + np.float32(k % 5) * 1e-3, format="ND")])
        if k != 5:
            np.save(gt / f"op{k}.0.{TS + task}.npy", x)
        if k % 3 == 2:
            ops.append(G.op(f"trans{k}", "TransData", len(ops), [f"{name}:0"], originals=[], outputs=[_d()]))
    # dumped first, its row last
    write_dump(dev / f"Relu.stray.0.{TS}", op_name="stray", outputs=[TensorData(np.ones(8, np.float32))])
    np.save(gt / f"stray.0.{TS}.npy", np.ones(8, np.float32))
    return dev, gt, G.write(root / "model.json", G.document(*ops))


def _cells(rows) -> list[tuple]:
    return [(r.index, r.op_type, r.npu_dump, r.ground_truth, r.tensor_index, r.status, r.fail_reason,
             None if r.result is None else tuple(r.result.formatted())) for r in rows]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    root = tmp_path_factory.mktemp("stream")
    dev, gt, graph = _model(root)
    run = paired_runs(dev, gt, fusion_json=graph)[0]
    return dev, gt, graph, run


def test_rows_come_out_in_the_final_order_whatever_order_they_are_put_in(model) -> None:
    """Rows put in any order (batches finishing out of order, a cluster's workers) come out in the graph's order,
    graph ops without dump file in their places, each row once: the same rows as in pair order."""
    dev, gt, graph, run = model
    layout = graph_layout([p if p.skip_reason is None else None for p in run.pairs], run.graph)
    reference = compare(dev, gt, fusion_json=graph)
    assert any(r.unmatched for r in reference.rows) and reference.rows[-1].op_type == "Relu"

    @settings(max_examples=60, deadline=None)
    @given(st.permutations(range(len(run.pairs))))
    def arrivals(order: list[int]) -> None:
        by_number = {n: r for n, r in enumerate(_pair_rows(dev, gt, graph))}
        out: list = []
        buffer = ReorderBuffer(layout, out.append)
        buffer.start()
        for n in order:
            buffer.put(n, by_number[n])
        assert buffer.complete and not buffer.missing()
        assert _cells(out) == _cells(reference.rows)

    arrivals()


def _pair_rows(dev, gt, graph) -> list:
    run = paired_runs(dev, gt, fusion_json=graph)[0]
    return compare_module._compare_pairs(run.pairs, Sides(None), tuple(range(10)), False, 1, True, run.run)


def test_rows_in_pair_order_are_held_only_until_their_turn(model) -> None:
    """Rows finished in pair order: the buffer holds only those the graph puts later, never the table."""
    dev, gt, graph, run = model
    layout = graph_layout([p if p.skip_reason is None else None for p in run.pairs], run.graph)
    out: list = []
    buffer = ReorderBuffer(layout, out.append)
    buffer.start()
    rows = _pair_rows(dev, gt, graph)
    for n, r in enumerate(rows):
        buffer.put(n, r)
    assert buffer.complete
    assert buffer.most_held == 1  # the stray op's row, which goes last, alone waits


def test_the_compare_loop_hands_rows_on_as_its_batches_finish(model, monkeypatch) -> None:
    """Each batch's rows leave the loop once the engine is done with them and every row before them has left:
    the first rows are handed on while later batches are still to be compared, and the loop keeps none."""
    dev, gt, graph, run = model
    events: list[str] = []
    real_run = compare_module._Batch.run

    def logged(self) -> None:
        events.append("batch")
        real_run(self)

    monkeypatch.setattr(compare_module, "_BATCH_PAIRS", 2)
    monkeypatch.setattr(compare_module._Batch, "run", logged)
    put: list[int] = []
    kept = compare_module._compare_pairs(run.pairs, Sides(None), tuple(range(10)), False, 1, True, run.run,
                                         put=lambda n, row: (events.append("row"), put.append(n)))
    assert kept == []
    assert put == list(range(len(run.pairs)))
    assert events.count("batch") >= 4
    last_batch = len(events) - 1 - events[::-1].index("batch")
    assert "row" in events[:last_batch]  # rows went on before the last batch began


def test_compare_gives_the_rows_of_pair_order_laid_out_by_the_graph(model) -> None:
    """compare() through the buffer: the rows of the pairs, laid out by the graph, the unmatched ones made."""
    dev, gt, graph, run = model
    result = compare(dev, gt, fusion_json=graph)
    indexes = [r.index for r in result.rows]
    assert indexes == sorted(indexes)
    assert [r.op_type for r in result.rows if r.unmatched] == ["TransData"] * 4
    assert result.dumped_ops is not None and "stray" in result.dumped_ops


def test_cluster_rows_put_as_batches_come_back(model) -> None:
    """The cluster's batches come back in any order; their rows are put as each arrives, every pair once, the same
    rows as a local run's (a real LocalCluster, two worker processes)."""
    distributed = pytest.importorskip("distributed")
    from dumpcmp.comparison.cluster import Cluster, cluster_rows

    dev, gt, graph, run = model
    local = _pair_rows(dev, gt, graph)
    got: dict[int, object] = {}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        cluster = Cluster(client, None, batch_bytes=1)
        assert cluster_rows(cluster, [run], None, tuple(range(10)), 1, True,
                            puts=[lambda n, row: got.__setitem__(n, row) if n not in got else pytest.fail("twice")]
                            ) is None
    assert sorted(got) == list(range(len(run.pairs)))
    assert _cells([got[n] for n in sorted(got)]) == _cells(local)
