"""`dumpcmp info TREE --json`'s records written by the core at the level of their list once it is being written
(#35: no indenting pass over 1 GB of text after): the same bytes as the Python records over many batches, and a
`jsonfile.Rendered` at any level written where it goes gives `dumps_text`'s text."""

from __future__ import annotations


import numpy as np
import pytest

import dumpcmp
from dumpcmp.cli import info
from dumpcmp.support import jsonfile
from dumpcmp.support.native import core

T0 = 1700000000000000


def test_records_of_many_batches_are_the_python_records(tmp_path, monkeypatch):
    run = tmp_path / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    for k in range(23):
        dumpcmp.write_dump(run / f"Conv2D.op{k}.{k + 1}.{T0 + k}", op_name=f"op{k}",
                           outputs=[np.ones((k % 3 + 1, 2), np.float32)], inputs=[np.zeros(2, np.int8)])
    (run / f"Relu.bad.99.{T0 + 5}").write_bytes(b"\x07" * 9)  # a file that does not open, between two batches
    monkeypatch.setattr(info, "_HEADER_BATCH", 4)
    levels: list[int] = []
    real = core.scan.read_records

    def recorded(entries, indent=0, threads=0):
        levels.append(indent)
        return real(entries, indent, threads)

    monkeypatch.setattr(core.scan, "read_records", recorded)
    items, ok = info.gather([str(tmp_path)], stream=True)
    pieces: list[str] = []
    jsonfile.write_text({"ok": ok, "paths": items}, pieces.append)
    plain, ok_plain = info.gather([str(tmp_path)], stream=False)
    assert ok and ok_plain
    assert "".join(pieces) == jsonfile.dumps_text({"ok": ok_plain, "paths": plain})
    assert len(plain[0]["runs"][0]["dumps"]) == 23 and len(plain[0]["skipped"]) == 1
    # the first batch made before its list is written, the others at its records' level: {"paths": [{"runs": [{"dumps"
    assert levels[0] == 0 and set(levels[1:]) == {6}


@pytest.mark.parametrize("made_at", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("written_at", [0, 1, 3])
def test_a_rendered_text_at_any_level_is_written_at_its_place(made_at, written_at):
    records = [{"a": [1, {"b": None}], "c": "x"}, {"d": []}]
    text = jsonfile.dumps_text(records)[:-1]  # "[\n  rec,\n  rec\n]" at level 1
    body = text[4:-2].replace("\n  ", "\n")  # the records at level 0, joined by ",\n"
    made = jsonfile.Rendered(body.replace("\n", "\n" + "  " * made_at), 2, made_at)
    value: object = jsonfile.Streamed([made])
    for _ in range(written_at - 1):
        value = [value]
    expected: object = records
    for _ in range(written_at - 1):
        expected = [expected]
    pieces: list[str] = []
    jsonfile.write_text(value if written_at else made, pieces.append)
    if written_at:
        assert "".join(pieces) == jsonfile.dumps_text(expected)
    else:
        assert "".join(pieces) == body + "\n"
