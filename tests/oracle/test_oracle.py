"""dumpcmp against the original tool (msaccucmp), run unmodified on a generated corpus.

tests/oracle/make_corpus.py builds the corpus (fixed seed); tests/oracle/expected/ holds the original's output
files for it, made by tests/oracle/regenerate.py. Here the corpus is rebuilt in a temporary folder, dumpcmp runs
on it as the original did (model level with the graph JSON, NPU vs NPU, a quantized model with its quant fusion rule
file, seven single-operator runs) and:

- every row of the original's result files is present in ours, and no other row;
- every non-metric cell equals the original's text (the corpus's folder read as `{CORPUS}`);
- every metric cell equals the original's printed digits;
- every single-operator file is byte for byte the original's (run under the same NumPy major version: where tied
  or NaN errors meet in a top-N file, the original's choice follows NumPy's argpartition, whose internals changed in
  NumPy 2; expected/numpy2/ holds the original's files under NumPy 2 where they differ).

The NPU vs NPU file's Index is the original's directory listing order, so it is not compared there.
"""

from __future__ import annotations


import pytest

import agreement  # noqa: E402
from agreement import (  # noqa: E402
    EXPECTED, METRICS, MODEL_RUNS, cell_diffs, corpus_text, model_rows, read_rows, reference, row_key, with_graph,
)

# Metric cells that differ for a known reason in the metric kernel (not this comparison's columns), as
# {(file, NPUDump, TensorIndex): reason}; each is a strict xfail. None today: every cell is the original's.
KNOWN_METRIC_DIFFERENCES: dict[tuple[str, str, str], str] = {}


def _expected_rows() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for name in MODEL_RUNS:
        table = read_rows((EXPECTED / name).read_text(encoding="utf-8"))
        out += [(name, row_key(table[0], r, with_graph(name))) for r in table[1:]]
    return out


def _row_param(name: str, key: tuple[str, ...], marks: bool) -> object:
    reason = KNOWN_METRIC_DIFFERENCES.get((name, *key)) if marks else None
    return pytest.param(name, key, id=f"{name}:{'/'.join(key)}",
                        marks=[pytest.mark.xfail(reason=reason, strict=True)] if reason else [])


def _single_files() -> list[str]:
    return sorted("single/" + p.name for p in (EXPECTED / "single").iterdir())


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle").resolve()
    files = agreement.run_ours(root)
    return files, root / "corpus"


@pytest.fixture(scope="module")
def tables(ours):
    files, corpus = ours
    return {name: model_rows((EXPECTED / name).read_text(encoding="utf-8"), corpus_text(files[name], corpus),
                             with_graph(name)) for name in MODEL_RUNS}


@pytest.mark.parametrize("name", list(MODEL_RUNS))
def test_every_row_and_no_other(ours, name):
    files, corpus = ours
    expected = read_rows((EXPECTED / name).read_text(encoding="utf-8"))
    mine = read_rows(corpus_text(files[name], corpus))
    assert mine[0] == expected[0]  # the header
    assert files[name].read_bytes().count(b"\r\n") == (EXPECTED / name).read_bytes().count(b"\r\n")  # CR LF
    graph = with_graph(name)
    keys = [row_key(expected[0], r, graph) for r in expected[1:]]
    my_keys = [row_key(mine[0], r, graph) for r in mine[1:]]
    assert sorted(my_keys) == sorted(keys)
    if graph:
        assert my_keys == keys  # the same order too


@pytest.mark.parametrize(("name", "key"), [_row_param(n, k, False) for n, k in _expected_rows()])
def test_text_columns(tables, name, key):
    header = tables[name][("",)][0]
    exp, mine = tables[name][key]
    diffs = [d for d in cell_diffs(header, exp, mine) if d.split(":")[0] not in METRICS]
    assert diffs == []


@pytest.mark.parametrize(("name", "key"), [_row_param(n, k, True) for n, k in _expected_rows()])
def test_metric_cells(tables, name, key):
    header = tables[name][("",)][0]
    exp, mine = tables[name][key]
    assert mine is not None
    diffs = [d for d in cell_diffs(header, exp, mine) if d.split(":")[0] in METRICS]
    assert diffs == []


@pytest.mark.parametrize("name", _single_files())
def test_single_op_file_bytes(ours, name):
    files, corpus = ours
    mine = files[name]
    assert mine.is_file(), f"{mine} was not written"
    data = mine.read_bytes() if name.endswith(".npy") else corpus_text(mine, corpus).encode("utf-8")
    assert data == reference(name).read_bytes()


def test_expected_outputs_stay_small():
    total = sum(p.stat().st_size for p in EXPECTED.rglob("*") if p.is_file())
    assert total < 1 << 20


def test_exit_like_original(tmp_path):
    from dumpcmp.cli import main

    import make_corpus

    paths = make_corpus.build(tmp_path / "corpus")
    base = ["compare", "-l", str(paths["dump"]), "-r", str(paths["gt"]), "-f", str(paths["graph"]), "--quiet"]
    # the graph's Data/Const ops have no dump file: the original exits 2 with its result written
    assert main(base + ["-o", str(tmp_path / "a.csv")]) == 0
    assert main(base + ["-o", str(tmp_path / "b.csv"), "--exit-like-original"]) == 2
    assert (tmp_path / "b.csv").read_bytes() == (tmp_path / "a.csv").read_bytes()


def test_single_op_inside_a_quant_pair_is_refused(tmp_path, capsys):
    from dumpcmp.cli import main

    import make_corpus

    paths = make_corpus.build(tmp_path / "corpus")
    base = ["compare", "-l", str(paths["q_dump"]), "-r", str(paths["q_gt"]), "-f", str(paths["q_graph"]), "-q",
            str(paths["q_rule"]), "--quiet", "-o", str(tmp_path / "out")]
    assert main(base + ["-d", "conv2"]) == 2
    assert "[conv2] The -op param should not specify an operator in quant/dequant pair." in capsys.readouterr().err
    assert main(base + ["-d", "conv2_dequant_layer"]) == 0
