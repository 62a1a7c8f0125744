"""Advice rules: each triggered by a planted fault on a generated chain, each silent on a healthy chain, each citing
the numbers it rests on; thresholds move them."""

from __future__ import annotations

import numpy as np
import pytest

from dumpcmp.output.advice import RULES, Thresholds, advise
from dumpcmp.comparison.compare import compare
from dumpcmp.errors import ConfigError
from dumpcmp.output.report import collect

from helpers.reportmodel import SHAPE, Chain


def run(tmp_path, rng, **kw):
    c = Chain(tmp_path, rng, 6, **kw)
    return compare(c.root / "dump", c.gt, fusion_json=c.graph)


# a quantize op in the run makes it an int8 device's (the int8 rules apply); the default chain is a float16 device's
INT8 = ["Conv2D", "Relu", "Conv2D", "Relu", "Conv2D", "AscendQuant"]


def rules_at(advice):
    return {(a.rule, a.layer) for a in advice}


def gt_histograms(result):
    hists, _, _ = collect(result, layers=None, top_n=0)
    return {i: h[1] for i, h in hists.items()}


def test_healthy_chain_gets_no_advice(tmp_path, rng):
    result = run(tmp_path, rng)
    assert advise(result, histograms=gt_histograms(result)) == []


def test_fp16_overflow(tmp_path, rng):
    big = rng.standard_normal(SHAPE).astype(np.float32)
    big.flat[100] = 70000.0
    result = run(tmp_path, rng, truth={2: big})
    (a,) = [a for a in advise(result) if a.rule == "fp16-overflow"]
    assert a.layer == "op2:output:0"
    assert a.evidence["ground_truth_max"] == 70000.0 and a.evidence["device_inf"] == 1
    assert "70000" in a.message and "65504" in a.message


def test_fp16_overflow_from_device_nan(tmp_path, rng):
    def nan(gt, _):
        d = gt.copy()
        d.flat[:3] = np.nan
        return d

    result = run(tmp_path, rng, plants={4: nan})
    assert ("fp16-overflow", "op4:output:0") in rules_at(advise(result))


def test_int8_outliers(tmp_path, rng):
    spiky = rng.standard_normal(SHAPE).astype(np.float32)
    spiky.flat[7] = 1000.0
    # op2 quantizes op1's output, the tensor with the outlier
    result = run(tmp_path, rng, truth={1: spiky}, types=["Conv2D", "Relu", "AscendQuant", "Relu", "Conv2D", "Relu"])
    advice = [a for a in advise(result, histograms=gt_histograms(result)) if a.rule == "int8-outliers"]
    assert {a.layer for a in advice} == {"op1:output:0"}  # once per tensor: op2's input is the same tensor
    ev = advice[0].evidence
    assert ev["abs_max"] == 1000.0 and ev["share_central"] >= 0.999 and ev["outside"] >= 1
    # a stricter share silences it
    assert not [a for a in advise(result, histograms=gt_histograms(result),
                                  thresholds=Thresholds(outlier_share=0.99999)) if a.rule == "int8-outliers"]
    # a float16 device is not quantized: no int8 advice
    fp16 = compare(tmp_path / "f" / "dump", Chain(tmp_path / "f", rng, 6, truth={1: spiky}).gt,
                   fusion_json=tmp_path / "f" / "model.json")
    assert not [a for a in advise(fp16, histograms=gt_histograms(fp16)) if a.rule == "int8-outliers"]


