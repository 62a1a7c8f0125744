"""`dumpcmp compare -cf` / `--close-fusion-json` (the original's `-cf/--close_fusion_rule_file`): a fused model's
device dump against the unfused model's, through both graphs. Its cells against the original's are
tests/oracle (close_fusion_result.csv); here the spellings, the graph composition and what exits 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))

import make_corpus  # noqa: E402

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.graph.graph_json import load_graph, merge_close_fusion  # noqa: E402


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return make_corpus.build(tmp_path_factory.mktemp("cf") / "corpus")


def test_the_graphs_compose(corpus):
    graph, warnings = merge_close_fusion(load_graph(corpus["cf_graph"]), load_graph(corpus["cf_close"]))
    assert graph.original_names("conv1relu1") == ("Conv_1", "relu1")  # conv1 is Conv_1 once unfused
    assert (graph["conv1relu1"].output(0).origin_name, graph["conv1relu1"].output(0).origin_output_index) == \
        ("relu1", 0)
    # the unfused Mul lists the original's outputs the other way round
    assert [d.origin_output_index for d in graph["mul1"].output_desc] == [1, 0]
    assert graph["ghost1"].is_inserted and graph.original_names("ghost1") == ()
    assert warnings == ["ghost1: the unfused graph has no op standing for the original 'ghost'"]


def test_every_spelling_gives_the_same_result(corpus, tmp_path):
    base = ["compare", "-l", str(corpus["cf_dump"]), "-r", str(corpus["cf_npu2"]), "-f", str(corpus["cf_graph"]),
            "--quiet"]
    assert main([*base, "-cf", str(corpus["cf_close"]), "-o", str(tmp_path / "a.csv")]) == 0
    assert main([*base, "--close-fusion-json", str(corpus["cf_close"]), "-o", str(tmp_path / "b.csv")]) == 0
    assert main(["compare", "-m", str(corpus["cf_dump"]), "-g", str(corpus["cf_npu2"]), "-f", str(corpus["cf_graph"]),
                 "--close_fusion_rule_file", str(corpus["cf_close"]), "-out", str(tmp_path / "c"), "--quiet"]) == 0
    [c] = list((tmp_path / "c").glob("result_*.csv"))
    a = (tmp_path / "a.csv").read_bytes()
    assert a == (tmp_path / "b.csv").read_bytes() == c.read_bytes()
    assert b'"Conv_1,relu1"' in a and b"DataType,Address,TensorIndex" in a


@pytest.mark.parametrize(("flags", "words"), [
    (["-r", "{cf_npu2}", "-cf", "{cf_close}"], "-cf (the graph without fusion) goes with -f"),
    (["-r", "{gt}", "-f", "{cf_graph}", "-cf", "{cf_close}"], "the right side is the device dump of the model "
                                                                 "compiled without fusion"),
    (["-r", "{cf_npu2}", "-f", "{cf_graph}", "-q", "{q_rule}", "-cf", "{cf_close}"], "no need for -q"),
    (["-r", "{cf_npu2}", "-f", "{cf_graph}", "-cf", "{custom}/missing.json"], "missing.json"),
])
def test_what_does_not_fit_is_exit_2(corpus, tmp_path, capsys, flags, words):
    args = [f.format(**{k: str(v) for k, v in corpus.items()}) for f in flags]
    out = tmp_path / "r.csv"
    assert main(["compare", "-l", str(corpus["cf_dump"]), *args, "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error:") and words in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(("flags", "words"), [
    (["-d", "mul1"], "-d/-op"), (["--stats"], "--stats"), (["--cluster", "local:1"], "--cluster"),
])
def test_cf_where_it_does_not_apply_is_exit_2(corpus, tmp_path, capsys, flags, words):
    out = tmp_path / "r"
    assert main(["compare", "-l", str(corpus["cf_dump"]), "-r", str(corpus["cf_npu2"]), "-f", str(corpus["cf_graph"]),
                 "-cf", str(corpus["cf_close"]), *flags, "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error:") and words in err and "not available" in err
    assert not out.exists()


def test_cf_on_a_cluster_is_refused_by_the_api_too(corpus):
    from dumpcmp.comparison.compare import compare_runs
    from dumpcmp.errors import ConfigError

    with pytest.raises(ConfigError, match="not available on a cluster"):
        compare_runs(corpus["cf_dump"], corpus["cf_npu2"], fusion_json=corpus["cf_graph"],
                     close_fusion_json=corpus["cf_close"], client=object())
