"""#39: names the line-based SigmaStar headers cannot hold raw. An ONNX tensor or op name may contain line breaks;
written raw it split its header line in two, and the dump that `golden --format sigmastar` or `simulate --target
sigmastar` wrote could not be read back (`bad header line`). The writer puts a space for each line break."""

from __future__ import annotations

import numpy as np

from dumpcmp.dumps.sigmastar import TensorSpec, open_sigmastar, write_sigmastar_dump


def test_line_breaks_in_names_are_written_as_spaces(tmp_path):
    data = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    specs = [TensorSpec("a\nb", data, "My\r\nOp", 0), TensorSpec("c\rd bConstant:1 shape:[9] dims:1", data, "OP", 1),
             TensorSpec("plain", data, "OP", 2)]
    for text in (False, True):
        path = write_sigmastar_dump(tmp_path / f"d{int(text)}.{'txt' if text else 'bin'}", specs, text=text)
        dump = open_sigmastar(path)
        assert [t.name for t in dump.tensors] == ["a b", "c d bConstant:1 shape:[9] dims:1", "plain"]
        assert dump.tensors[0].op_type == "My Op"
        assert [t.shape for t in dump.tensors] == [(1, 2, 3)] * 3
        for t in dump.tensors:
            np.testing.assert_array_equal(dump.values(t), data)
