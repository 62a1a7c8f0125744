"""The cluster at tiny tensors (issue #36, docs/performance.md "Cluster"): where a run of many small pairs lost time
to Dask and to Python rather than to comparing. The last batches are smaller (no worker idle while another finishes
a whole large one), a task's rows come back as one bytes object pickled on the worker's task thread, the client
takes in the rows back while it still packs the next batches, and packing or unpacking a batch sets off no pass of
Python's cyclic garbage collector (each walks every object the client holds)."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pytest

from dumpcmp.benchmark.model import generate_model
from dumpcmp.comparison import cluster as C
from dumpcmp.graph.pairing import TensorPair


def lone_pairs(count: int) -> list[TensorPair]:
    """Pairs with no device side (nothing to read): only the number of pairs sizes their batches."""
    return [TensorPair(None, None, "output", None, None, f"op{k}", (), f"op{k}.0") for k in range(count)]


def test_the_last_batches_shrink_so_that_the_workers_end_together() -> None:
    pairs = lone_pairs(20_000)
    spans = C.batches(pairs, workers=2)
    assert [i for span in spans for i in span] == list(range(len(pairs)))  # every pair once, in order
    sizes = [len(span) for span in spans]
    assert sizes[0] == C._BATCH_PAIRS
    assert sizes == sorted(sizes, reverse=True)  # never a large batch after smaller ones
    assert sizes[-1] <= C._MIN_BATCH_PAIRS  # the last ones small: a worker waits at most that long for the other
    assert len(spans) <= 40  # and not so many that Dask's cost per task counts
    assert [len(s) for s in C.batches(lone_pairs(100), workers=2)] == [100]  # a small run: one batch as before


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> list[TensorPair]:
    from dumpcmp.comparison.runs import paired_runs

    dump, gt = generate_model(tmp_path_factory.mktemp("tiny") / "m", ops=40, bytes_per_side=1 << 15, seed=3)
    return paired_runs(dump, gt)[0].pairs


def test_a_task_sends_its_rows_back_as_bytes_made_on_its_own_thread(pairs: list[TensorPair]) -> None:
    """The rows pickled by the task (the worker's event loop then only sends bytes: it does not wait for the GIL
    the next batch holds), and read back as the rows the local engine makes."""
    from dumpcmp.comparison.compare import compare_pairs
    from dumpcmp.comparison.metrics import parse_algorithms
    from dumpcmp.comparison.sources import Sides

    algos = parse_algorithms(None)
    address, sent = C.compare_batch(C.packed(pairs), None, algos, False, 1, False)
    assert address == "" and isinstance(sent, bytes)
    back = C.rows_back(sent)
    local = compare_pairs(list(pairs), Sides(None), algos, False, 1, False, 0, "restored")
    assert len(back) == len(local) == len(pairs)
    for got, want in zip(back, local):
        assert got.pair is None
        want.pair = None
        assert repr(got) == repr(want)
    assert C.rows_back(back) is back  # rows given as a list (another version's worker) are taken as they are


def test_packing_a_batch_sets_off_no_collection(pairs: list[TensorPair]) -> None:
    many = [C.travelling(p) for _ in range(200) for p in pairs]  # thousands of pairs, as a batch of a large run
    passes: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    held = [[k] for k in range(200_000)]  # a client holding many objects: what each pass would walk
    gc.callbacks.append(count)
    try:
        sent = C.packed(many)
        back = C.unpacked(sent)
    finally:
        gc.callbacks.remove(count)
    # at most a young pass after the pause (the objects made in it, not the whole heap); main's code: hundreds
    assert len(passes) <= 2 and 2 not in passes, passes
    assert len(back) == len(many) and held
    gc.callbacks.append(count)
    try:
        rows = C.rows_back(C.compare_batch(C.packed(pairs), None, (0,), False, 1, False)[1])
    finally:
        gc.callbacks.remove(count)
    assert len(passes) <= 6 and 2 not in passes, passes
    assert len(rows) == len(pairs)
    assert gc.isenabled()  # as it was
    gc.disable()
    try:
        C.unpacked(sent)
        assert not gc.isenabled()  # left off when a caller had it off
    finally:
        gc.enable()


order: list[str] = []


def noted(number: int) -> int:
    return number


def made(number: int) -> tuple:
    order.append(f"made {number}")
    time.sleep(0.2)  # packing a large batch
    return (number,)


def test_rows_back_are_taken_in_while_the_next_batches_are_packed(tmp_path: Path) -> None:
    """On main every batch was packed before the first outcome was handed on: the rows back waited (and the client
    took them all in at the end, while the workers had nothing left to do)."""
    distributed = pytest.importorskip("distributed")
    from functools import partial

    order.clear()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0") as local, distributed.Client(local) as client:
        tasks = [C.Task((), make=partial(made, k)) for k in range(12)]
        got = C.run_tasks(client, noted, tasks, "x", quiet=True,
                          on_done=lambda number, ok, value: order.append(f"done {number}"))
    assert got == [(True, None)] * 12
    assert sorted(order) == sorted([f"made {k}" for k in range(12)] + [f"done {k}" for k in range(12)])
    assert order.index("done 0") < order.index("made 11")
