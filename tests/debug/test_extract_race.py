"""Two `extract` runs into one fresh folder at once (issue #33): exactly one wins, its export stays whole, the other
gets the one "already exists" error (exit 2, no traceback) and removes nothing it did not create."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.errors import ConfigError  # noqa: E402

EXPECTED = {"model.onnx", "acl.json", "export.log", "commands.sh", "inputs", "dump_data"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    base = tmp_path_factory.mktemp("race")
    model = build_model(base / "demo_net.onnx")
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sim = simulate(model, base / "dump", samples=[{"input": x}])
    return {"model": model, "dump": base / "dump", "json": sim.json_path}


def whole(folder: Path) -> bool:
    names = set(os.listdir(folder))
    return EXPECTED <= names and (folder / "model.onnx").stat().st_size > 0 and (folder / "acl.json").stat().st_size


def test_the_loser_of_a_race_for_one_name_removes_nothing(demo, tmp_path, monkeypatch):
    """Deterministic interleaving: a second run starts, picks the same name and finishes while the first is writing
    into a folder the first created; before the fix the first got ENOTEMPTY and removed the whole folder."""
    import dumpcmp.debug.extract.export as ex

    out = tmp_path / "fresh" / "out"
    real_write = ex._write
    calls = []

    def write_then_let_the_other_win(*a, **k):
        calls.append(1)
        if len(calls) == 1:
            ex.extract(demo["model"], ["conv2"], ["add1"], dump=demo["dump"], graph_json=demo["json"], out=out,
                       now=0.0)
        return real_write(*a, **k)

    monkeypatch.setattr(ex, "_write", write_then_let_the_other_win)
    with pytest.raises(ConfigError, match="already exists"):
        ex.extract(demo["model"], ["conv2"], ["add1"], dump=demo["dump"], graph_json=demo["json"], out=out, now=0.0)
    folders = os.listdir(out)
    assert len(folders) == 1 and whole(out / folders[0])


@pytest.mark.parametrize("rounds", [pytest.param(3, id="short"), pytest.param(25, id="long", marks=pytest.mark.slow)])
def test_concurrent_processes(demo, tmp_path, rounds):
    src = str(Path(__import__("dumpcmp").__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": src}
    tally = {"one winner": 0, "both won": 0}
    for r in range(rounds):
        out = tmp_path / f"r{r}"
        cmd = [sys.executable, "-m", "dumpcmp", "extract", str(demo["model"]), "--start", "conv2", "--end", "add1",
               "-l", str(demo["dump"]), "-f", str(demo["json"]), "-o", str(out)]
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]
        for p in procs:
            p.stdout.close()
            p.stderr.close()
        codes = sorted(code for code, _, _ in results)
        for code, _, err in results:
            assert "Traceback" not in err, err
            if code == 2:
                assert "already exists" in err, err
        assert codes in ([0, 0], [0, 2]), results
        folders = sorted(n for n in os.listdir(out))
        assert not [n for n in folders if n.endswith(".tmp")], folders
        # both win when the two runs fall in different seconds (different names); each folder is whole
        assert len(folders) == codes.count(0) and all(whole(out / f) for f in folders)
        tally["one winner" if codes == [0, 2] else "both won"] += 1
    print(f"extract race: {rounds} rounds, {tally}")
