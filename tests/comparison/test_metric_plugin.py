"""Streaming metric plug-ins (issue #38, "Also"): a class with update/merge/result run on the engine's float32 windows
in the compared order, its column(s) beside the built-ins; checked against NumPy on whole arrays, on 1 and 2 threads,
every dtype and a fractal layout; and what a bad plug-in does (its cells NaN and why, never the run stopped; a file
that does not import: exit 2 naming it)."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))

import make_corpus  # noqa: E402

from dumpcmp import TensorData, write_dump  # noqa: E402
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.comparison.custom_alg import CustomAlgorithms  # noqa: E402
from dumpcmp.comparison.metric_plugin import ENGINE_WINDOW, load_metric  # noqa: E402
from dumpcmp.dumps import layout as L  # noqa: E402
from dumpcmp.support.native import core  # noqa: E402

SSD = '''
import numpy as np


class SSD:
    """Sum of squared differences and the element count: merge adds."""
    columns = ("SSD", "Count")

    def setup(self, options):
        self.scale = float(options.get("scale", "1"))

    def __init__(self):
        self.total, self.n = 0.0, 0

    def update(self, device, truth):
        assert device.dtype == np.float32 and truth.dtype == np.float32 and device.ndim == 1
        assert device.shape == truth.shape
        d = device.astype(np.float64) - truth.astype(np.float64)
        self.total += float(np.dot(d, d)) * self.scale
        self.n += device.size

    def merge(self, other):
        self.total += other.total
        self.n += other.n

    def result(self):
        return self.total, float(self.n)
'''

# the same on whole tensors, through the original's custom-algorithm contract: an independent path to the values
REF_ALG = '''
import numpy as np


def compare(x, y, args):
    d = x.astype(np.float64) - y.astype(np.float64)
    v = float(np.dot(d, d))
    return ("%.6f" % v) if np.isfinite(v) else ("NaN" if np.isnan(v) else "inf"), ""
'''


class Order:
    """Records the first element of every window, in the order merged: the windows' order is the result."""
    columns = ("First",)

    def __init__(self):
        self.firsts = []

    def update(self, device, truth):
        self.firsts.append((float(device[0]), float(truth[0]), device.size))

    def merge(self, other):
        self.firsts += other.firsts

    def result(self):
        return float(len(self.firsts))


def _metric_dir(folder: Path, files: dict[str, str]) -> Path:
    (folder / "metric").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / "metric" / name).write_text(text, encoding="utf-8")
    return folder


def _ssd(tmp_path: Path, **options: str):
    folder = _metric_dir(tmp_path / "plugins", {"metric_SSD.py": SSD})
    plugin = load_metric("SSD", [folder], options)
    assert plugin is not None and not plugin.problem
    return plugin


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "float64",
                                   "bool"])
def test_sum_of_squares_equals_numpy_on_every_dtype_and_thread_count(tmp_path, dtype):
    import ml_dtypes

    rng = np.random.default_rng(7)
    n = 3 * ENGINE_WINDOW + 1234  # four windows, the last one short
    raw = rng.standard_normal(n) * 20
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    x = (raw > 0) if dtype == "bool" else raw.astype(np_dtype)
    truth = (raw + rng.standard_normal(n)).astype(np.float32)
    plugin = _ssd(tmp_path, scale="0.5")
    sx, sy = core.compare.source_from_array(x), core.compare.source_from_array(truth)
    one, two = plugin.compute(sx, sy, 1), plugin.compute(sx, sy, 2)
    assert one == two and one[1] == ""
    d = x.astype(np.float32).astype(np.float64) - truth.astype(np.float64)
    want = float(np.dot(d, d)) * 0.5
    assert float(one[0][0]) == pytest.approx(want, rel=1e-9, abs=1e-6)
    assert one[0][1] == f"{float(n):.6f}"


