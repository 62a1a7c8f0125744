"""Outputs of `demo`, `bench` and `sample`: whole or not at all on a full disk, never replacing a user's file without
--force (refused with the one "already exists" message, exit 2, before any work).

The full disk is simulated in this process: every file opened for writing whose path holds a given name (the
target, or the temporary beside it that carries the target's name) writes half of what it is given, then raises
OSError(ENOSPC), whichever way it was opened (open(), os.fdopen())."""

from __future__ import annotations

import builtins
import errno
import json
import os
from pathlib import Path

import pytest

from dumpcmp.errors import DumpcmpError

from dumpcmp.cli import main
from dumpcmp.support.files import exists_error


class _Full:
    """A writable file on a full disk: the first half of a write lands, then ENOSPC."""

    def __init__(self, f):
        self._f = f

    def write(self, data):
        self._f.write(data[:len(data) // 2])
        self._f.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()

    def __getattr__(self, name):
        return getattr(self._f, name)


def full_disk(monkeypatch, needle: str) -> list[str]:
    """Writes to files whose path holds `needle` fail with ENOSPC; returns the paths that failed."""
    hit: list[str] = []
    real_open, real_fdopen = builtins.open, os.fdopen

    def writing(mode) -> bool:
        return any(c in mode for c in "wax+")

    def fake_open(file, mode="r", *args, **kwargs):
        f = real_open(file, mode, *args, **kwargs)
        if writing(mode) and isinstance(file, (str, os.PathLike)) and needle in os.fspath(file):
            hit.append(os.fspath(file))
            return _Full(f)
        return f

    def fake_fdopen(fd, mode="r", *args, **kwargs):
        path = os.readlink(f"/proc/self/fd/{fd}")
        f = real_fdopen(fd, mode, *args, **kwargs)
        if writing(mode) and needle in path:
            hit.append(path)
            return _Full(f)
        return f

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(os, "fdopen", fake_fdopen)
    return hit


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.startswith(".dumpcmp-") and p.name.endswith(".tmp"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_demo_model_on_a_full_disk_is_not_left_half_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnx")
    from dumpcmp.cli.demo import build_model

    hit = full_disk(monkeypatch, "demo_net.onnx")
    with pytest.raises(DumpcmpError) as raised:  # the write error, named by the file it was writing
        build_model(tmp_path / "demo_net.onnx")
    assert str(tmp_path / "demo_net.onnx") in str(raised.value) and os.strerror(errno.ENOSPC) in str(raised.value)
    assert hit
    assert sorted(os.listdir(tmp_path)) == []  # no 0-byte (or half) model, no temporary
    # the command: exit 2, one line, no model and no temporary left in its folder
    out = tmp_path / "demo"
    assert main(["demo", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dumpcmp: error: ") and "Traceback" not in err and os.strerror(errno.ENOSPC) in err
    assert not (out / "demo_net.onnx").exists() and leftovers(out) == []


@pytest.fixture
def layouts_bench():
    return ["bench", "layouts", "--size", "4KB", "--dtype", "fp16", "--formats", "NC1HWC0", "--threads", "1",
            "--repeats", "1", "--quiet"]


def test_bench_json_is_not_replaced_without_force(tmp_path, capsys, layouts_bench):
    target = tmp_path / "mine.json"
    target.write_text("my own results\n")
    assert main([*layouts_bench, "--json", str(target)]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"dumpcmp: error: {exists_error(target)}\n"
    assert captured.out == ""  # refused before measuring
    assert target.read_text() == "my own results\n"
    assert main([*layouts_bench, "--json", str(target), "--force"]) == 0
    assert json.loads(target.read_text())["schema"].startswith("dumpcmp-bench/")


def test_bench_plot_is_not_replaced_without_force(tmp_path, capsys, layouts_bench):
    pytest.importorskip("matplotlib")
    target = tmp_path / "mine.png"
    target.write_bytes(b"my own picture")
    assert main([*layouts_bench, "--plot", str(target)]) == 2
    assert capsys.readouterr().err == f"dumpcmp: error: {exists_error(target)}\n"
    assert target.read_bytes() == b"my own picture"
    assert main([*layouts_bench, "--plot", str(target), "--force"]) == 0
    assert target.read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_bench_json_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch, capsys, layouts_bench):
    target = tmp_path / "mine.json"
    target.write_text("my own results\n")
    hit = full_disk(monkeypatch, "mine.json")
    assert main([*layouts_bench, "--json", str(target), "--force"]) == 2
    assert hit and target.read_text() == "my own results\n" and leftovers(tmp_path) == []


def test_sample_refuses_a_folder_in_use_without_force(tmp_path, capsys):
    out = tmp_path / "s"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    assert main(["sample", str(out)]) == 2
    assert capsys.readouterr().err == f"dumpcmp: error: {exists_error(out, 'folder')}\n"
    assert sorted(os.listdir(out)) == ["mine.txt"]
    assert main(["sample", str(out), "--force"]) == 0
    assert (out / "mine.txt").read_text() == "keep me" and (out / "ground_truth").is_dir()
    assert main(["sample", str(out), "--force"]) == 0  # again over its own files
    file = tmp_path / "f"
    file.write_text("a file")
    assert main(["sample", str(file), "--force"]) == 2 and file.read_text() == "a file"


def test_sample_is_not_written_through_a_link(tmp_path, capsys):
    target = tmp_path / "elsewhere"
    target.mkdir()
    (tmp_path / "link").symlink_to(target)
    assert main(["sample", str(tmp_path / "link"), "--force"]) == 2
    assert "a link is not followed" in capsys.readouterr().err and os.listdir(target) == []
