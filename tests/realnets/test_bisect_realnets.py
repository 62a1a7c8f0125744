"""dumpcmp bisect on a real CNN+BiLSTM OCR network (ddddocr's, fetched by tests/helpers/realnets.py), with `dumpcmp
simulate` fp16 as the device: its overflow (NaN from 417_bias_add_cast on) reaches later layers through branches that
execution order interleaves with healthy ones, so the plain search ended elsewhere (422_tmp_qaunt); now the
confirmation round sees a producer of the layer found below too, searches on, and names the layer compare finds
first."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
realnets = pytest.importorskip("helpers.realnets")

from dumpcmp.comparison.compare import compare  # noqa: E402
from dumpcmp.debug.bisect import bisect  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.onnx.golden import dump_golden  # noqa: E402


@pytest.mark.slow
def test_bisect_names_the_layer_compare_finds_first_on_a_crnn(tmp_path: Path) -> None:
    model = realnets.realnet_or_skip("ocr_crnn")
    x = np.random.default_rng(0).uniform(0, 1, (1, 1, 64, 128)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    dump_golden(model, {"input1": x}, tmp_path / "gt")
    full = simulate(model, tmp_path / "full", precision="fp16", samples=[{"input1": x}])
    rows = compare(tmp_path / "full", tmp_path / "gt", fusion_json=full.json_path).rows
    first = next(r.pair.npu_op for r in rows if r.pair is not None and r.pair.kind == "output"
                 and r.result is not None and not r.cosine >= 0.99)
    command = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 " \
              f"-i input1={shlex.quote(str(tmp_path / 'x.npy'))} --acl-json {{acl_json}} -o {{dump}}"
    lines: list[str] = []
    r = bisect(model, command, tmp_path / "gt", tmp_path / "b", with_locate=False, echo=lines.append)
    assert r.layer == first, lines
    assert r.confirmation is not None and r.confirmation.startswith("confirmed"), lines
