"""jsonfile reads JSON with orjson where it can (#35: a graph JSON of tens of MB) and gives what the standard
library gives on every text: the same values, the same refusals."""

from __future__ import annotations

import json
import math
import time

import orjson
import pytest
from hypothesis import given, settings, strategies as st

from dumpcmp.errors import ConfigError
from dumpcmp.support import jsonfile

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) |
                      st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(values, st.booleans())
def test_same_value_as_the_standard_library(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    got = jsonfile.loads(text, "x.json")
    assert got == json.loads(text)
    assert json.dumps(got) == json.dumps(json.loads(text))  # ints stay ints, floats floats


def test_orjson_reads_a_graph_sized_text(monkeypatch):
    calls = []
    real = orjson.loads
    monkeypatch.setattr(orjson, "loads", lambda text: calls.append(len(text)) or real(text))
    doc = {"graph": [{"op": [{"name": f"op{i}", "id": i, "attr": []} for i in range(1000)]}]}
    assert jsonfile.loads(json.dumps(doc), "g.json") == doc
    assert calls


@pytest.mark.parametrize("text, expected", [
    ('{"id": 123456789012345678901234567890}', {"id": 123456789012345678901234567890}),  # past 64 bits: an int
    ('[NaN, Infinity, -Infinity]', None),  # the standard library's extensions
    ('{"a": 1, "a": 2}', {"a": 2}),  # the last duplicate wins, as before
    ('"\\ud83d\\ude00"', "\U0001F600"),  # a surrogate pair
])
def test_texts_orjson_reads_otherwise_or_refuses(text, expected):
    got = jsonfile.loads(text, "x.json")
    if expected is None:
        assert math.isnan(got[0]) and got[1:] == [math.inf, -math.inf]
    else:
        assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("text, words", [
    ('{"a": }', "line 1, column 7"),
    ('"\\ud800"', "unpaired surrogate escape \\ud800"),
    ("[" * 300 + "]" * 300, "nested too deeply"),
])
def test_refusals_are_the_standard_librarys(text, words):
    with pytest.raises(ConfigError, match="x.json") as error:
        jsonfile.loads(text, "x.json")
    assert words in str(error.value)


def test_a_signal_during_orjsons_first_import_does_not_crash():
    """orjson's initialisation crashes the interpreter (SIGSEGV) when a signal's exception is raised inside it: 160
    of 200 SIGINTs sent during a bare `import orjson` here. jsonfile imports it with signals deferred: the signal
    takes effect after the import, as a KeyboardInterrupt."""
    import random
    import signal
    import subprocess
    import sys
    from pathlib import Path

    import dumpcmp

    src = str(Path(dumpcmp.__file__).resolve().parents[1])
    child = ("import sys; sys.path.insert(0, sys.argv[1]); from dumpcmp.support import jsonfile; "
             "sys.stdout.write('r'); sys.stdout.flush(); jsonfile.loads('[1]', 'x.json')")
    rng = random.Random(3)
    codes = []
    for _ in range(60):
        p = subprocess.Popen([sys.executable, "-c", child, src], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert p.stdout.read(1) == b"r"
        time.sleep(rng.uniform(0, 0.015))
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        codes.append(p.returncode)
    assert -signal.SIGSEGV not in codes and set(codes) <= {0, 1, -signal.SIGINT}, codes
