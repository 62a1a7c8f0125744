"""SIGINT and SIGTERM sent to real `compare -d OP -o DIR` processes at every stage (issue #33: an export interrupted
over an older one with --force left 3 old and 7 new files, or lost the old ones; a fresh one published 7 of 10
files). After every signal DIR holds the old export whole or the new one whole (fresh: nothing, or the new one
whole), no temporary is left, the process ends 0, 130 or 143 with one line, never a traceback of dumpcmp's code."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
from collections import Counter

import pytest

from helpers.signal_sweep import interrupt, temporaries, timed_run

from test_compare import Model

OLD = ["--max-lines", "50", "--top-n", "3"]  # 10 detail files: the new export must remove 5 of them
NEW = ["--max-lines", "100", "--top-n", "2"]


def snapshot(folder):
    if not folder.exists():
        return None
    return {n: hashlib.sha1((folder / n).read_bytes()).hexdigest() for n in sorted(os.listdir(folder))}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    import numpy as np
    base = tmp_path_factory.mktemp("sweep")
    model = Model(base / "m", np.random.default_rng(7))
    args = ["compare", "-l", str(model.root / "dump"), "-r", str(model.gt), "-f", str(model.graph), "-d",
            "conv1bn1relu1", "--quiet"]
    old = base / "old"
    timed_run([*args, "-o", str(old), *OLD])
    new = base / "new"
    seconds = timed_run([*args, "-o", str(new), *NEW])
    assert len(os.listdir(old)) > len(os.listdir(new)) >= 8
    return args, old, snapshot(old), snapshot(new), seconds


def sweep(exports, tmp_path, runs):
    args, old, old_set, new_set, seconds = exports
    seen: Counter = Counter()
    for k in range(runs):
        over = k % 3 != 2  # two in three over an older export with --force, one into a fresh folder
        out = tmp_path / f"o{k}" / "detail"
        out.parent.mkdir()
        if over:
            shutil.copytree(old, out)
        sig = signal.SIGINT if k % 2 == 0 else signal.SIGTERM
        delay = seconds * 1.2 * (k + 0.5) / runs  # start-up to exit
        outcome, where = interrupt([*args, "-o", str(out), *NEW, *(["--force"] if over else [])], sig, delay)
        state = snapshot(out)
        if outcome == "finished":
            assert state == new_set, where
        elif over:
            assert state in (old_set, new_set), f"{where}\n{sorted(state or {})}"
        else:
            assert state in (None, new_set), f"{where}\n{sorted(state or {})}"
        assert not temporaries(out.parent), where
        if outcome.startswith("ImportError"):
            assert state in (old_set, None), where  # before any writing
        seen[(("over old " if over else "fresh ") + outcome
              + (" (old kept)" if state == old_set else " (new whole)" if state == new_set else ""))] += 1
        shutil.rmtree(out.parent)
    print(dict(seen))
    return seen


def test_signals_during_a_detail_export(exports, tmp_path):
    seen = sweep(exports, tmp_path, 12)
    assert sum(n for k, n in seen.items() if "interrupted" in k) >= 3


@pytest.mark.slow
def test_signals_during_a_detail_export_long(exports, tmp_path):
    sweep(exports, tmp_path, 150)
