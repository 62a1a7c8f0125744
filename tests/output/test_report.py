"""The HTML report: what it holds (checked against the comparison and the C++ reductions), that it is one file
with no network reference, its size on a 1,000-operator model, and in headless Chromium (console errors, chart and
table rendered, a click opens a layer, sorting and filtering)."""

from __future__ import annotations

import io
import json
import os
import re

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare
from dumpcmp.output.report import classify, verdict

from helpers.cdp import CHROMIUM, Browser
from helpers.reportmodel import Chain

BUDGET = 5 * 1024 * 1024


def noisy(gt, rng):
    return gt + rng.standard_normal(gt.shape).astype(np.float32)


def page_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


@pytest.fixture
def chain(tmp_path, rng):
    return Chain(tmp_path, rng, 8, plants={3: noisy})


@pytest.fixture
def report(chain, tmp_path):
    path = tmp_path / "report.html"
    assert main(["report", *chain.args(), "-o", str(path), "--quiet", "--histograms", "3", "--top-n", "5"]) == 0
    return path


def test_report_content(chain, report):
    html = report.read_text()
    # one file: no script, style, image or link fetched from anywhere, and a policy that forbids it
    assert not re.search(r'(src|href)="(?!#)', html)
    assert "default-src 'none'" in html
    result = compare(chain.root / "dump", chain.gt, fusion_json=chain.graph)
    data = page_data(html)
    assert [r["i"] for r in data["rows"]] == [r.index for r in result.rows]
    assert [r["k"] for r in data["rows"]] == list(range(len(result.rows)))
    # with -f the rows follow the graph's fusion units: the model input `data` (not dumped) gets a row of its own
    # (Index 0), then op k's input and output rows share Index k + 1; op3's output is row 8 with Index 4
    assert len(result.rows) == 17 and result.rows[0].status == "unmatched" and result.rows[0].op_type == "Data"
    op3 = 8
    assert result.rows[op3].tensor_index == "op3:output:0" and result.rows[op3].index == 4
    assert data["cells"] == [cells + [r.status] for cells, r in zip(result.table()[1:], result.rows)]
    assert "verdict: FAIL" in html and "first below the threshold" in html and "#4 op3:output:0" in html
    assert '<a href="#row-8">#4 op3:output:0</a>' in html
    assert "16 compared, 0 unmatched, 0 failed, 0 skipped (1 Data/Const op not dumped, a row each)" in html
    # one chart point per operator output, named on hover; the inputs without producer charted apart
    chart = html[html.index('id="chart"'):html.index("</svg>", html.index('id="chart"'))]
    assert chart.count("<circle") == 2 * 8  # cosine and relative RMSE panels
    assert f"<title>#4 op3:output:0 (Relu): {result.rows[op3].cosine:.4g}</title>" in chart
    # the undumped Data op's row and the first op's input (the model input, no dumped producer) are constants
    assert 'id="chart-constants"' in html and classify(result)[0] == classify(result)[1] == "constant"
    assert classify(result)[2] == "activation"
    # the worst three layers carry histograms (both sides over one range) and their top errors
    with_hist = [r for r in data["rows"] if "hist" in r]
    assert len(with_hist) == 3 and op3 in {r["k"] for r in with_hist}
    worst = data["rows"][op3]
    npu, gt = worst["hist"]
    assert npu[:2] == gt[:2] and sum(npu[7:]) == sum(gt[7:]) == 4096
    x = np.load(chain.gt / next(p.name for p in chain.gt.iterdir() if p.name.startswith("op3."))).astype(np.float64)
    assert gt[7:] == list(np.histogram(x, 64, range=(npu[0], npu[1]))[0])
    assert len(worst["top"]) == 5 and worst["top"][0][3] == pytest.approx(result.rows[op3].value(1), rel=1e-6)
    # advice
    # the verdict's advice first; a float16 device gets no int8 advice
    assert data["advice"][0]["rule"] == "single-layer" and 'data-rule="int16-layer"' not in html


