"""`dumpcmp info` on statistics dumps: a tree holding them (alone or beside tensor dumps), one file named alone,
and a corrupt one: exit 2 naming the file and line, no traceback (a real process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import dumpcmp
from dumpcmp.cli import main
from helpers.statsfile import record_of, write_stats

T0 = 1700000000000000
RUN = ("20240101120000", "0", "resnet50", "1", "0")


def records():
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    return [record_of("conv1", "input", 0, x, timestamp=T0), record_of("conv1", "output", 0, x, timestamp=T0),
            record_of("relu1", "output", 0, x, timestamp=T0 + 5)]


def test_tree_with_stats_beside_dumps(tmp_path, capsys):
    folder = tmp_path.joinpath(*RUN)
    folder.mkdir(parents=True)
    dumpcmp.write_dump(os.path.join(folder, f"Relu.relu1.2.0.{T0}"), op_name="relu1", outputs=[np.ones(3, np.float32)])
    write_stats(folder / "statistic.csv", records(), columns="counts")
    assert main(["info", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{tmp_path}: 1 run, 1 dump, 0 ground-truth files, 0 converted, 1 statistics file, 0 skipped"
    i = out.index("statistics: 1 file")
    assert out[i + 1] == f"  {folder / 'statistic.csv'}"
    assert out[i + 2].startswith("    statistics: 3 tensors of 2 ops; columns op_type, op_name, task_id")
    assert main(["info", "--json", str(tmp_path)]) == 0
    tree = json.loads(capsys.readouterr().out)["paths"][0]
    assert tree["summary"]["stats"] == 1
    (st,) = tree["stats"]
    assert (st["tensors"], st["ops"], st["run"]["data_index"], st["run"]["model_name"]) == (3, 2, 0, "resnet50")


def test_stats_only_tree_and_single_file(tmp_path, capsys):
    path = write_stats(tmp_path.joinpath(*RUN) / "statistic.csv", records())
    assert main(["info", "--json", str(tmp_path), str(path)]) == 0
    tree, one = json.loads(capsys.readouterr().out)["paths"]
    assert tree["summary"] == {"runs": 0, "dumps": 0, "ground_truth": 0, "converted": 0, "stats": 1, "skipped": 0}
    assert one["kind"] == "stats" and one["file"]["tensors"] == 3 and one["file"]["run"] is None
    assert main(["info", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "statistic.csv", "  statistics: 3 tensors of 2 ops; columns op_type, op_name, task_id, stream_id, timestamp, "
        "kind, slot, data_size, data_type, shape, max, min, mean, l2norm"]


def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120)


def test_corrupt_stats_exit_2_naming_file_and_line(tmp_path):
    path = write_stats(tmp_path.joinpath(*RUN) / "statistic.csv", records())
    lines = path.read_text().splitlines()
    lines[2] = lines[2].replace(",output,", ",outptu,")
    path.write_text("\n".join(lines) + "\n")
    done = run_cli("info", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{path}: line 3: column 6 (kind): 'outptu' is neither input nor output" in done.stderr
    # in a tree: listed as skipped with the same reason; nothing else usable there, so exit 2 as for any such tree
    done = run_cli("info", tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"skipped {path}: line 3: column 6 (kind)" in done.stderr
    path.write_text("")
    done = run_cli("info", path)
    assert done.returncode == 2 and "empty statistics file (no header line)" in done.stderr
