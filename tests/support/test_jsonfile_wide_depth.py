"""The nesting bound on JSON that is both deep and wide (issue #35): jsonfile.text_depth's rounds would cost depth x
size there (21 s for 20 MB nested 257 levels), so past a budget it counts the rest (jsonfile.bracket_depth). These
tests check that both ways give the depth of the parsed value (jsonfile.depth) and the same refusal; the time is a
benchmark figure (docs/performance.md), not asserted here."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dumpcmp.errors import ConfigError
from dumpcmp.support import jsonfile


def rounds_depth(brackets: bytes, limit: int) -> int:
    """The depth by removing the innermost pairs a round at a time (text_depth's first way)."""
    deepest = 0
    while brackets and deepest <= limit:
        deepest += 1
        brackets = brackets.replace(b"()", b"")
    return deepest


@st.composite
def balanced(draw) -> bytes:
    out, level = [], 0
    for opening in draw(st.lists(st.booleans(), max_size=400)):
        if opening or level == 0:
            out.append(b"(")
            level += 1
        else:
            out.append(b")")
            level -= 1
    return b"".join(out) + b")" * level


@settings(max_examples=800, deadline=None)
@given(brackets=balanced(), limit=st.integers(0, 12))
def test_counting_gives_the_depth_the_rounds_give(brackets, limit):
    want = rounds_depth(brackets, limit)
    got = jsonfile.bracket_depth(brackets, limit)
    assert got == want if want <= limit else got > limit


def test_counting_carries_the_level_across_its_slices():
    brackets = b"(" * (5 << 20) + b")" * (5 << 20)  # deeper than one slice of 4 MiB
    assert jsonfile.bracket_depth(brackets, 10 << 20) == 5 << 20


def wide(depth: int, size: int) -> str:
    group = json.dumps(json.loads("[" * (depth - 1) + '"]]{"' + "]" * (depth - 1)))  # a string holding brackets
    return "[" + ",".join([group] * (size // len(group))) + "]"


@pytest.mark.parametrize("depth", [40, 256, 257])
def test_deep_and_wide_text_past_the_budget_has_its_value_s_depth(depth):
    text = wide(depth, 3 << 20)  # 3 MB: rounds past 8 x its brackets + 16 MiB before the depth is reached
    want = jsonfile.depth(json.loads(text), jsonfile.MAX_DEPTH)
    assert jsonfile.text_depth(text) == want
    if want <= jsonfile.MAX_DEPTH:
        assert len(jsonfile.loads(text, "wide.json")) > 1000
    else:
        with pytest.raises(ConfigError, match=r"^wide\.json: JSON nested too deeply \(more than 256 levels\)$"):
            jsonfile.loads(text, "wide.json")