def test_report_with_locate_and_verdict(chain, tmp_path):
    loc = tmp_path / "locate.json"
    loc.write_text(json.dumps([{"op": f"op{k}", "own_cosine": 0.7 if k == 3 else 0.99999,
                                "inherited_cosine": 0.9999, "total_cosine": 0.7 if k >= 3 else 0.9999,
                                "verdict": "adds error" if k == 3 else ""} for k in range(8)]))
    out = tmp_path / "r.html"
    assert main(["report", *chain.args(), "-o", str(out), "--locate", str(loc), "--quiet"]) == 0
    html = out.read_text()
    assert "where the error starts (locate): op3, own cosine 0.700000 adds error" in html
    assert "dashed: own error from locate" in html
    rec = next(r for r in page_data(html)["rows"] if r["name"] == "op3:output:0")
    assert rec["locate"] == {"own": 0.7, "inherited": 0.9999, "total": 0.7, "verdict": "adds error"}
    result = compare(chain.root / "dump", chain.gt, fusion_json=chain.graph)
    v = verdict(result, 0.99)
    assert v["largest_drop"]["name"] == "op3:output:0" and not v["pass"]
    # an existing report is kept without --force; a bad locate file is bad input
    assert main(["report", *chain.args(), "-o", str(out), "--quiet"]) == 2
    loc.write_text("{}")
    assert main(["report", *chain.args(), "-o", str(tmp_path / "x.html"), "--locate", str(loc), "--quiet"]) == 2


def test_which_layers_carry_histograms(chain, monkeypatch):
    import dumpcmp.output.report.page as R

    result = compare(chain.root / "dump", chain.gt, fusion_json=chain.graph)
    assert len(R.chosen_rows(result, "auto")) == 16  # 16 small tensors: all of them
    assert [r.index for r in R.chosen_rows(result, 2)] == [r.index for r in result.worst(2, distinct=True)]
    monkeypatch.setattr(R, "AUTO_ALL_ELEMENTS", 1000)
    monkeypatch.setattr(R, "AUTO_WORST", 3)
    assert [r.index for r in R.chosen_rows(result, "auto")] == [r.index for r in result.worst(3, distinct=True)]


@pytest.fixture(scope="module")
def big_report(tmp_path_factory):
    """A 1,000-operator chain (2,001 rows: the inputs, and the undumped model input's row) with every layer's
    histogram embedded."""
    root = tmp_path_factory.mktemp("big")
    c = Chain(root, np.random.default_rng(7), 1000, shape=(1, 4, 4, 4),
              plants={500: lambda gt, rng: gt + rng.standard_normal(gt.shape).astype(np.float32)})
    path = root / "report.html"
    assert main(["report", *c.args(), "-o", str(path), "--quiet", "--histograms", "all"]) == 0
    return path


def test_size_budget_on_1000_operators(big_report):
    size = big_report.stat().st_size
    assert size <= BUDGET, f"{size} bytes"
    assert len(page_data(big_report.read_text())["rows"]) == 2001


