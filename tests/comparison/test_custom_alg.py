"""`compare -c DIR -alg Name -a ...`: the original tool's custom algorithms (issue #38). Every cell of the original's
own result files for them is checked by tests/oracle (custom_alg_*.csv); here what a plug-in receives, what one that
misbehaves does to the run, and the bad input that stops it before it starts (exit 2, one line, no traceback)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))

import make_corpus  # noqa: E402

from dumpcmp.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("custom") / "corpus")


def _plugins(folder: Path, files: dict[str, str]) -> Path:
    (folder / "algorithm").mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / "algorithm" / name).write_text(text, encoding="utf-8")
    return folder


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _compare(corpus, tmp_path, *flags: str) -> tuple[int, Path]:
    out = tmp_path / "r.csv"
    code = main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "-o", str(out), "--quiet", *flags])
    return code, out


def test_plugin_gets_whole_flat_float32_tensors_and_its_options(corpus, tmp_path):
    folder = _plugins(tmp_path / "c", {"alg_Probe.py": (
        "import os\n"
        "def compare(x, y, args):\n"
        "    mine = os.path.basename(args.get()['my_output_dump_file'])\n"
        "    return '%s/%s/%d/%d' % (x.dtype, y.dtype, x.ndim, x.size), "
        "'k=%s;%s;%s' % (args.k, mine, args.shape_type.name)\n")})
    code, out = _compare(corpus, tmp_path, "-c", str(folder), "-alg", "Probe,0", "-a", "Probe:k=v")
    assert code == 0
    rows = _rows(out)
    assert out.read_text(encoding="utf-8").splitlines()[0].split(",")[8:11] == ["Shape", "Probe", "CosineSimilarity"]
    by_tensor = {r["TensorIndex"]: r for r in rows}
    conv = by_tensor["conv1relu1:output:0"]  # NC1HWC0 on the device, compared as [1,20,5,5]
    assert conv["Probe"] == "float32/float32/1/500"
    assert conv["CompareFailReason"] == f"k=v;Conv2D.conv1relu1.2.{make_corpus.TIMESTAMP};Tensor"
    # the scalar note is cosine similarity's: after the plug-in's message, in -alg order
    assert by_tensor["scalar_op:output:0"]["CompareFailReason"].endswith("Scalar,This tensor is scalar.")
    assert by_tensor["greater:output:0"]["Probe"] == "NaN"  # a bool pair: not called
    assert "Algorithm Probe does not support Boolean types." in by_tensor["greater:output:0"]["CompareFailReason"]


def test_a_plugin_that_exits_or_raises_never_stops_the_run(corpus, tmp_path):
    folder = _plugins(tmp_path / "c", {
        "alg_Exit.py": "import sys\ndef compare(x, y, args):\n    sys.exit(3)\n",
        "alg_Raise.py": "def compare(x, y, args):\n    raise MemoryError('no room')\n",
        "alg_Fine.py": "def compare(x, y, args):\n    return 'ok', ''\n"})
    code, out = _compare(corpus, tmp_path, "-c", str(folder), "-alg", "Exit,Raise,Fine")
    assert code == 0
    row = {r["TensorIndex"]: r for r in _rows(out)}["pool1:output:0"]
    assert (row["Exit"], row["Raise"], row["Fine"]) == ("NaN", "NaN", "ok")
    assert row["CompareFailReason"] == ("Failed to execute 'compare' in 'Exit'. 3,"
                                        "Failed to execute 'compare' in 'Raise'. no room")


@pytest.mark.parametrize(("files", "flags", "words"), [
    ({}, ["-c", "{missing}"], "not a folder"),
    ({"alg_Bad.py": "def compare(x, y, args)\n"}, ["-alg", "Bad"], "alg_Bad.py: cannot import the custom algorithm"),
    ({"alg_A.py": "def compare(x, y, args):\n    return '1', ''\n"}, ["-alg", "Nope"], "no algorithm it names"),
    ({"alg_A.py": "def compare(x, y):\n    return '1', ''\n"}, ["-alg", "A"], "no algorithm of ['A'] can be used"),
    ({"alg_A.py": "def compare(x, y, args):\n    return '1', ''\n"}, ["-alg", "A", "-a", "A:k"],
     "the algorithm argument ('A:k') is invalid"),
])
def test_bad_input_is_exit_2_with_one_clear_line(corpus, tmp_path, files, flags, words):
    folder = _plugins(tmp_path / "c", files)
    flags = [f.replace("{missing}", str(tmp_path / "missing")) for f in flags]
    if "-c" not in flags:
        flags = ["-c", str(folder), *flags]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "compare", "-l", str(corpus["dump"]), "-r",
                           str(corpus["gt"]), "-f", str(corpus["graph"]), "-o", str(tmp_path / "r.csv"), *flags],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r.csv").exists()


def test_a_plugin_others_may_write_is_refused(corpus, tmp_path):
    folder = _plugins(tmp_path / "c", {"alg_A.py": "def compare(x, y, args):\n    return '1', ''\n"})
    os.chmod(folder / "algorithm" / "alg_A.py", 0o646)
    code, out = _compare(corpus, tmp_path, "-c", str(folder), "-alg", "A")
    assert code == 2 and not out.exists()


def test_sigterm_inside_a_plugin_leaves_no_result_and_no_scratch(corpus, tmp_path):
    import signal
    import time

    marker = tmp_path / "inside"
    folder = _plugins(tmp_path / "c", {"alg_Slow.py": (
        "import pathlib, time\n"
        "def compare(x, y, args):\n"
        f"    pathlib.Path({str(marker)!r}).touch()\n"
        "    time.sleep(60)\n"
        "    return '1', ''\n")})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TMPDIR=str(scratch))
    proc = subprocess.Popen([sys.executable, "-m", "dumpcmp", "compare", "-l", str(corpus["dump"]), "-r",
                             str(corpus["gt"]), "-f", str(corpus["graph"]), "-c", str(folder), "-alg", "Slow",
                             "-o", str(tmp_path / "r.csv"), "--quiet"], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM and "stopped by signal 15" in err
    assert not (tmp_path / "r.csv").exists() and list(scratch.iterdir()) == []
