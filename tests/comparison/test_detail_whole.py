"""A detail export is whole or not at all (issue #33): interrupted over an older export with --force it leaves the old
set as it was (before: 3 old and 7 new files, or the old files lost), interrupted fresh it leaves nothing (before:
7 of 10 files published)."""

from __future__ import annotations

import errno
import hashlib
import os
import signal

import pytest

from dumpcmp.comparison import detail as detail_mod
from dumpcmp.comparison.single_op import compare_op
from dumpcmp.support import files

from test_compare import Model


@pytest.fixture
def model(tmp_path, rng):
    return Model(tmp_path, rng)


def snapshot(folder):
    return {n: hashlib.sha1((folder / n).read_bytes()).hexdigest() for n in sorted(os.listdir(folder))}


def export(model, out, **kw):
    return compare_op(model.root / "dump", model.gt, "fc1", out, fusion_json=model.graph, **kw)


def test_interrupt_while_writing_the_extras_keeps_the_old_export(model, tmp_path, monkeypatch):
    out = tmp_path / "d"
    export(model, out, max_lines=3, top_n=3)
    old = snapshot(out)
    assert len(old) >= 8  # 4 detail files, summary, top, two top-N files, .npy

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(detail_mod, "write_original_extras", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export(model, out, max_lines=5, top_n=2, force=True)
    assert snapshot(out) == old


def test_interrupted_fresh_export_leaves_nothing(model, tmp_path, monkeypatch):
    out = tmp_path / "fresh"
    monkeypatch.setattr(detail_mod, "write_original_extras", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        export(model, out, max_lines=3)
    assert not out.exists()


def test_a_failure_half_way_through_publication_puts_the_old_files_back(model, tmp_path, monkeypatch):
    out = tmp_path / "d"
    export(model, out, max_lines=3, top_n=3)
    old = snapshot(out)
    real = files._rename_noreplace
    calls = []

    def full_disk_at_the_third(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), dst)
        return real(src, dst)

    monkeypatch.setattr(files, "_rename_noreplace", full_disk_at_the_third)
    with pytest.raises(OSError):
        export(model, out, max_lines=2, top_n=2, force=True)
    assert snapshot(out) == old


def test_a_signal_during_publication_waits_for_its_end(tmp_path, monkeypatch):
    (tmp_path / "a").write_text("old a")
    (tmp_path / "b").write_text("old b")
    real = files._rename_noreplace

    def signal_mid_way(src, dst):
        real(src, dst)
        os.kill(os.getpid(), signal.SIGINT)  # arrives after the first file took its name

    monkeypatch.setattr(files, "_rename_noreplace", signal_mid_way)
    with pytest.raises(KeyboardInterrupt):
        with files.file_set(tmp_path, force=True) as s:
            for n in ("a", "b"):
                with open(s.path(n), "w") as f:
                    f.write("new " + n)
    assert (tmp_path / "a").read_text() == "new a" and (tmp_path / "b").read_text() == "new b"
    assert not [n for n in os.listdir(tmp_path) if files.is_temp_name(n)]


def test_a_folder_replaced_with_force_is_swapped_never_missing(tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    seen = []
    real_exchange = files._exchange

    def exchange(a, b):
        seen.append(sorted(os.listdir(b)))  # just before the swap: the old folder, whole
        done = real_exchange(a, b)
        seen.append(sorted(os.listdir(b)))  # just after: the new one, whole
        return done

    monkeypatch.setattr(files, "_exchange", exchange)
    with files.atomic_folder(out, force=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert sorted(os.listdir(out)) == ["new.txt"]
    assert seen == [["old.txt"], ["new.txt"]]
    assert not [n for n in os.listdir(tmp_path) if files.is_temp_name(n)]