def test_windows_are_the_compared_order_of_a_fractal_layout_in_order(tmp_path):
    rng = np.random.default_rng(3)
    shape = (3, 300, 170)  # FRACTAL_NZ: rows of the compared order cross every tile
    truth = rng.standard_normal(shape).astype(np.float32)
    x16 = (truth + rng.standard_normal(shape).astype(np.float32) * 0.01).astype(np.float16)
    path = tmp_path / "MatMul.mm.1.1700000000000001"
    write_dump(path, op_name="mm", outputs=[TensorData(L.convert(x16, "ND", "FRACTAL_NZ"), format="FRACTAL_NZ",
                                                       original_shape=shape)])
    from dumpcmp.dumps.dump import open_dump

    x = core.compare.source_from_dump(open_dump(path)._file, "output", 0, dst_format="ND", dst_shape=list(shape))
    y = core.compare.source_from_array(truth)
    plugin = _ssd(tmp_path)
    cells = {t: plugin.compute(x, y, t) for t in (1, 2)}
    assert cells[1] == cells[2]
    d = x16.astype(np.float64).ravel() - truth.astype(np.float64).ravel()
    assert float(cells[1][0][0]) == pytest.approx(float(np.dot(d, d)), rel=1e-9, abs=1e-6)
    order = load_metric("Order", cls=Order)
    seen: list = []

    class Spy(Order):
        def result(self):
            seen.append(self.firsts)
            return super().result()

    order = load_metric("Order", cls=Spy)
    order.compute(x, y, 2)
    flat_x, flat_y = x16.ravel().astype(np.float32), truth.ravel()
    starts = range(0, flat_x.size, ENGINE_WINDOW)
    assert seen[0] == [(float(flat_x[s]), float(flat_y[s]), min(ENGINE_WINDOW, flat_x.size - s)) for s in starts]


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("metric") / "corpus")


def _compare(corpus, tmp_path, *flags: str) -> tuple[int, Path]:
    out = tmp_path / "r.csv"
    code = main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "-o", str(out), "--quiet", *flags])
    return code, out


def test_cli_columns_after_builtins_equal_the_whole_tensor_reference(corpus, tmp_path):
    folder = _metric_dir(tmp_path / "c", {"metric_SSD.py": SSD})
    (folder / "algorithm").mkdir()
    (folder / "algorithm" / "alg_Ref.py").write_text(REF_ALG, encoding="utf-8")
    code, out = _compare(corpus, tmp_path, "-c", str(folder), "-alg", "0,plugin:SSD,Ref", "-a", "SSD:scale=1")
    assert code == 0
    header = out.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[header.index("CosineSimilarity"):header.index("CompareFailReason")] == \
        ["CosineSimilarity", "SSD", "Count", "Ref"]
    compared = [r for r in _rows(out) if r["Ref"] not in ("", "NaN")]
    assert len(compared) >= 5
    for r in compared:
        assert r["SSD"] == r["Ref"], r["TensorIndex"]
        assert float(r["Count"]) > 0
    # -custom DIR gives the plug-ins too (no -c), selected by their bare name
    (tmp_path / "2").mkdir()
    code, out2 = _compare(corpus, tmp_path / "2", "-custom", str(folder), "-alg", "SSD,1")
    assert code == 0
    again = {r["TensorIndex"]: r["SSD"] for r in _rows(out2)}
    assert all(again[r["TensorIndex"]] == r["SSD"] for r in compared)


BAD = {
    "metric_Raises.py": "class Raises:\n    def update(self, d, t):\n        raise ValueError('bad window')\n"
                        "    def merge(self, o):\n        pass\n    def result(self):\n        return 1.0\n",
    "metric_Text.py": "class Text:\n    def update(self, d, t):\n        pass\n    def merge(self, o):\n        pass\n"
                      "    def result(self):\n        return 'high'\n",
    "metric_NoMerge.py": "class NoMerge:\n    def update(self, d, t):\n        pass\n"
                         "    def result(self):\n        return 1.0\n",
    "metric_Exits.py": "import sys\nclass Exits:\n    def update(self, d, t):\n        sys.exit(4)\n"
                       "    def merge(self, o):\n        pass\n    def result(self):\n        return 1.0\n",
    "metric_Base.py": "class Base:\n    def update(self, d, t):\n        raise GeneratorExit('g')\n"
                      "    def merge(self, o):\n        pass\n    def result(self):\n        return 1.0\n",
    "metric_Lines.py": "class Lines:\n    columns = ('a\\nb',)\n    def update(self, d, t):\n        pass\n"
                       "    def merge(self, o):\n        pass\n    def result(self):\n        return 1.0\n",
    "metric_Fine.py": "class Fine:\n    def update(self, d, t):\n        pass\n    def merge(self, o):\n        pass\n"
                      "    def result(self):\n        return 2\n",
}


