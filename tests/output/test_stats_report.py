"""`dumpcmp report` and `compare --html` with a statistics dump: one page whose table holds each tensor's row of the
statistics compare (the CSV `compare -o` writes, read back independently with the csv module; the page parsed with
html.parser), a line saying which values were measured and which not captured, and no histograms or charts."""

from __future__ import annotations

import csv
from html.parser import HTMLParser

import numpy as np
import pytest

from dumpcmp.cli import main
from helpers.statsfile import record_of, write_stats

RUN = ("20260101000000", "0", "net", "1", "0")
TS = 1700000000000000


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows, self.cell, self.ids, self.tags = [], None, {}, set()
        self._id = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        a = dict(attrs)
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self.cell = ""
        if "id" in a and tag == "p":
            self._id = a["id"]
            self.ids[self._id] = ""

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell)
            self.cell = None
        if tag == "p":
            self._id = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data
        if self._id is not None:
            self.ids[self._id] += data


def _page(path):
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture
def dumps(tmp_path):
    rng = np.random.default_rng(4)
    gt = tmp_path / "gt"
    gt.mkdir()
    recs = []
    for k, op in enumerate(["conv1", "relu1", "fc1"]):
        a = rng.standard_normal((2, 8)).astype(np.float32)
        np.save(gt / f"{op}.0.{TS + k}.npy", a)
        dev = a * 3 if op == "relu1" else a.astype(np.float16)  # relu1: a planted fault
        recs.append(record_of(op, "output", 0, dev, timestamp=TS + k, op_type="Op"))
    write_stats(tmp_path.joinpath("s", *RUN) / "statistic.csv", recs, columns="atb")  # no counts in this set
    return tmp_path


def test_report_of_a_statistics_dump_rows_equal_the_csv(dumps, capsys):
    out = dumps / "r.html"
    assert main(["report", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(out)]) == 0
    assert main(["compare", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(dumps / "r.csv")]) == 0
    with open(dumps / "r.csv", newline="") as f:
        want = list(csv.reader(f))
    page = _page(out)
    table = [r for r in page.rows if len(r) == len(want[0])]
    assert table == want
    verdicts = {r[want[0].index("NPUDump")]: r[want[0].index("Verdict")] for r in want[1:]}
    assert verdicts == {"conv1": "pass", "relu1": "error", "fc1": "pass"}
    measured = page.ids["measured"]
    assert "Measured on the device (statistics files): Max, Min, Mean, L2Norm." in measured
    assert "Not captured: NaN count, Inf count, the tensors themselves" in measured
    assert "computed from the ground-truth tensors" in measured
    assert "svg" not in page.tags and "script" not in page.tags  # no histograms, charts or page script
    assert "first not pass, in execution order" in out.read_text() and "relu1:output:0" in out.read_text()
    # an existing report is kept without --force
    before = out.read_bytes()
    assert main(["report", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(out)]) == 2
    assert out.read_bytes() == before


def test_compare_html_with_statistics_writes_the_same_page(dumps):
    assert main(["report", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(dumps / "a.html"),
                 "--quiet"]) == 0
    assert main(["compare", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(dumps / "r.csv"),
                 "--html", str(dumps / "b.html"), "--quiet"]) == 0
    assert _page(dumps / "a.html").rows == _page(dumps / "b.html").rows
    # the report file is checked before the run: an existing one stops it, and no CSV is written
    assert main(["compare", "-l", str(dumps / "s"), "-r", str(dumps / "gt"), "-o", str(dumps / "c.csv"),
                 "--html", str(dumps / "b.html")]) == 2
    assert not (dumps / "c.csv").exists()
