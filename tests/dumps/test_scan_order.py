"""The execution order a scan sorts a run's dumps in (#35: sorted a faster way for runs without FFTS+ names) is
`DumpEntry.order`, whatever the names: equal timestamps, tasks past 64 bits, FFTS+ names among them."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from dumpcmp.dumps import naming
from dumpcmp.dumps.scan import DumpEntry, DumpGroup, RunKey, _in_order

names = st.builds(
    lambda op, task, ts, stream, ffts: naming.build_device_dump_name(
        "Add", op, task, ts, stream_id=stream,
        ffts=None if ffts is None else naming.FftsSuffix("4", ffts[0], ffts[1], 0)),
    st.sampled_from(["a", "b", "c"]), st.one_of(st.integers(0, 3), st.just(2**64), st.just(2**70)),
    st.integers(0, 3), st.one_of(st.none(), st.integers(0, 2)),
    st.one_of(st.none(), st.tuples(st.integers(0, 2), st.integers(0, 2))))


@settings(max_examples=300, deadline=None)
@given(st.lists(names, max_size=12, unique=True), st.booleans())
def test_in_order_is_dump_entry_order(files, with_ffts):
    entries = [DumpEntry(f"/r/{f}", f, naming.parse_device_dump_name(f)) for f in files]
    entries = [e for e in entries if with_ffts or e.name.ffts is None]
    want = sorted(entries, key=DumpEntry.order)
    assert _in_order(entries) == want
    assert _in_order(reversed(entries)) == want
    group = DumpGroup(RunKey("flat", "/r"), want)
    assert list(group.newest().values()) == [e for e in want if e in group.newest().values()]
