"""The advice rules know quantize/dequantize ops by the one list of their type names (graph/pairing.py: the device's
names and ONNX's), not by sets of their own (#34: each rule lives once)."""

from __future__ import annotations

import ast
import inspect

from dumpcmp.graph import pairing
from dumpcmp.output.advice import rules


def test_quant_type_names_live_in_pairing() -> None:
    assert pairing.QUANTIZE_TYPES <= pairing.QUANTIZING_TYPES
    assert "QuantizeLinear" in pairing.QUANTIZING_TYPES
    assert pairing.QUANTIZING_TYPES | pairing.DEQUANTIZE_TYPES <= pairing.QUANT_DEQUANT_TYPES
    assert {"AscendRequant", "AscendAntiQuant", "DequantizeLinear"} <= pairing.QUANT_DEQUANT_TYPES


def test_advice_rules_spell_no_quant_type_of_their_own() -> None:
    strings = {n.value for n in ast.walk(ast.parse(inspect.getsource(rules)))
               if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert not strings & pairing.QUANT_DEQUANT_TYPES


def test_advice_reads_the_same_sets() -> None:
    class Row:
        npu_data_type = "float32"

        def __init__(self, op_type: str) -> None:
            self.op_type = op_type

    class Result:
        def __init__(self, op_type: str) -> None:
            self.rows = [Row(op_type)]

    for t in pairing.QUANT_DEQUANT_TYPES:
        assert rules.device_precision(Result(t)) == "int8", t
    assert rules.device_precision(Result("Conv2D")) == "float32"
