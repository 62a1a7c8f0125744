"""`jsonfile.write_text` (#35): `dumpcmp info --json` on 10^6 files writes its records as they are made; the text must
be what `dumps_text` (orjson, or the standard library's writer) gives for the whole value, byte for byte."""

from __future__ import annotations

import json

import pytest

from dumpcmp.support import jsonfile
from dumpcmp.support.jsonfile import Streamed


def made(value):
    if isinstance(value, Streamed):
        return [made(v) for v in value.items]
    if isinstance(value, dict):
        return {k: made(v) for k, v in value.items()}
    if isinstance(value, list):
        return [made(v) for v in value]
    return value


def streamed_text(build):
    pieces: list[str] = []
    jsonfile.write_text(build(), pieces.append)
    return "".join(pieces), pieces


RECORD = {"path": "/a/b", "name": {"scheme": "device", "ffts": None, "shape": [1, 2]}, "tensors": [], "n": 3,
          "empty": {}, "flag": True}
CASES = {
    "records": lambda: {"ok": True, "paths": [{"kind": "tree", "runs": Streamed(
        {"key": {"k": i}, "dumps": Streamed(dict(RECORD, n=j) for j in range(3))} for i in range(2)),
        "skipped": Streamed(iter([])), "summary": {"runs": 2}}]},
    "empty": lambda: {"ok": False, "paths": [{"a": Streamed([]), "b": []}]},
    "top list": lambda: Streamed([1, "x", None, {"a": [1, {"b": []}]}]),
    "not ascii": lambda: {"ok": True, "paths": [{"runs": Streamed([{"p": "caf\u00e9"}, {"p": "x"}])}]},
    "not utf-8": lambda: {"ok": True, "paths": [{"runs": Streamed([{"p": "x\udcff"}, {"p": "y"}])}]},
    "past 64 bits": lambda: {"paths": [{"runs": Streamed([{"n": 2**70}, {"n": -1}])}]},
    "newline in a string": lambda: {"paths": [{"runs": Streamed([{"p": "a\nb", "q": ["\n"]}])}]},
    "plain": lambda: {"a": [1, 2, {"b": "c"}], "d": None},
}


@pytest.mark.parametrize("case", CASES)
def test_same_text_as_dumps_text_of_the_whole_value(case):
    text, _ = streamed_text(CASES[case])
    assert text == jsonfile.dumps_text(made(CASES[case]()))
    json.loads(text)


def test_items_are_made_as_the_text_is_written_in_bounded_pieces(monkeypatch):
    monkeypatch.setattr(jsonfile, "_FLUSH", 1000)
    made_so_far = []

    def records():
        for i in range(2000):
            made_so_far.append(i)
            yield dict(RECORD, n=i)

    pieces: list[str] = []
    written_when: list[int] = []

    def write(text):
        pieces.append(text)
        written_when.append(len(made_so_far))

    jsonfile.write_text({"runs": Streamed(records())}, write)
    assert "".join(pieces) == jsonfile.dumps_text({"runs": [dict(RECORD, n=i) for i in range(2000)]})
    assert written_when[0] < 100 and len(pieces) > 100  # written while the records are made
    assert max(len(p) for p in pieces) < 2000
