"""Extra metric columns (the original's `-c DIR -alg Name` custom algorithms, and any plug-in whose columns ride the
same way) in the HTML report: its table (sortable), the layer details (a NaN cell with its reason), through `dumpcmp
report -c/-alg/-a` and `compare --html`. Values checked against NumPy on the tensors the dumps hold."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dumpcmp.cli import main

from helpers.cdp import browser_or_skip
from helpers.custom_metrics import PICKY, SUMSQ, expected_sumsq, plugins
from helpers.reportmodel import TS, Chain

def page_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def header_of(html: str) -> list[str]:
    section = html[html.index('<table id="rows">'):]
    return re.findall(r'<th data-col="\d+">(.*?)</th>', section[:section.index("</thead>")])


@pytest.fixture
def setup(tmp_path, rng):
    chain = Chain(tmp_path, rng, 4, plants={2: lambda gt, r: gt + r.standard_normal(gt.shape).astype(np.float32)})
    first = float(np.load(chain.gt / f"op1.0.{TS + 2}.npy").ravel()[0])
    folder = plugins(tmp_path / "c", {"alg_SumSq.py": SUMSQ, "alg_Picky.py": PICKY})
    return chain, folder, ["-c", str(folder), "-alg", "0,SumSq,Picky", "-a", f"SumSq:scale=2;Picky:first={first!r}"]


def check_page(html: str, chain: Chain) -> dict:
    header = header_of(html)
    assert header[header.index("CosineSimilarity"):] == ["CosineSimilarity", "SumSq", "Picky", "CompareFailReason",
                                                         "Status"]
    data = page_data(html)
    assert data["extra"] == ["SumSq", "Picky"]
    col = {name: header.index(name) for name in ("SumSq", "Picky", "CompareFailReason", "TensorIndex")}
    by_tensor = {c[col["TensorIndex"]]: c for c in data["cells"]}
    for k in range(4):
        cells = by_tensor[f"op{k}:output:0"]
        assert float(cells[col["SumSq"]]) == pytest.approx(2 * expected_sumsq(chain, k), rel=1e-6, abs=1e-6)
    bad = by_tensor["op1:output:0"]
    assert bad[col["Picky"]] == "NaN"
    assert bad[col["CompareFailReason"]] == "Failed to execute 'compare' in 'Picky'. picky does not like this layer"
    assert by_tensor["op2:output:0"][col["Picky"]] == "1.5"
    return data


def test_report_takes_custom_algorithms_and_shows_their_columns(setup, tmp_path):
    chain, folder, flags = setup
    html = tmp_path / "r.html"
    assert main(["report", *chain.args(), "-o", str(html), "--quiet", *flags]) == 0
    check_page(html.read_text(encoding="utf-8"), chain)


def test_compare_html_shows_the_columns_of_its_result_file(setup, tmp_path):
    chain, folder, flags = setup
    html, out = tmp_path / "c.html", tmp_path / "r.csv"
    assert main(["compare", *chain.args(), "-o", str(out), "--html", str(html), "--quiet", *flags]) == 0
    data = check_page(html.read_text(encoding="utf-8"), chain)
    # the page's cells are the result file's (plus Status)
    with open(out, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert [c[:-1] for c in data["cells"]] == table[1:]


def test_report_in_headless_chromium_sorts_and_explains_the_extra_column(setup, tmp_path):
    chain, folder, flags = setup
    html = tmp_path / "r.html"
    assert main(["report", *chain.args(), "-o", str(html), "--quiet", *flags]) == 0
    b = browser_or_skip(str(tmp_path / "profile"))
    try:
        b.open(html.as_uri())
        assert b.eval("document.body.dataset.ready") == "1"
        # sorting by SumSq, descending (a second click): the planted layer op2 has the largest sum first
        b.eval("[...document.querySelectorAll('#rows th')].find(t => t.textContent === 'SumSq').click()")
        b.eval("[...document.querySelectorAll('#rows th')].find(t => t.textContent === 'SumSq').click()")
        first = b.eval("document.querySelector('#rows tbody tr').dataset.row")
        assert page_data(html.read_text())["rows"][int(first)]["name"] in ("op2:output:0", "op3:input:0")
        # the details of op1's output say why Picky is NaN
        k = next(r["k"] for r in page_data(html.read_text())["rows"] if r["name"] == "op1:output:0")
        b.eval(f"location.hash = '#row-{k}'")
        text = b.eval("document.getElementById('d-body').textContent")
        assert "Picky: NaN, not computed: Failed to execute 'compare' in 'Picky'. picky does not like" in text
        assert b.errors() == []
    finally:
        b.close()
