"""Execution order and the newest dump of an op, against the original tool's output on the order corpus
(make_order.py: timestamps of different lengths, tasks 9 and 10 at one timestamp, two dumps of one op), both
versions': 72c5bd4c's and the current one's (msprobe 8ff00da3).

Where timestamps differ the original decides (as integers) and dumpcmp must agree, row for row and cell for cell;
at equal timestamps the original follows the directory listing (kept beside its result), and dumpcmp follows the
task id as a number: task 9 before task 10, and of two dumps of one op at one timestamp the later task's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_order  # noqa: E402
from agreement import cell_diffs, corpus_text, read_rows  # noqa: E402

EXPECTED = make_order.EXPECTED


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    from dumpcmp.cli import main

    root = tmp_path_factory.mktemp("order")
    corpus = root / "corpus"
    paths = make_order.build(corpus)
    out = root / make_order.RESULT
    assert main(["compare", "-l", str(paths["left"]), "-r", str(paths["right"]), "-o", str(out), "--quiet",
                 "--npu-vs-npu", "raw"]) == 0
    return read_rows(corpus_text(out, corpus))


@pytest.fixture(params=[make_order.RESULT, make_order.CURRENT_RESULT])
def results(request, ours):
    return read_rows((EXPECTED / request.param).read_text(encoding="utf-8")), ours


def ops_in_order(rows):
    names = [r[2] for r in rows[1:]]
    return list(dict.fromkeys(names))


def by_tensor(rows):
    col = rows[0].index("TensorIndex")
    return {r[col]: r for r in rows[1:]}


def test_ops_at_different_timestamps_run_in_the_originals_order(results):
    theirs, mine = results
    assert mine[0] == theirs[0]
    # short's timestamp has 15 digits (as text, "(1000..." sorts before "(999...")
    assert ops_in_order(theirs)[0] == ops_in_order(mine)[0] == "short"
    rank = {name: k for k, name in enumerate(ops_in_order(mine))}
    their_rank = {name: k for k, name in enumerate(ops_in_order(theirs))}
    stamp = {"short": 0, "long": 1, "late_ts": 1, "tie_a": 2, "tie_b": 2, "dup": 3}  # by timestamp
    for a in stamp:
        for b in stamp:
            if stamp[a] < stamp[b]:
                assert their_rank[a] < their_rank[b] and rank[a] < rank[b], (a, b)


def test_rows_the_original_decides_agree_cell_for_cell(results):
    theirs, mine = results
    header = theirs[0]
    exp, ours = by_tensor(theirs), by_tensor(mine)
    assert set(exp) == set(ours)
    for tensor, row in exp.items():
        if tensor.startswith("dup:"):
            continue  # which of dup's two dumps the original takes is the directory's order (next test)
        assert cell_diffs(header[1:], row[1:], ours[tensor][1:]) == [], tensor  # Index: the listing's order
    # of late_ts's two dumps (timestamps of 15 and 16 digits) both take the 16-digit one: its values are the right's
    assert ours["late_ts:output:0"][header.index("MaxAbsoluteError")] == "0.000000"


def test_equal_timestamps_follow_the_task_id_as_a_number(results):
    theirs, mine = results
    listing = (EXPECTED / "left_listing.txt").read_text(encoding="utf-8").split()
    listed = [name.split(".")[1] for name in listing]
    # The original: at one timestamp, the listing's order (tie_b was listed first) and the listing's last dump.
    tie_order = [n for n in ops_in_order(theirs) if n.startswith("tie_")]
    assert tie_order == sorted(tie_order, key=listed.index) == ["tie_b", "tie_a"]
    last_dup = [name for name in listing if name.startswith("Mul.dup.")][-1]
    assert last_dup.split(".")[2] == "9"
    assert by_tensor(theirs)["dup:output:0"][theirs[0].index("MaxAbsoluteError")] != "0.000000"
    # dumpcmp: task 9 before task 10 whatever the listing, and the dump of task 10 (the right holds its values)
    assert [n for n in ops_in_order(mine) if n.startswith("tie_")] == ["tie_a", "tie_b"]
    assert by_tensor(mine)["dup:output:0"][mine[0].index("MaxAbsoluteError")] == "0.000000"
