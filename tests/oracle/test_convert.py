"""`dumpcmp convert -d DUMP -out DIR` (the original tool's spelling) against `msaccucmp convert` run unmodified on
the corpus's fused conv dump (issue #38): the same files, byte for byte (expected/convert/, made by regenerate.py)."""

from __future__ import annotations

from agreement import EXPECTED
import make_corpus

from dumpcmp.cli import main


def test_convert_writes_the_originals_files(tmp_path):
    paths = make_corpus.build(tmp_path / "corpus")
    assert main(["convert", "-d", str(make_corpus.convert_dump(paths)), "-out", str(tmp_path / "out")]) == 0
    expected = sorted(p.name for p in (EXPECTED / "convert").iterdir())
    assert len(expected) == 3 and sorted(p.name for p in (tmp_path / "out").iterdir()) == expected
    for name in expected:
        assert (tmp_path / "out" / name).read_bytes() == (EXPECTED / "convert" / name).read_bytes(), name