def test_a_bad_plugin_gets_nan_and_its_reason_and_never_stops_the_run(corpus, tmp_path):
    folder = _metric_dir(tmp_path / "c", BAD)
    code, out = _compare(corpus, tmp_path, "-custom", str(folder), "-alg",
                         "plugin:Raises,plugin:Text,plugin:NoMerge,plugin:Exits,plugin:Base,plugin:Lines,plugin:Fine,0")
    assert code == 0
    row = {r["TensorIndex"]: r for r in _rows(out)}["pool1:output:0"]
    assert [row[c] for c in ("Raises", "Text", "NoMerge", "Exits", "Base", "Lines", "Fine")] == \
        ["NaN"] * 6 + ["2.000000"]
    assert row["CosineSimilarity"] not in ("", "NaN")
    assert row["CompareFailReason"] == (
        "Metric plug-in Raises: ValueError: bad window,Metric plug-in Text: TypeError: result() gave str 'high', "
        "not a float,Metric plug-in NoMerge: NoMerge has no method merge,Metric plug-in Exits: SystemExit: 4,"
        "Metric plug-in Base: GeneratorExit: g,Metric plug-in Lines: 'columns' of Lines is not a tuple of column names "
        "(('a\\nb',))")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    import os

    import dumpcmp

    env = dict(os.environ, PYTHONPATH=str(Path(dumpcmp.__file__).resolve().parents[1]))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=120)


@pytest.mark.parametrize(("files", "alg", "words"), [
    ({"metric_Broken.py": "import no_such_module_here\n"}, "plugin:Broken", "metric_Broken.py: cannot import"),
    ({}, "plugin:Nowhere", "-alg plugin:Nowhere: no metric plug-in of that name"),
    ({"metric_Exits.py": "import sys\nsys.exit(5)\n"}, "plugin:Exits",
     "metric_Exits.py: cannot import the metric plug-in: SystemExit: 5"),
    ({"metric_Clash.py": "class Clash:\n    columns = ('CosineSimilarity',)\n"}, "plugin:Clash",
     "its column 'CosineSimilarity' is already a column"),
    ({"metric_Fixed.py": "class Fixed:\n    columns = ('Value', 'CompareFailReason')\n"}, "plugin:Fixed",
     "its column 'CompareFailReason' is one of the result file's own columns"),
])
def test_a_plugin_that_cannot_be_used_exits_2_in_one_line(corpus, tmp_path, files, alg, words):
    folder = _metric_dir(tmp_path / "c", files)
    p = _cli("compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
             "-o", str(tmp_path / "r.csv"), "--quiet", "-custom", str(folder), "-alg", alg, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert words in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "r.csv").exists()


def test_api_takes_a_class_and_rows_carry_its_cells(corpus):
    import dumpcmp

    custom = CustomAlgorithms(None, "plugin:Order,0", metric_classes={"Order": Order})
    result = dumpcmp.compare(corpus["dump"], corpus["gt"], fusion_json=corpus["graph"], custom_algorithms=custom)
    table = result.table()
    column = table[0].index("First")
    assert table[0][column + 1] == "CosineSimilarity"
    assert "1.000000" in [row[column] for row in table[1:]]
    records = [r for r in result.to_records() if r["Status"] == "compared"]
    assert records and all(isinstance(r["First"], float) and r["First"] == 1.0 for r in records)


