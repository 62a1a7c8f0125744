"""`dumpcmp compare --op-mapping` (the original's `-map`): both spellings write the same file, in a folder as
mapping_{time}.csv; what it cannot do exits 2 saying why and writes nothing. Its cells against the original's are
tests/oracle/test_op_mapping.py."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))

import make_corpus  # noqa: E402

from dumpcmp.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("map") / "corpus")


def test_both_spellings_write_the_same_mapping(corpus, tmp_path, capsys):
    assert main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "--op-mapping", "-o", str(tmp_path / "ours.csv"), "--quiet"]) == 0
    assert main(["compare", "-m", str(corpus["dump"]), "-g", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "-map", "-out", str(tmp_path / "out")]) == 0
    [written] = list((tmp_path / "out").iterdir())
    assert written.name.startswith("mapping_") and written.suffix == ".csv"
    assert written.read_bytes() == (tmp_path / "ours.csv").read_bytes()
    assert f"op mapping: {written}" in capsys.readouterr().out
    lines = written.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "Index,OpType,NPUDump,GroundTruth,TensorIndex,NPUDumpPath,GroundTruthPath"
    assert not list(tmp_path.glob("out/result_*"))  # nothing compared
    # an existing file is kept without --force
    assert main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "--op-mapping", "-o", str(tmp_path / "ours.csv"), "--quiet"]) == 2
    assert "--force" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "words"), [
    (["-l", "{dump}", "-r", "{gt}", "--op-mapping"], "needs the graph JSON (-f) or the quant fusion rule file (-q)"),
    (["-l", "{dump}", "-r", "{npu2}", "-f", "{graph}", "--op-mapping"], "this is another device dump"),
    (["-l", "{dump}", "-r", "{gt}", "-f", "{graph}", "--op-mapping", "-d", "pool1"], "not with -d/-op"),
    (["-l", "{dump}", "-r", "{gt}", "-f", "{graph}", "--op-mapping", "--max-elements", "3"], "--max-elements"),
    (["-m", "{dump}", "-g", "{gt}", "-map"], "needs the graph JSON"),
])
def test_what_it_cannot_do_is_exit_2(corpus, tmp_path, capsys, flags, words):
    out = tmp_path / "o"
    out.mkdir()
    args = [f.format(**{k: str(v) for k, v in corpus.items()}) for f in flags]
    assert main(["compare", *args, "-o" if "-l" in args else "-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error:") and words in err and "Traceback" not in err
    assert not any(out.iterdir())
