"""`dumpcmp overflow` against the original tool's own overflow_summary files (issue #38): the OpDebug folder of
make_corpus.write_overflow, the original's spelling (-d -out -n) and dumpcmp's (DIR -o -n), byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402

from dumpcmp.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_corpus.write_overflow(tmp_path_factory.mktemp("overflow") / "dumps")


@pytest.mark.parametrize("name", list(make_corpus.OVERFLOW_RUNS))
@pytest.mark.parametrize("spelling", ["original", "ours"])
def test_summary_equals_the_originals(folder, tmp_path, name, spelling, capsys):
    top = str(make_corpus.OVERFLOW_RUNS[name])
    words = (["-d", str(folder), "-out", str(tmp_path), "-n", top] if spelling == "original"
             else [str(folder), "-o", str(tmp_path), "--top-n", top])
    assert main(["overflow", *words]) == 0
    [summary] = tmp_path.glob("overflow_summary_*.txt")
    assert summary.read_bytes() == (HERE / "expected" / "overflow" / f"{name}.txt").read_bytes()
    out, err = capsys.readouterr()
    assert f"Will show the top {min(int(top), 4)}." in out
    # the SDMA record has no dump (run -n 5 reaches it), as the original warns
    assert ("Can't find the dump file" in err) == (int(top) > 2)
