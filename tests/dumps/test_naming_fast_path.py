"""`parse_name` tries the NPU dump rule only on names ending in a digit (#35: a million `.npy` names skip its
backtracking); whatever the name, it gives what the scheme parsers give tried in the documented order."""

from __future__ import annotations

from hypothesis import example, given, settings, strategies as st

from dumpcmp.dumps import naming
from dumpcmp.errors import NamingError


def reference(name: str):
    for parse in (naming.parse_device_dump_name,
                  *((naming.parse_converted_name,) if name.endswith(".npy") else ()),
                  naming.parse_framework_dump_name):
        try:
            return parse(name)
        except NamingError:
            pass
    return None


def parsed(name: str):
    try:
        return naming.parse_name(name)
    except NamingError:
        return None


parts = st.sampled_from(["a", "Conv2D", "op_1", "0", "12", "1700000000000000", "npy", "pb", "quant", "output",
                         "input", "2x3", "FFTSPLUS", "4", "\u00e9", "x\udcff", "", " ", "\u0663"])


@settings(max_examples=2000, deadline=None)
@given(st.lists(parts, min_size=1, max_size=11).map(".".join))
@example("Add.a.1.1700000000000000")
@example("Add.a.1.2.3.1700000000000000.4.1.0.0")
@example("Add.a.1.1700000000000000\u0663")
@example("a.0.1700000000000000.npy")
@example("Add.a.1.1700000000000000.output.0.2x3.npy")
@example("")
def test_parse_name_is_the_scheme_parsers_in_order(name):
    assert parsed(name) == reference(name)
