"""support.gcpause: the collector is off inside, back to what it was after (errors and nesting included), and a
compare leaves it as it found it."""

from __future__ import annotations

import gc

import pytest

from dumpcmp.support.gcpause import paused


@pytest.fixture(autouse=True)
def collector_restored():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_off_inside_and_back_after():
    gc.enable()
    with paused():
        assert not gc.isenabled()
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()


def test_back_after_an_error():
    gc.enable()
    with pytest.raises(KeyError):
        with paused():
            raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_the_user_turned_off_stays_off():
    gc.disable()
    with paused():
        pass
    assert not gc.isenabled()


def test_compare_leaves_the_collector_on(tmp_path):
    import dumpcmp
    from dumpcmp.benchmark.model import generate_model

    dump, gt = generate_model(tmp_path, ops=4, bytes_per_side=1 << 16)
    gc.enable()
    assert len(dumpcmp.compare(dump, gt).rows) == 4
    assert gc.isenabled()
    gc.disable()
    dumpcmp.compare(dump, gt)
    assert not gc.isenabled()