def test_an_installed_entry_point_is_found_by_name(corpus, tmp_path):
    site = tmp_path / "site"
    (site / "ssd_pkg").mkdir(parents=True)
    (site / "ssd_pkg" / "__init__.py").write_text(SSD, encoding="utf-8")
    info = site / "ssd_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ssd-pkg\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[dumpcmp.metrics]\nSSD = ssd_pkg:SSD\nGone = ssd_pkg:Missing\n",
                                           encoding="utf-8")
    import os

    import dumpcmp

    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(Path(dumpcmp.__file__).resolve().parents[1])]))
    base = [sys.executable, "-m", "dumpcmp", "compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]),
            "-f", str(corpus["graph"]), "--quiet"]
    p = subprocess.run(base + ["-o", str(tmp_path / "r.csv"), "-alg", "1,plugin:SSD"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    rows = _rows(tmp_path / "r.csv")
    assert [c for c in rows[0] if c in ("MaxAbsoluteError", "SSD", "Count")] == ["MaxAbsoluteError", "SSD", "Count"]
    assert any(r["SSD"] not in ("", "NaN") for r in rows)
    # an entry point whose object is not there: exit 2 naming it, before any comparison
    p = subprocess.run(base + ["-o", str(tmp_path / "g.csv"), "-alg", "plugin:Gone,0"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 2 and "entry point dumpcmp.metrics:Gone" in p.stderr and "Traceback" not in p.stderr


def test_the_cluster_refuses_plugins_before_it_starts(corpus):
    from dumpcmp.comparison.compare import compare_runs
    from dumpcmp.errors import DumpcmpError

    custom = CustomAlgorithms(None, "plugin:Order", metric_classes={"Order": Order})
    with pytest.raises(DumpcmpError, match="run on this machine only"):
        compare_runs(corpus["dump"], corpus["gt"], custom_algorithms=custom, client=object())


SLOW = '''
import os, time
class Slow:
    def update(self, d, t):
        open(os.environ["STARTED"], "w").close()
        time.sleep(60)
    def merge(self, o):
        pass
    def result(self):
        return 0.0
'''


@pytest.mark.parametrize("signum", [2, 15])
def test_a_signal_inside_a_plugin_ends_the_run_without_a_result_or_traceback(corpus, tmp_path, signum):
    import os
    import time

    import dumpcmp

    folder = _metric_dir(tmp_path / "c", {"metric_Slow.py": SLOW})
    started = tmp_path / "started"
    env = dict(os.environ, STARTED=str(started), PYTHONPATH=str(Path(dumpcmp.__file__).resolve().parents[1]))
    proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", "compare", "-l", str(corpus["dump"]), "-r",
                             str(corpus["gt"]), "-f", str(corpus["graph"]), "--quiet", "-o", str(tmp_path / "r.csv"),
                             "-custom", str(folder), "-alg", "plugin:Slow", "--threads", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert started.exists()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode in (130, 143, 128 + signum, -signum), err
    assert "Traceback" not in err
    assert not (tmp_path / "r.csv").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_an_exception_at_any_window_stops_the_engine_cleanly(threads):
    n = 5 * ENGINE_WINDOW - 7
    x = np.arange(n, dtype=np.float16)
    y = np.arange(n, dtype=np.float32)
    sx, sy = core.compare.source_from_array(x), core.compare.source_from_array(y)
    for stop_at in range(6):
        seen = []

        def callback(k, a, b, stop_at=stop_at):
            seen.append(k)
            if k == stop_at:
                raise (KeyboardInterrupt if stop_at % 2 else LookupError)(f"at {k}")

        if stop_at >= 5:
            core.compare.float32_windows(sx, sy, callback, threads, ENGINE_WINDOW)
        else:
            with pytest.raises(KeyboardInterrupt if stop_at % 2 else LookupError, match=f"at {stop_at}"):
                core.compare.float32_windows(sx, sy, callback, threads, ENGINE_WINDOW)
        assert seen == list(range(min(stop_at + 1, 5)))  # in window order, none after the one that raised


def test_an_empty_pair_gives_the_result_of_no_window(tmp_path):
    plugin = _ssd(tmp_path)
    empty = core.compare.source_from_array(np.zeros(0, np.float32))
    assert plugin.compute(empty, empty, 2) == (["0.000000", "0.000000"], "")
    with pytest.raises(ValueError, match="element counts differ"):
        core.compare.float32_windows(empty, core.compare.source_from_array(np.zeros(3, np.float32)), print)
