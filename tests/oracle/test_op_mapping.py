"""`compare -map` (dumpcmp's --op-mapping) against the original tool's mapping files (tests/oracle/expected/mapping/,
made by tests/oracle/regenerate.py): the model, the quantized model, the model under hashed names, -r and -s, and
the FFTS+ dumps against their ground truth; every file byte for byte (the corpus's folder read as `{CORPUS}`)."""

from __future__ import annotations

import pytest

from agreement import EXPECTED, MAPPING_RUNS, corpus_text, run_mapping

import make_corpus


@pytest.fixture(scope="module")
def ours(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle_map").resolve()
    paths = make_corpus.build(root / "corpus")
    return run_mapping(root / "ours", paths), root / "corpus"


@pytest.mark.parametrize("name", list(MAPPING_RUNS))
def test_mapping_file_is_the_originals(ours, name):
    files, corpus = ours
    expected = (EXPECTED / "mapping" / name).read_text(encoding="utf-8")
    mine = corpus_text(files[name], corpus)
    assert mine.splitlines() == expected.splitlines()
    assert mine == expected  # line ends included (CR LF, as the csv module writes)
