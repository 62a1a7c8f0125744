"""An unreadable golden_index.csv beside ground-truth files is said, not passed over (issue #34): without the index
the files pair by their names, and a file golden renamed (`a_b_1` for `a_b` beside `a/b`) then pairs wrongly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from dumpcmp.comparison.compare import compare

from comparison.test_golden_index_pairing import case as _case


@pytest.mark.parametrize("spoil", [b"order,op\n", b"\xff\xfe\n", None], ids=["header", "encoding", "bad-line"])
def test_an_unreadable_index_is_named_in_the_notes(tmp_path, spoil):
    dev, gt, graph = _case(tmp_path)
    index = gt / "golden_index.csv"
    text = index.read_bytes()
    index.write_bytes(spoil if spoil is not None else text + b"x,y,z,w,not-a-number,f,g,[1],,\n")
    result = compare(dev, gt, fusion_json=graph)
    said = [n for n in result.notes if "golden_index.csv" in n]
    assert len(said) == 1 and "pair by their file names" in said[0], result.notes


@pytest.mark.parametrize("kind", ["folder", "fifo", "dev-zero", "broken-link"])
def test_an_index_that_is_no_regular_file_is_named_and_never_opened(tmp_path, kind):
    import os

    dev, gt, graph = _case(tmp_path)
    index = gt / "golden_index.csv"
    index.unlink()
    {"folder": index.mkdir, "fifo": lambda: os.mkfifo(index), "dev-zero": lambda: index.symlink_to("/dev/zero"),
     "broken-link": lambda: index.symlink_to(tmp_path / "nowhere")}[kind]()
    result = compare(dev, gt, fusion_json=graph)  # a FIFO opened for reading would block here
    said = [n for n in result.notes if "golden_index.csv: not a regular file" in n]
    assert len(said) == 1, result.notes


def test_a_readable_index_adds_no_note_and_the_cli_prints_the_note(tmp_path):
    dev, gt, graph = _case(tmp_path)
    assert not [n for n in compare(dev, gt, fusion_json=graph).notes if "golden_index" in n]
    (gt / "golden_index.csv").write_bytes(b"order,op\n")
    p = subprocess.run([sys.executable, "-m", "dumpcmp", "compare", "-l", str(dev), "-r", str(gt), "-f", str(graph),
                        "-o", str(tmp_path / "r.csv")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr
    assert "golden_index.csv" in p.stdout + p.stderr, p.stdout


def test_locate_names_an_unreadable_index(tmp_path):
    from dumpcmp.debug.locate import locate

    dev, gt, graph = _case(tmp_path)
    (gt / "golden_index.csv").write_bytes(b"\xff\xfe\n")
    result = locate(tmp_path / "m.onnx", dev, gt, fusion_json=graph)
    assert any("golden_index.csv" in n for n in result.notes), result.notes
    assert "note: ground truth: " in result.summary() and "golden_index.csv" in result.summary()


def test_extract_warns_of_an_unreadable_index(tmp_path):
    from dumpcmp.debug.extract.export import extract

    dev, gt, graph = _case(tmp_path)
    (gt / "golden_index.csv").write_bytes(b"order,op\n")
    r = extract(tmp_path / "m.onnx", ["r"], ["y"], dump=dev, graph_json=graph, out=tmp_path / "out",
                ground_truth=gt, data="ground-truth", bin_dtype="fp32")
    assert any("golden_index.csv" in n for n in r.notes), r.notes