def browser(tmp_path):
    if CHROMIUM is None:
        if os.environ.get("DUMPCMP_CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("headless Chromium (Debian package chromium) is not installed")
    return Browser(str(tmp_path / "profile"))


def test_in_headless_chromium(report, tmp_path):
    from PIL import Image

    b = browser(tmp_path)
    try:
        b.open(report.as_uri())
        assert b.eval("document.body.dataset.ready") == "1"
        assert b.eval("document.querySelectorAll('#chart circle').length") == 16
        assert b.eval("document.querySelectorAll('#rows tbody tr').length") == 17  # the Data op's row too
        shot = Image.open(io.BytesIO(b.screenshot())).convert("L")
        lo, hi = shot.getextrema()
        assert shot.size == (1300, 1000) and hi - lo > 100  # something drawn, not a blank page
        # a real mouse click on the chart point of row 8 (op3's output, Index 4) opens that layer, with its histogram
        x, y = b.eval("(() => { const c = document.querySelector('#chart circle[data-row=\"8\"]');"
                      " c.scrollIntoView({block: 'center'}); const r = c.getBoundingClientRect();"
                      " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        b.click(x, y)
        assert b.eval("document.getElementById('d-title').textContent") == "#4 op3:output:0"
        assert b.eval("location.hash") == "#row-8"
        assert b.eval("document.querySelectorAll('#details svg.hist rect.bar').length") == 64
        # sorting by cosine puts the worst row first; filtering narrows the rows
        b.eval("[...document.querySelectorAll('#rows th')].find(t => t.textContent === 'CosineSimilarity').click()")
        assert b.eval("document.querySelector('#rows tbody tr').dataset.row") == "8"
        b.eval("const f = document.getElementById('filter'); f.value = 'op5:';"
               " f.dispatchEvent(new Event('input'))")
        assert b.eval("document.querySelectorAll('#rows tbody tr').length") == 2
        # a table row click opens its layer too
        b.eval("document.querySelector('#rows tbody tr').click()")
        assert b.eval("document.getElementById('d-title').textContent") == "#6 op5:input:0"
        assert b.errors() == []
    finally:
        b.close()
    # a URL hash opens a layer on load
    b = browser(tmp_path)
    try:
        b.open(report.as_uri() + "#row-10")
        assert b.eval("document.getElementById('d-title').textContent") == "#5 op4:output:0"
        assert b.errors() == []
    finally:
        b.close()


def test_big_report_in_chromium(big_report, tmp_path):
    b = browser(tmp_path)
    try:
        seconds = b.open(big_report.as_uri())
        assert b.eval("document.body.dataset.ready") == "1"
        assert b.eval("document.querySelectorAll('#chart circle').length") == 2000
        assert b.eval("document.querySelectorAll('#rows tbody tr').length") == 200  # one page
        assert b.errors() == []
        print(f"1,000-operator report ({big_report.stat().st_size} bytes): loaded in {seconds:.2f} s")
    finally:
        b.close()


def test_report_and_compare_run_locate_on_the_model(tmp_path):
    """`--locate MODEL.onnx` runs dumpcmp locate: the report shows where the error starts and own vs inherited per
    operator; `compare --locate MODEL.onnx --html` does the same beside its extra columns."""
    pytest.importorskip("onnxruntime")
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    from helpers.locate_nets import build_net, net_input, plant_fault

    model = build_net(tmp_path / "net.onnx", attention=False)
    device = plant_fault(model, tmp_path / "faulty.onnx", "b1a_w")
    x = net_input()
    dump_golden(model, {"x": x}, tmp_path / "gt")
    sim = simulate(device, tmp_path / "dump", precision="fp16", samples=[{"x": x}], model_name="net",
                   dump_mode="all")
    args = ["-l", str(tmp_path / "dump"), "-r", str(tmp_path / "gt"), "-f", str(sim.json_path),
            "--locate", str(model), "--quiet"]
    out = tmp_path / "r.html"
    assert main(["report", *args, "-o", str(out), "--json", str(tmp_path / "r.json")]) == 0
    html = out.read_text()
    assert "where the error starts (locate): b1a_convb1a_bn" in html
    assert "dashed: own error from locate" in html
    recs = [r for r in page_data(html)["rows"] if "locate" in r]
    assert recs and all(set(r["locate"]) == {"own", "inherited", "total", "verdict"} for r in recs)
    origin = next(r for r in recs if r["locate"]["verdict"] == "origin")
    assert origin["locate"]["own"] < 0.99 and origin["locate"]["inherited"] > 0.999
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["runs"][0]["verdict"]["error_starts"]["op"] == "b1a_convb1a_bn"
    assert main(["compare", *args, "-o", str(tmp_path / "c.csv"), "--html", str(tmp_path / "c.html")]) == 0
    assert "where the error starts (locate): b1a_convb1a_bn" in (tmp_path / "c.html").read_text()
    # locate's saved JSON gives the same report
    assert main(["locate", str(model), *args[:6], "-o", str(tmp_path / "loc"), "--json", str(tmp_path / "l.json"),
                 "--quiet"]) == 0
    args[-2] = str(tmp_path / "l.json")
    assert main(["report", *args, "-o", str(tmp_path / "j.html")]) == 0
    assert "where the error starts (locate): b1a_convb1a_bn" in (tmp_path / "j.html").read_text()
