"""`dumpcmp file_compare -m MY.npy -g GOLDEN.npy -out DIR` against the original tool's `msaccucmp file_compare`
(issue #38), run unmodified on the corpus's pairs (make_corpus.file_compare_cases; expected/file_compare/ holds its
result files and its console lines, made by regenerate.py): every byte of the file, every console line."""

from __future__ import annotations

import pytest

from agreement import EXPECTED, PLACEHOLDER
import make_corpus

from dumpcmp.cli import main

CASES = sorted(make_corpus.file_compare_cases())


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("fc").resolve()
    return root, make_corpus.write_file_compare(root / "corpus" / "file_compare")


@pytest.mark.parametrize("name", CASES)
def test_file_and_console_are_the_originals(folder, name, tmp_path, capsys):
    root, files = folder
    out = tmp_path / "out"
    out.mkdir()
    assert main(["file_compare", "-m", str(files / f"{name}_my.npy"), "-g", str(files / f"{name}_golden.npy"),
                 "-out", str(out)]) == 0
    [result] = sorted(out.glob("file_result_*.txt"))
    assert len(result.name) == len("file_result_YYYYmmddHHMMSS.txt")
    assert result.read_bytes() == (EXPECTED / "file_compare" / f"{name}.txt").read_bytes()
    console = capsys.readouterr().out.replace(str(root / "corpus"), PLACEHOLDER).splitlines()
    expected = (EXPECTED / "file_compare" / f"{name}.console.txt").read_text(encoding="utf-8").splitlines()
    assert console[:-1] == expected and console[-1] == f"  result: {result}"


def test_bad_input_is_exit_2_and_writes_nothing(folder, tmp_path, capsys):
    _, files = folder
    out = tmp_path / "out"
    out.mkdir()
    mine, other = str(files / "fp32_fp16_my.npy"), str(files / "int32_fp64_golden.npy")
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"\x93NUMPY")
    assert main(["file_compare", "-m", mine, "-g", other, "-out", str(out)]) == 2  # shapes differ
    assert "does not match the ground truth shape" in capsys.readouterr().err
    assert main(["file_compare", "-m", mine, "-g", str(bad), "-out", str(out)]) == 2
    assert "Only .npy files" in capsys.readouterr().err
    truncated = tmp_path / "t.npy"
    truncated.write_bytes((files / "fp32_fp16_my.npy").read_bytes()[:100])
    assert main(["file_compare", "-m", mine, "-g", str(truncated), "-out", str(out)]) == 2
    assert str(truncated) in capsys.readouterr().err
    assert main(["file_compare", "-m", mine, "-g", mine, "-out", str(tmp_path / "none")]) == 2
    assert list(out.iterdir()) == []
