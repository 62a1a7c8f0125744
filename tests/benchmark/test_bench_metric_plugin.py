"""`dumpcmp bench compare --metric plugin:NAME`: a metric plug-in timed on every case beside the built-ins, in the same
run (issue #38); one that does not exist or fails: exit 2, nothing measured."""

from __future__ import annotations

import json

import pytest

from dumpcmp.cli import main

PLUGIN = '''
import numpy as np


class Sq:
    def __init__(self):
        self.total = 0.0

    def update(self, device, truth):
        d = device.astype(np.float64) - truth
        self.total += float(np.dot(d, d))

    def merge(self, other):
        self.total += other.total

    def result(self):
        return self.total
'''


def _folder(tmp_path, text):
    (tmp_path / "c" / "metric").mkdir(parents=True)
    (tmp_path / "c" / "metric" / "metric_Sq.py").write_text(text, encoding="utf-8")
    return str(tmp_path / "c")


def test_the_plugin_is_timed_on_every_case_and_thread_count(tmp_path, capsys):
    out = tmp_path / "b.json"
    code = main(["bench", "compare", "--size", "256KB", "--threads", "1,2", "--repeats", "1", "--quiet",
                 "--metric", "plugin:Sq", "--custom", _folder(tmp_path, PLUGIN), "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    result = json.loads(out.read_text())
    assert result["checked"] is True  # the built-ins are still checked; the plug-in's values are the user's
    mine = [r for r in result["results"] if r["metrics"] == "plugin:Sq"]
    assert {(r["case"], r["threads"]) for r in mine} == {(c, t) for c in (
        "fp16 vs fp32", "fp32 vs fp32", "fp16 NC1HWC0 dump vs fp32 NCHW", "fp16 FRACTAL_NZ dump vs fp32 ND")
        for t in (1, 2)}
    assert all(r["check"] == "plug-in" and r["reads"] == 1 and r["gbps"]["median"] > 0 for r in mine)
    assert "plugin:Sq" in text


@pytest.mark.parametrize(("text", "metric", "words"), [
    (PLUGIN, "plugin:Nope", "--metric plugin:Nope: no metric plug-in of that name"),
    (PLUGIN.replace("self.total += float", "raise ValueError('no'); self.total += float"), "plugin:Sq",
     "Metric plug-in Sq: ValueError: no"),
])
def test_a_missing_or_failing_plugin_exits_2(tmp_path, capsys, text, metric, words):
    code = main(["bench", "compare", "--size", "64KB", "--threads", "1", "--repeats", "1", "--quiet",
                 "--metric", metric, "--custom", _folder(tmp_path, text)])
    assert code == 2 and words in capsys.readouterr().err
