"""`compare` on the command line lets each pair's files go once its row is put (issue #35, memory): the device
dumps' headers (HeadDump), their DeviceRefs and the scan entries of both sides are freed while the run goes on,
none left by the time the summary, the advice and --json run; the result file, --json and the summary are the
bytes they were. With --html (whose histograms re-read the tensors) and through the Python API they are kept."""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path

import pytest

import dumpcmp.cli.finish as finish_module
import dumpcmp.comparison.compare as compare_module
from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare
from dumpcmp.comparison.sources import DeviceRef
from dumpcmp.dumps.dump import HeadDump
from dumpcmp.dumps.scan import DumpEntry, GroundTruthEntry

sys.path.insert(0, str(Path(__file__).parents[1] / "comparison"))
from test_stream import _model  # noqa: E402

_HELD = (HeadDump, DeviceRef, DumpEntry, GroundTruthEntry)


def _live() -> dict[str, int]:
    out = {t.__name__: 0 for t in _HELD}
    for o in gc.get_objects():
        if isinstance(o, _HELD):
            out[type(o).__name__ if type(o) in _HELD else next(t for t in _HELD if isinstance(o, t)).__name__] += 1
    return out


@pytest.fixture()
def model(tmp_path):
    return _model(tmp_path, n=24)


def _run(model, tmp_path, monkeypatch, name: str, *extra: str) -> tuple[dict[str, int], list[int], Path, Path]:
    dev, gt, graph = model
    out = tmp_path / name
    out.mkdir()
    at_finish: dict[str, int] = {}
    per_batch: list[int] = []
    real_finish, real_run = finish_module.finish, compare_module._Batch.run

    def counted_finish(*a, **k):
        at_finish.update(_live())
        return real_finish(*a, **k)

    def counted_run(self) -> None:
        per_batch.append(_live()["HeadDump"])
        real_run(self)

    monkeypatch.setattr(finish_module, "finish", counted_finish)
    monkeypatch.setattr(compare_module._Batch, "run", counted_run)
    monkeypatch.setattr(compare_module, "_BATCH_PAIRS", 2)
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "-o", str(out / "r.csv"),
                 "--json", str(out / "r.json"), *extra]) == 0
    monkeypatch.undo()
    return at_finish, per_batch, out / "r.csv", out / "r.json"


def test_the_cli_lets_headers_and_scan_entries_go_as_rows_are_put(model, tmp_path, monkeypatch, capsys) -> None:
    gc.collect()
    before = _live()
    at_finish, per_batch, csv, _ = _run(model, tmp_path, monkeypatch, "out")
    assert {k: at_finish[k] - before[k] for k in at_finish} == {t.__name__: 0 for t in _HELD}
    assert per_batch[0] > 0 and per_batch[-1] < per_batch[0]  # freed while the run goes on, not at its end
    expected = tmp_path / "whole.csv"
    compare(model[0], model[1], fusion_json=model[2]).write(expected)  # the API's rows, refs kept
    assert csv.read_bytes() == expected.read_bytes()


def test_json_and_summary_are_the_same_with_the_refs_kept(model, tmp_path, monkeypatch, capsys) -> None:
    """--html keeps the refs (its histograms re-read the tensors): the JSON and the summary lines are the same
    bytes as without it, where they were let go."""
    _, _, csv_a, json_a = _run(model, tmp_path, monkeypatch, "a")
    said_a = capsys.readouterr().out.replace(str(tmp_path / "a"), "OUT")
    at_finish, _, csv_b, json_b = _run(model, tmp_path, monkeypatch, "b", "--html", str(tmp_path / "b" / "r.html"))
    said_b = capsys.readouterr().out.replace(str(tmp_path / "b"), "OUT")
    assert at_finish["HeadDump"] > 0 and at_finish["GroundTruthEntry"] > 0
    assert csv_a.read_bytes() == csv_b.read_bytes()
    assert json.loads(json_a.read_text()) == json.loads(json_b.read_text())
    assert [line for line in said_a.splitlines() if "report:" not in line] == \
        [line for line in said_b.splitlines() if "report:" not in line]


def test_constants_are_still_told_apart_once_let_go(model, tmp_path, monkeypatch, capsys) -> None:
    """A ground truth marked a constant in golden_index.csv: its path is what is kept of it, so the summary's
    weights-and-constants line and the JSON say what they say with the refs kept (--html)."""
    import csv

    from dumpcmp.dumps.ground_truth import CONSTANT_MARK, INDEX_COLUMNS, INDEX_NAME

    gt = model[1]
    marked = sorted(p.name for p in gt.glob("op*.npy"))[:3]
    with open(gt / INDEX_NAME, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(INDEX_COLUMNS)
        for k, name in enumerate(marked):
            w.writerow([k, name.split(".")[0], name.split(".")[0], "Const", 0, "", name, "[8]", "float32",
                        CONSTANT_MARK])
    at_a, _, csv_a, json_a = _run(model, tmp_path, monkeypatch, "a")
    said_a = capsys.readouterr().out.replace(str(tmp_path / "a"), "OUT")
    assert at_a["GroundTruthEntry"] == 0
    assert "weights and constants: 3 compared apart" in said_a
    _, _, csv_b, json_b = _run(model, tmp_path, monkeypatch, "b", "--html", str(tmp_path / "b" / "r.html"))
    said_b = capsys.readouterr().out.replace(str(tmp_path / "b"), "OUT")
    assert csv_a.read_bytes() == csv_b.read_bytes()
    assert json.loads(json_a.read_text()) == json.loads(json_b.read_text())
    assert [line for line in said_a.splitlines() if "report:" not in line] == \
        [line for line in said_b.splitlines() if "report:" not in line]
