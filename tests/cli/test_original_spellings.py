"""The original tool's current command line (msprobe's msaccucmp) runs unchanged (issue #38): each of its spellings
gives the same files as dumpcmp's own, and a flag with no meaning here is exit 2 saying so. (That the files are the
original's own is tests/oracle's part: max_result.csv, overflow_result.csv, custom_alg_*.csv.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))

import agreement  # noqa: E402
import make_corpus  # noqa: E402

from dumpcmp.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("spell") / "corpus")


def _one(folder: Path) -> bytes:
    [result] = list(folder.glob("result_*.csv"))
    return result.read_bytes()


@pytest.mark.parametrize("name", list(agreement.MODEL_RUNS))
def test_model_level_spellings_give_our_file(corpus, tmp_path, name):
    left, right, graph, rule, ours, original = agreement.MODEL_RUNS[name]
    files = [*(["-f", str(corpus[graph])] if graph else []), *(["-q", str(corpus[rule])] if rule else [])]
    assert main(["compare", "-l", str(corpus[left]), "-r", str(corpus[right]), *files, "-o", str(tmp_path / "a.csv"),
                 "--quiet", *agreement.run_flags(name, corpus)]) == 0
    out = tmp_path / "made" / "here"  # -out is a folder there, made when missing
    # the current command line means the current version, which restores device dumps: 72c5bd4c's runs say raw
    raw = agreement.RAW if agreement.RAW[0] in ours else ()
    assert main(["compare", "-m", str(corpus[left]), "-g", str(corpus[right]), *files, "-out", str(out), "--quiet",
                 *agreement.run_flags(name, corpus, original=True), *raw]) == 0
    assert _one(out) == (tmp_path / "a.csv").read_bytes()


def test_long_forms_and_alg_indices_separated_by_spaces(corpus, tmp_path):
    assert main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "-o", str(tmp_path / "a.csv"), "-alg", "0,1,7", "--quiet"]) == 0
    (tmp_path / "b").mkdir()
    assert main(["compare", f"--my_dump_path={corpus['dump']}", "--golden_dump_path", str(corpus["gt"]),
                 "--fusion_rule_file", str(corpus["graph"]), "--output", str(tmp_path / "b"), "--algorithm", "0", "1",
                 "7", "-v", "2", "--quiet"]) == 0
    assert _one(tmp_path / "b") == (tmp_path / "a.csv").read_bytes()


def test_single_op_spelling_gives_our_files(corpus, tmp_path):
    common = ["-f", str(corpus["graph"]), "--quiet"]
    assert main(["compare", "-l", str(corpus["dump"]), "-r", str(corpus["gt"]), "-d", "conv1relu1", "-t", "input",
                 "-i", "1", "--top-n", "5", "--max-lines", "100", "-o", str(tmp_path / "a"), *common]) == 0
    assert main(["compare", "-m", str(corpus["dump"]), "-g", str(corpus["gt"]), "-op", "conv1relu1", "-i", "1",
                 "-n", "5", "-ml", "100", "-out", str(tmp_path / "b"), *common]) == 0
    ours = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert ours and ours == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in ours:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.parametrize(("flags", "words"), [
    (["-map", "-op", "pool1"], "-op"), (["-cf", "x.json"], "-cf"), (["-r", "0,-1,1"], "start 0 is out of range"),
    (["--select", "100"], "out of range"), (["-r", "1,2,1", "-s", "1"], "at the same time"),
    (["-r", "1,a,1"], "the value is number"), (["-op", "pool1", "-s", "1"], "model-level compare only"),
    (["-p", "1"], "PyTorch"), (["--ignore_single_op_result"], "applies to -d/-op"),
    (["-o", "0"], "takes effect only when -op exists"), (["-n", "3"], "takes effect only when -op exists"),
    (["-v", "3"], "dump version"), (["-op", "pool1", "-o", "0", "-i", "0"], "cannot be used together"),
])
def test_flags_without_meaning_here_are_exit_2(corpus, tmp_path, capsys, flags, words):
    code = main(["compare", "-m", str(corpus["dump"]), "-g", str(corpus["gt"]), "-f", str(corpus["graph"]),
                 "-out", str(tmp_path / "o"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and words in err and err.startswith("dumpcmp: error:")
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())  # no result file


def test_convert_spelling(corpus, tmp_path, capsys):
    dump = next(p for p in sorted(Path(corpus["dump"]).rglob("*")) if p.is_file() and "conv1relu1" in p.name)
    assert main(["convert", "-type", "offline", "-target", "numpy", "-i", str(dump), "-o", str(tmp_path / "a")]) == 0
    assert main(["convert", "-d", str(dump), "-out", str(tmp_path / "b"), "-t", "npy", "-v", "2"]) == 0
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names and names == sorted(p.name for p in (tmp_path / "b").iterdir())
    for flags, words in ((["-t", "xyz"], "npy, bin or msnpy"), (["-f", "NCHW", "-o", "0", "-i", "0"], "together"),
                         (["-s", "1,2"], '"-s" or "--shape"'), (["-f", "XYZ"], "unknown format")):
        assert main(["convert", "-d", str(dump), "-out", str(tmp_path / "c"), *flags]) == 2
        assert words in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_ignore_single_op_result_writes_the_originals_files_but_the_detail(corpus, tmp_path):
    """`-op OP --ignore_single_op_result` (ours: `-d OP --summary-only`): the original skips only the element-by-element
    files and still writes the summary, the two top-N files and the tensor's .npy, which are those of a full run.
    Held against the original's own files of that op (tests/oracle/expected/single/)."""
    op, kind, index = "conv1relu1", "output", 0
    expected = Path(__file__).resolve().parents[1] / "oracle" / "expected" / "single"
    prefix = f"{op}_{kind}_{index}"
    theirs = {f.name: f.read_bytes() for f in expected.glob(f"{prefix}*")}
    assert f"{prefix}_0.csv" in theirs and f"{prefix}_summary.txt" in theirs
    args = make_corpus.single_op_args(corpus, op)
    original = [{"-l": "-m", "-r": "-g"}.get(a, a) for a in args]
    assert main(["compare", *original, "-op", op, "-o", str(index), "--ignore_single_op_result", "-out",
                 str(tmp_path / "o"), "--quiet"]) == 0
    mine = {f.name: f.read_bytes() for f in (tmp_path / "o").iterdir()}
    assert main(["compare", *original, "-op", op, "-o", str(index), "-out", str(tmp_path / "full"), "--quiet"]) == 0
    full = {f.name: f.read_bytes() for f in (tmp_path / "full").iterdir()}
    assert mine == {n: b for n, b in full.items() if n != f"{prefix}_0.csv"}  # all but the detail file
    assert sorted(n for n in mine if n in theirs) == sorted(n for n in theirs if n != f"{prefix}_0.csv")
    root = str(corpus["dump"].parent).encode()
    for name in theirs:
        if name in mine:
            assert mine[name].replace(root, b"{CORPUS}") == theirs[name], name
    assert main(["compare", *args, "-d", op, "-t", kind, "-i", str(index), "--summary-only", "-o",
                 str(tmp_path / "p"), "--quiet"]) == 0
    assert {f.name: f.read_bytes() for f in (tmp_path / "p").iterdir()} == mine
