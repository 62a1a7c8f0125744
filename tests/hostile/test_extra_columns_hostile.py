"""Hostile cells in extra metric columns: a custom algorithm returning infinities, overflowing numbers, empty and
blank texts, words, separators, line breaks, formulas, markup and a 5,000-character text, with markup in its message.
Gates, `--json`, the report and diff, in a real process: no traceback, exit 0/1/2 as documented, the report's table
the result file's, standard output pure JSON with `--json -`."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

from dumpcmp.output.table import csv_safe

from helpers.custom_metrics import plugins
from helpers.reportmodel import Chain

CELLS = ["inf", "-inf", "1e400", "nan", " 3 ", "", "\u00fcn\u00ef", "a,b\nc", "=1+1", "</script><b>x", "-0", "1" * 5000]
ODD = ("import itertools\n"
       f"_CELLS = itertools.cycle({CELLS!r})\n"
       "def compare(x, y, args):\n"
       "    return next(_CELLS), '</script><!-- \\u2028 ,;'\n")


def run(*argv, env):
    return subprocess.run([sys.executable, "-m", "dumpcmp", *argv], capture_output=True, text=True, env=env,
                          timeout=120)


def test_hostile_cells_through_every_output(tmp_path, rng):
    chain = Chain(tmp_path, rng, 6)
    folder = plugins(tmp_path / "c", {"alg_Odd.py": ODD})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out, html = tmp_path / "r.csv", tmp_path / "r.html"
    proc = run("compare", *chain.args(), "-c", str(folder), "-alg", "0,Odd", "-o", str(out), "--html", str(html),
               "--quiet", "--fail-above", "Odd=0", "--fail-on", "Odd", "--json", "-", env=env)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)  # nothing but the JSON on standard output
    (run_,) = doc["runs"]
    values = [r["values"]["Odd"] for r in run_["extra_metrics"]["rows"]]
    assert len(values) == 12
    # numbers as numbers, NaN (and the empty cell) as null, infinities and words as their text
    assert values[:6] == ["inf", "-inf", "1e400", None, 3.0, None]
    assert values[6:10] == ["\u00fcn\u00ef", "a,b\nc", "=1+1", "</script><b>x"]
    assert values[10] == 0.0 and values[11] == "1" * 5000  # a number too large for a double: inf, kept as text
    # the gates read op0's input and the outputs (an input repeating an output is listed once, as the output): cells
    # 0, 1, 3, 5, 7, 9, 11. The ceiling: inf and the 5,000 ones are above 0, NaN, the empty cell and the texts fail,
    # -inf passes; --fail-on: NaN, the empty cell and the texts
    failing = run_["gate"]["failing"]
    assert sum(1 for f in failing if not f.startswith("[Odd]")) == 6
    assert sum(1 for f in failing if f.startswith("[Odd]")) == 4
    # the report's table is the result file's (there a formula-like cell is behind a space), the markup inert inside
    # the page's data
    with open(out, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    page = html.read_text(encoding="utf-8")
    assert page.count("</script>") == 2  # the data's and the script's own
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1))
    assert [[csv_safe(x) for x in c[:-1]] for c in data["cells"]] == table[1:] and data["extra"] == ["Odd"]
    # diff: a column of words is not compared (exit 2, one line), cosine is, with no note
    proc = run("diff", str(out), str(out), "--metric", "Odd", env=env)
    assert proc.returncode == 2 and "the Odd column holds" in proc.stderr and "Traceback" not in proc.stderr
    proc = run("diff", str(out), str(out), env=env)
    assert proc.returncode == 0 and "note" not in proc.stdout, proc.stdout


def test_gate_text_of_a_bound_on_numbers_that_are_not_finite(tmp_path, rng):
    """The Python API: infinities compare as numbers; a floor below -inf never fails."""
    from dumpcmp.comparison.compare import compare
    from dumpcmp.comparison.custom_alg import CustomAlgorithms
    from dumpcmp.output.gate import evaluate, parse_bounds

    chain = Chain(tmp_path, rng, 2)
    folder = plugins(tmp_path / "c", {"alg_Inf.py": "def compare(x, y, args):\n    return '-inf', ''\n"})
    result = compare(chain.root / "dump", chain.gt, fusion_json=chain.graph,
                     custom_algorithms=CustomAlgorithms(folder, "0,Inf"))
    assert evaluate(result, bounds=parse_bounds(["Inf=1"], below=False)).passed
    gate = evaluate(result, bounds=parse_bounds(["Inf=-1e308"]))
    assert len(gate.failing) == 3 and all(f.endswith("Inf -inf < -1e+308") for f in gate.failing)