def test_wide_conv_input(tmp_path, rng):
    wide = (rng.standard_normal(SHAPE) * 10).astype(np.float32)  # max - min about 80
    result = run(tmp_path, rng, truth={1: wide}, types=INT8)
    (a,) = [a for a in advise(result) if a.rule == "wide-conv-input"]
    assert a.layer == "op2:input:0"  # op2 is a Conv2D; op1's output is its input
    row = result.rows[a.key]  # the conv's input row (its GroundTruth column names op2 itself, the Index op2's unit)
    assert row.tensor_index == "op2:input:0" and a.row == row.index == 3 and row.ground_truth == "op2"
    assert a.evidence["range"] == pytest.approx(float(wide.max() - wide.min()))
    assert a.evidence["source"] == "ground truth"
    # the calibrator's min/max, when given, is what the rule reads
    assert not [a for a in advise(result, min_max={"op1": (-1.0, 1.0)}) if a.rule == "wide-conv-input"]
    # ... the producer's entry, not the conv's own output's
    assert [a for a in advise(result, min_max={"op2": (-1.0, 1.0)}) if a.rule == "wide-conv-input"]
    assert not [a for a in advise(result, thresholds=Thresholds(conv_input_range=1000)) if a.rule == "wide-conv-input"]


def test_int16_layer_and_single_layer(tmp_path, rng):
    noisy = lambda gt, r: gt + r.standard_normal(gt.shape).astype(np.float32)  # noqa: E731  RMSE about 1
    result = run(tmp_path, rng, plants={3: noisy}, types=INT8)
    advice = advise(result)
    assert rules_at(advice) == {("int16-layer", "op3:output:0"), ("single-layer", "op3:output:0")}
    assert advice[0].rule == "single-layer"  # the verdict's own advice first
    rmse = next(a for a in advice if a.rule == "int16-layer").evidence["rmse"]
    op3 = next(r for r in result.rows if r.tensor_index == "op3:output:0")
    assert rmse == pytest.approx(op3.value(7)) and rmse > 0.5
    single = next(a for a in advice if a.rule == "single-layer")
    assert single.evidence["share"] > 0.9 and single.evidence["from"] == "producer -> consumer edges"
    op3_range = float(op3.result.max_y - op3.result.min_y)
    levels = next(a for a in advice if a.rule == "int16-layer").evidence["levels"]
    assert levels == pytest.approx(rmse / (op3_range / 255))  # in int8 levels of the tensor's range
    assert not [a for a in advise(result, thresholds=Thresholds(rmse=levels + 1)) if a.rule == "int16-layer"]


def test_drift(tmp_path, rng):
    result = run(tmp_path, rng, noise=lambda k: 0.08 * (k + 1))
    advice = advise(result)
    (a,) = [a for a in advice if a.rule in ("drift", "single-layer")]
    assert a.rule == "drift" and a.evidence["share"] < 0.5
    # a lower share names the largest step as a single layer instead
    (b,) = [a for a in advise(result, thresholds=Thresholds(single_share=0.1)) if a.rule in ("drift", "single-layer")]
    assert b.rule == "single-layer"


def test_single_layer_from_locate(tmp_path, rng):
    result = run(tmp_path, rng, noise=lambda k: 0.08 * (k + 1))
    locate = [{"op": f"op{k}", "own_cosine": 0.80 if k == 2 else 0.9999, "inherited_cosine": 0.99,
               "total_cosine": 0.9, "verdict": ""} for k in range(6)]
    (a,) = [a for a in advise(result, locate=locate) if a.rule in ("drift", "single-layer")]
    assert a.rule == "single-layer" and a.layer == "op2" and a.evidence["from"] == "locate own error"


def test_constant_output(tmp_path, rng):
    result = run(tmp_path, rng, plants={4: lambda gt, _: np.zeros_like(gt), 2: lambda gt, _: np.full_like(gt, 3.0)})
    got = {(a.layer, a.evidence["device_max"]) for a in advise(result) if a.rule == "constant-output"}
    assert got == {("op4:output:0", 0.0), ("op2:output:0", 3.0)}


def test_rule_selection():
    assert set(RULES) >= {"fp16-overflow", "int8-outliers", "wide-conv-input", "int16-layer", "single-layer",
                          "drift", "constant-output"}
    with pytest.raises(ConfigError, match="unknown advice rule"):
        advise(None, rules=["nope"])
