"""`dumpcmp extract` with a region whose device dump has a hashed name (issue #38): the copied dump keeps its
mapping.csv row in dump_data/, so the exported folder names its op like the source folder."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.cli.demo import build_model  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps import naming  # noqa: E402
from dumpcmp.dumps.scan import scan  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402


def test_hashed_dump_keeps_its_mapping_row(tmp_path):
    model = build_model(tmp_path / "demo_net.onnx")
    x = np.random.default_rng(5).standard_normal((1, 3, 32, 32)).astype(np.float32)
    sim = simulate(model, tmp_path / "dump", samples=[{"input": x}])
    dump_golden(model, {"input": x}, tmp_path / "gt")
    target = next(Path(p) for p in sim.files if Path(p).name.split(".")[1] == "conv3bn3")
    short = naming.hashed_name(target.name)
    os.rename(target, target.parent / short)
    (target.parent / naming.MAPPING_FILE).write_text(f"{short},{target.name}\n", encoding="utf-8")
    code = main(["extract", str(model), "--start", "conv2", "--end", "add1", "-l", str(tmp_path / "dump"),
                 "-f", str(sim.json_path), "-r", str(tmp_path / "gt"), "-o", str(tmp_path / "out")])
    assert code == 0
    [folder] = sorted((tmp_path / "out").glob("dump_result_*"))
    data = folder / "dump_data"
    assert (data / short).is_file()
    assert naming.file_name_of(data / short) == target.name
    index = scan(data)
    assert not index.skipped
    assert sorted(e.op_name for g in index for e in g) == ["add1", "conv2bn2relu2", "conv3bn3"]
