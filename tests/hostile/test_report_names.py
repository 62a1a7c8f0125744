"""Script-breaking names in the HTML report. The page's data rides in `<script type="application/json">`; a name
holding `</script>`, `<!--`, `]]>`, U+2028/U+2029, quotes or `&` must neither end that element early nor make its
text anything but JSON (`<!--` used to be written as `<\\!--`, not JSON: the interactive table showed 0 rows).

Checked against independent readers: html.parser finds exactly the two script elements where the page puts them,
json.loads gives back the same names, and headless Chromium (when installed) fills the table with every row."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from dumpcmp import TensorData, write_dump
from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare
from dumpcmp.dumps.naming import sanitize
from dumpcmp.output.advice import Advice
from dumpcmp.output.report import ReportData, render

from helpers import graphjson as G
from helpers.cdp import CHROMIUM, Browser

TS = 1700000000000000
SHAPE = (1, 4, 4, 4)
NAMES = ["a<script>alert(1)<", "b<!--x", "c]]>", "d\u2028e\u2029f", "g\"q'\\", "h&amp;<>", "i{x}<!--<script>"]
# names that cannot be file names (a `/`): in the advice, which the data block carries too
SCRIPT_BREAKERS = ["</script><script>alert(1)</script>", "</SCRIPT >", "<!--<script>", "]]>", "\u2028\u2029",
                   "\"'\\&"]


def hostile_run(root: Path) -> tuple[Path, Path, Path]:
    """A chain data -> NAMES[0] -> NAMES[1] ... of device dumps, ground truth and graph JSON."""
    dev = root / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    gt = root / "gt"
    dev.mkdir(parents=True)
    gt.mkdir()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    np.save(gt / f"data.0.{TS}.npy", x)
    ops = [G.op("data", "Data", 0, outputs=[G.desc(dtype="DT_FLOAT", layout="NCHW", shape=SHAPE, origin_shape=SHAPE)])]
    prev, prev_dev = "data", x.astype(np.float16)
    for k, name in enumerate(NAMES):
        truth = rng.standard_normal(SHAPE).astype(np.float32)
        out = (truth + rng.standard_normal(SHAPE).astype(np.float32) * np.float32(1e-3)).astype(np.float16)
        np.save(gt / f"{sanitize(name)}.0.{TS + k + 1}.npy", truth)
        write_dump(dev / f"Relu.{sanitize(name)}.{k + 1}.{TS + k + 1}", op_name=name,
                   inputs=[TensorData(prev_dev, format="NCHW")], outputs=[TensorData(out, format="NCHW")])
        ops.append(G.op(name, "Relu", k + 1, inputs=[f"{prev}:0"],
                        outputs=[G.desc(dtype="DT_FLOAT16", layout="NCHW", shape=SHAPE, origin_shape=SHAPE)]))
        prev, prev_dev = name, out
    return root / "dump", gt, G.write(root / "model.json", G.document(*ops))


class Scripts(HTMLParser):
    """The page's script elements as an HTML parser sees them: (attributes, text) in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data):
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, "".join(self._text)))
            self._open = None


def page_data(html: str) -> dict:
    parser = Scripts()
    parser.feed(html)
    parser.close()
    # exactly the data block, then the page script: no name ended the first early or opened another
    assert [attrs for attrs, _ in parser.scripts] == [{"type": "application/json", "id": "data"}, {}]
    text = parser.scripts[0][1]
    assert html.endswith("</script></body></html>") and "\u2028" not in text and "\u2029" not in text
    return json.loads(text)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return hostile_run(tmp_path_factory.mktemp("names"))


def test_report_data_block_gives_back_every_name(run, tmp_path):
    dump, gt, graph = run
    path = tmp_path / "report.html"
    assert main(["report", "-l", str(dump), "-r", str(gt), "-f", str(graph), "-o", str(path), "--quiet"]) == 0
    data = page_data(path.read_text(encoding="utf-8"))
    names = [r["name"] for r in data["rows"]]
    result = compare(dump, gt, fusion_json=graph)
    # the Data op: no dump, its name; the others as the graph JSON spells them (#34: one spelling everywhere)
    assert names == ["data"] + [r.shown_tensor for r in result.rows[1:]]
    for name in NAMES:  # the hostile characters arrive whole, not even sanitised as in the dump's file names
        assert f"{name}:output:0" in names
    assert data["cells"] == [cells + [r.status] for cells, r in zip(result.table()[1:], result.rows)]


def test_names_that_close_the_script_element_stay_inside_it(run):
    dump, gt, graph = run
    result = compare(dump, gt, fusion_json=graph)
    advice = [Advice("hostile", name, None, f"message {name} {name}", {"name": name}) for name in SCRIPT_BREAKERS]
    data = page_data(render(ReportData(result, advice)))
    assert [a["layer"] for a in data["advice"]] == SCRIPT_BREAKERS
    assert [a["evidence"]["name"] for a in data["advice"]] == SCRIPT_BREAKERS
    assert [a["message"] for a in data["advice"]] == [f"message {n} {n}" for n in SCRIPT_BREAKERS]


def test_hostile_names_fill_the_table_in_chromium(run, tmp_path):
    if CHROMIUM is None:
        if os.environ.get("DUMPCMP_CI"):
            pytest.fail("chromium is missing in CI (.ci/run installs it)")
        pytest.skip("headless Chromium (Debian package chromium) is not installed")
    dump, gt, graph = run
    path = tmp_path / "report.html"
    assert main(["report", "-l", str(dump), "-r", str(gt), "-f", str(graph), "-o", str(path), "--quiet"]) == 0
    rows = len(page_data(path.read_text(encoding="utf-8"))["rows"])
    b = Browser(str(tmp_path / "profile"))
    try:
        b.open(path.as_uri())
        assert b.eval("document.body.dataset.ready") == "1"
        assert b.eval("document.querySelectorAll('#rows tbody tr').length") == rows == 1 + 2 * len(NAMES)
        assert b.eval("document.querySelectorAll('script').length") == 2
        assert b.errors() == []
    finally:
        b.close()
