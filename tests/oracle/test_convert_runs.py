"""`dumpcmp convert` with the original's `-d -f -s -o -i -c -t` (and the same runs in dumpcmp's spelling) against
`msaccucmp convert` run unmodified (issue #38): make_corpus.convert_runs, kept by regenerate.py as
expected/convert_runs/{name}/. The same files, byte for byte; runs the original reports failed (a converter that
raises, -s that does not fit a tensor) write the same files and exit 2, the failures in convert_failed_file_list.txt."""

from __future__ import annotations

from pathlib import Path

import pytest

from agreement import EXPECTED
import make_corpus

from dumpcmp.cli import main

FAILED_LIST = "convert_failed_file_list.txt"
RUNS = sorted((EXPECTED / "convert_runs").iterdir())


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("corpus"))


def _same_files(out: Path, name: str) -> None:
    expected = EXPECTED / "convert_runs" / name
    want = sorted(p.name for p in expected.iterdir())
    got = sorted(p.name for p in out.iterdir() if p.name != FAILED_LIST)
    assert want and got == want
    for f in want:
        assert (out / f).read_bytes() == (expected / f).read_bytes(), f


def _run_names() -> list[str]:
    return sorted(p.name for p in RUNS)


def test_every_run_is_kept(paths):
    assert _run_names() == sorted(make_corpus.convert_runs(paths))


@pytest.mark.parametrize("name", _run_names())
def test_original_spelling(paths, tmp_path, name, capsys):
    flags = make_corpus.convert_runs(paths)[name]
    code = main(["convert", *flags, "-out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    _same_files(tmp_path / "out", name)
    if name.endswith("_fails"):
        assert code == 2 and "failed" in err and (tmp_path / "out" / FAILED_LIST).is_file()
    else:
        assert code == 0 and not (tmp_path / "out" / FAILED_LIST).exists()


def _ours(paths: dict[str, Path]) -> dict[str, list[str]]:
    runs = make_corpus.convert_runs(paths)
    conv = runs["nchw"][1]
    matmul = runs["nd_fractal_nz"][1]
    custom = runs["custom_fails"][-1]
    return {
        "nchw": ["-i", conv, "-format", "NCHW"],
        "nd_shape_o0": ["-i", matmul, "-format", "ND", "-shape", "18,33", "-tensor", "output", "-index", "0"],
        "i1": ["-i", conv, "-format", "NCHW", "-tensor", "input", "-index", "1"],
        "bin": ["-i", conv, "-format", "NCHW", "-file-type", "bin"],
        "msnpy_stored": ["-type", "offline", "-target", "numpy", "-i", conv, "-file-type", "msnpy"],
        "list": ["-i", runs["list"][1], "-format", "NCHW"],
        "custom_fails": ["-i", conv, "-format", "NCHW", "-custom", custom],
    }


@pytest.mark.parametrize("name", ["nchw", "nd_shape_o0", "i1", "bin", "msnpy_stored", "list", "custom_fails"])
def test_dumpcmp_spelling(paths, tmp_path, name):
    code = main(["convert", *_ours(paths)[name], "-o", str(tmp_path / "out")])
    assert code == (2 if name.endswith("_fails") else 0)
    _same_files(tmp_path / "out", name)
