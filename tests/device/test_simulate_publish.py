"""simulate publishes a run whole: its time folder and its graph JSON appear together, or nothing does.

The writers' signal sweep (tests/hostile/test_signals_writers.py) found a dump folder without its model.json after
a Ctrl-C that landed between the last dump and the graph JSON (1 in 192 interrupts); these tests stop a run at that
point, and at others, deterministically.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.device.simulate import _device, simulate  # noqa: E402
from test_simulate import build_tiny as tiny  # noqa: E402  (a Relu and a Sigmoid)
from dumpcmp.support.files import is_temp_name  # noqa: E402

NOW = 1_800_000_000.0  # a whole minute: the second run of the same second takes the next name


def listing(folder: Path) -> dict[str, int]:
    out = {}
    for root, dirs, files in os.walk(folder):
        for n in dirs + files:
            p = os.path.join(root, n)
            out[os.path.relpath(p, folder)] = -1 if os.path.isdir(p) else os.path.getsize(p)
    return out


def interrupt_graph_json(monkeypatch):
    """Ctrl-C when the graph JSON is made: after every dump of every sample is written."""
    def stop(self, precision):
        raise KeyboardInterrupt
    monkeypatch.setattr(_device.DeviceGraph, "to_json", stop)


def test_interrupt_before_the_graph_json_leaves_no_run(tmp_path, monkeypatch):
    model = tiny(tmp_path / "net.onnx")
    interrupt_graph_json(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        simulate(model, tmp_path / "npu", seed=1, now=NOW)
    assert not (tmp_path / "npu").exists()  # made by this run, empty: removed
    assert not [n for n in os.listdir(tmp_path) if is_temp_name(n)]


def test_interrupt_keeps_an_older_run_and_its_graph_json(tmp_path, monkeypatch):
    model = tiny(tmp_path / "net.onnx")
    first = simulate(model, tmp_path / "npu", seed=1, now=NOW)
    before = listing(tmp_path / "npu")
    json_before = first.json_path.read_bytes()
    interrupt_graph_json(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        simulate(model, tmp_path / "npu", seed=1, now=NOW, precision="int8")
    assert listing(tmp_path / "npu") == before
    assert first.json_path.read_bytes() == json_before


def test_error_in_a_later_sample_leaves_nothing(tmp_path, monkeypatch):
    model = tiny(tmp_path / "net.onnx")
    from dumpcmp.device.simulate import run as run_module
    real = run_module._Writer.run_sample
    calls = []

    def second_fails(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(run_module._Writer, "run_sample", second_fails)
    (tmp_path / "npu").mkdir()
    x = {"x": __import__("numpy").ones((2, 5), "float32")}
    with pytest.raises(KeyboardInterrupt):
        simulate(model, tmp_path / "npu", samples=[x, x], now=NOW)
    assert listing(tmp_path / "npu") == {}  # an existing folder stays, empty


def test_a_published_run_is_whole_and_readable(tmp_path):
    model = tiny(tmp_path / "net.onnx")
    os.umask(old := os.umask(0o022))
    first = simulate(model, tmp_path / "npu", seed=1, now=NOW)
    second = simulate(model, tmp_path / "npu", seed=1, now=NOW)
    assert int(second.run_dir.name) == int(first.run_dir.name) + 1
    for r in (first, second):
        assert r.run_dir.parent == tmp_path / "npu" and r.json_path == tmp_path / "npu" / "model.json"
        assert all(f.is_file() and f.parent == r.sample_dirs[0] for f in r.files) and r.files
        assert stat.S_IMODE(r.run_dir.stat().st_mode) == 0o777 & ~old  # not the private folder's 0700
    assert not [n for n in os.listdir(tmp_path / "npu") if is_temp_name(n)]


def test_graph_json_elsewhere_is_published_with_the_run(tmp_path, monkeypatch):
    model = tiny(tmp_path / "net.onnx")
    r = simulate(model, tmp_path / "npu", seed=1, now=NOW, json_out=tmp_path / "graphs" / "deep" / "g.json")
    assert r.json_path.is_file() and r.run_dir.is_dir()
    interrupt_graph_json(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        simulate(model, tmp_path / "npu2", seed=1, now=NOW, json_out=tmp_path / "other" / "g.json")
    assert not (tmp_path / "npu2").exists() and not (tmp_path / "other").exists()
