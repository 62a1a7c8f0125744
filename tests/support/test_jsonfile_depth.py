"""The nesting bound of the JSON reader found in the text (jsonfile.text_depth, issue #35: no Python walk over a
44 MB graph's parsed value) against the walk over the parsed value it replaces (jsonfile.depth), on generated JSON
written every way json.dumps writes it, with brackets, quotes and escapes inside strings."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.errors import ConfigError
from dumpcmp.support import jsonfile

TRICKY = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\u00e9\U0001f600,:')), max_size=8)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), TRICKY)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(TRICKY, inner, max_size=4)), max_leaves=40)


@settings(max_examples=1500, deadline=None)
@given(value=VALUES, indent=st.sampled_from([None, 0, 2, "\t"]), ascii_only=st.booleans(),
       limit=st.integers(0, 8))
def test_the_depth_of_the_text_is_the_depth_of_its_value(value, indent, ascii_only, limit):
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    want = jsonfile.depth(value, limit)
    got = jsonfile.text_depth(text, limit)
    assert got == want if want <= limit else got > limit


@pytest.mark.parametrize("depth", [1, 255, 256, 257, 300])
@pytest.mark.parametrize("kind", ["list", "object"])
def test_the_bound_holds_at_its_edge(depth, kind):
    text = "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + '"]]}"' + "}" * depth
    if depth <= jsonfile.MAX_DEPTH:
        jsonfile.loads(text, "x.json")
    else:
        with pytest.raises(ConfigError, match=r"^x\.json: JSON nested too deeply \(more than 256 levels\)$"):
            jsonfile.loads(text, "x.json")
