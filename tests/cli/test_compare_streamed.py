"""`compare -o RESULT.csv` writes the result file while it compares (issue #35): a batch's rows go to a temporary
file beside it as the batch finishes, in graph order; the file takes its name at the end, the same bytes as the
whole table written after the run; nothing is left behind or replaced when the run stops early."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import dumpcmp.comparison.compare as compare_module
from dumpcmp.cli import main
from dumpcmp.comparison.compare import compare
from dumpcmp.support import files

sys.path.insert(0, str(Path(__file__).parents[1] / "comparison"))
from test_stream import _model  # noqa: E402


@pytest.fixture()
def model(tmp_path):
    return _model(tmp_path, n=24)


def _temps(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if files.is_temp_name(p.name)]


def test_the_result_file_grows_while_the_batches_run(model, tmp_path, monkeypatch) -> None:
    dev, gt, graph = model
    out = tmp_path / "out"
    out.mkdir()
    seen: list[int] = []  # the temporary result file's size as each batch begins
    real_run = compare_module._Batch.run

    def logged(self) -> None:
        seen.append(sum(p.stat().st_size for p in _temps(out)))
        real_run(self)

    monkeypatch.setattr(compare_module, "_BATCH_PAIRS", 2)
    monkeypatch.setattr(compare_module._Batch, "run", logged)
    import dumpcmp.output.table as table

    real_init = table.CsvRows.__init__
    monkeypatch.setattr(table.CsvRows, "__init__", lambda self, *a, **k: real_init(self, *a, **{**k, "lines": 3}))
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "-o", str(out / "r.csv"), "--quiet"]) == 0
    assert len(seen) >= 6 and seen[-1] > seen[0]  # rows were in the file before the last batch began
    assert _temps(out) == []
    expected = tmp_path / "whole.csv"
    compare(dev, gt, fusion_json=graph).write(expected)
    assert (out / "r.csv").read_bytes() == expected.read_bytes()


def test_a_run_stopped_mid_way_leaves_nothing(model, tmp_path, monkeypatch, capsys) -> None:
    """A Ctrl-C while comparing: no result file, no temporary one."""
    dev, gt, graph = model
    out = tmp_path / "out"
    out.mkdir()
    calls = []
    real_run = compare_module._Batch.run

    def stopped(self) -> None:
        calls.append(1)
        if len(calls) == 4:
            self.begun.set()
            self._error = KeyboardInterrupt()
            self.done.set()
            return
        real_run(self)

    monkeypatch.setattr(compare_module, "_BATCH_PAIRS", 2)
    monkeypatch.setattr(compare_module._Batch, "run", stopped)
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "-o", str(out / "r.csv"),
                 "--quiet"]) == 130
    assert os.listdir(out) == []


def test_a_file_that_appears_meanwhile_is_not_replaced(model, tmp_path, monkeypatch, capsys) -> None:
    """Without --force, a result file someone made while the run compared is kept, and the run's is not left."""
    dev, gt, graph = model
    out = tmp_path / "out"
    out.mkdir()
    target = out / "r.csv"
    real_run = compare_module._Batch.run

    def racing(self) -> None:
        if not target.exists():
            target.write_text("mine")
        real_run(self)

    monkeypatch.setattr(compare_module._Batch, "run", racing)
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "-o", str(target), "--quiet"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert target.read_text() == "mine" and os.listdir(out) == ["r.csv"]


def test_several_runs_each_their_file_with_force(model, tmp_path) -> None:
    """--force replaces a file that is a symlink by the result, never writing through it."""
    dev, gt, graph = model
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    (out / "r.csv").symlink_to(victim)
    assert main(["compare", "-l", str(dev), "-r", str(gt), "-f", str(graph), "-o", str(out / "r.csv"), "--quiet",
                 "--force"]) == 0
    assert victim.read_text() == "keep" and not (out / "r.csv").is_symlink()
    expected = tmp_path / "whole.csv"
    compare(dev, gt, fusion_json=graph).write(expected)
    assert (out / "r.csv").read_bytes() == expected.read_bytes()
