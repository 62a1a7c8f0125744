"""`dumpcmp simulate` computes the same values whatever the acl.json dumps: a layer dumped alone (what each bisect
round does) holds the very bytes it holds in a full dump, in fp16 and int8, with dump_mode output or all, and when the
full dump is cut into several onnxruntime runs (--batch-mb). bisect compares such single-layer dumps with the ground
truth: a layer whose value changed with the selection would send the search elsewhere than compare."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.device.acljson import acl_json_text, new_acl_json  # noqa: E402
from dumpcmp.device.simulate import simulate  # noqa: E402
from dumpcmp.dumps.dump import open_dump  # noqa: E402


def _payloads(files):
    out = {}
    for f in files:
        d = open_dump(f)
        out[d.op_name] = [np.asarray(t.raw()).tobytes() for t in d.outputs]
    return out


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_a_layer_dumped_alone_holds_the_bytes_of_the_full_dump(tmp_path, precision):
    from helpers.hardswish_net import build_hardswish_net

    model = build_hardswish_net(tmp_path / "net.onnx", blocks=2)
    samples = [{"x": np.random.default_rng(k).standard_normal((1, 3, 16, 16)).astype(np.float32)} for k in range(2)]
    full = simulate(model, tmp_path / "full", precision=precision, samples=samples, dump_mode="all")
    whole = _payloads(full.files)
    # the full dump cut into one onnxruntime run per few ops exposes other outputs in each session
    split = _payloads(simulate(model, tmp_path / "split", precision=precision, samples=samples,
                               batch_bytes=4096).files)
    assert split.keys() <= whole.keys() and all(split[k] == whole[k] for k in split)
    for layer in ["dw1_hs_mul", "dw1_hs_clip", "pw1", "fc"]:
        acl = tmp_path / f"{layer}.json"
        (tmp_path / layer).mkdir()
        acl.write_text(acl_json_text(new_acl_json([("net", [layer])], dump_path=str(tmp_path / layer))))
        one = simulate(model, precision=precision, samples=samples, acl_json=acl)
        assert [open_dump(f).op_name for f in one.files] == [layer, layer]  # one file per sample, this layer only
        alone = _payloads(one.files)
        assert alone[layer] == whole[layer], layer
