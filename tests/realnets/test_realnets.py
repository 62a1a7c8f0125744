"""Real networks from PyPI wheels (tests/helpers/realnets.py), each end to end as a user runs it: golden -> simulate
fp16 and int8 -> compare -> one single-op detail, through the command line, two samples each.

Asserts: every step exits 0; the two samples pair with the two iterations (sample k <-> data_index k: the model
inputs compare exactly); no weight or constant is written as ground truth or reported as the first bad layer; in
the fp16 simulation no activation falls below cosine 0.99 unless the device tensor overflowed (NaN/inf: a genuine
fp16 overflow, reported as one) or its error is below fp16's resolution (both sides ~0); a weight that overflows
fp16 is reported by simulate. Networks that cannot be fetched are skipped with the reason.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from helpers.realnets import REGISTRY, realnet_or_skip  # noqa: E402

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.ground_truth import read_golden_index  # noqa: E402
from dumpcmp.onnx.model import model_inputs  # noqa: E402

NEGLIGIBLE = 1e-3  # an absolute error below this on a tensor near zero is fp16 resolution, not a broken layer


def _sample_array(name: str, net_name: str, shape: tuple[int, ...], dtype: np.dtype, k: int) -> np.ndarray:
    rng = np.random.default_rng([k, len(name), len(net_name)])
    if name == "sr":
        return np.array(16000, dtype=dtype)  # silero: the sample rate, a 0-d int64
    if name == "attention_mask" and dtype.kind == "f":
        mask = np.zeros(shape, dtype=dtype)  # minilm_l3: an additive mask, the last 16 positions padding
        mask[..., shape[-1] - 16:] = -10000.0
        return mask
    if dtype.kind in "iu":
        return rng.integers(0, 256, size=shape).astype(dtype)  # magika: bytes
    if net_name.startswith("ocr") or net_name == "yolov8n":
        return rng.random(shape).astype(dtype)  # images in [0, 1)
    return (rng.standard_normal(shape) * 0.5).astype(dtype)


def _inputs(net_name: str, model_path: Path, folder: Path) -> list[str]:
    """Two samples per input in folder/NAME/{0,1}.npy; the `-i` arguments (a 0-d input gets one shared file)."""
    net = REGISTRY[net_name]
    shapes = {k: tuple(int(d) for d in v.split(",")) for k, v in net.shapes.items()}
    args = []
    for mi in model_inputs(onnx.load(str(model_path), load_external_data=False)):
        shape = shapes.get(mi.name) or tuple(int(d) for d in mi.shape)
        safe = mi.name.replace("/", "_")
        if not shape:
            np.save(folder / f"{safe}.npy", _sample_array(mi.name, net_name, shape, mi.dtype, 0))
            args.append(f"{mi.name}={folder / f'{safe}.npy'}")
            continue
        (folder / safe).mkdir(parents=True)
        for k in range(2):
            np.save(folder / safe / f"{k}.npy", _sample_array(mi.name, net_name, shape, mi.dtype, k))
        args.append(f"{mi.name}={folder / safe}")
    return args


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _run(argv: list[str], capsys) -> str:
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, f"dumpcmp {' '.join(argv)} exited {code}: {out.err}"
    return out.out + out.err


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


# The default run takes a representative few (a CNN with Conv+BN, control flow with an LSTM and scalar inputs, an
# opset-9 model whose weights are nodes); the slow suite (`python -m pytest -m slow`) takes every other network.
REPRESENTATIVE = {"ocr_cls", "silero_vad", "squeezenet_op9"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in REPRESENTATIVE else [pytest.mark.slow])
                                  for n in sorted(REGISTRY)])
def test_real_network_end_to_end(name, tmp_path, capsys):
    model = realnet_or_skip(name)
    inputs = _inputs(name, model, tmp_path / "in")
    names = {mi.name for mi in model_inputs(onnx.load(str(model), load_external_data=False))}
    gt = tmp_path / "gt"
    _run(["golden", str(model), "-i", *inputs, "-o", str(gt)], capsys)
    for k in range(2):
        records = read_golden_index(gt / str(k))
        written_constants = [r for r in records if r.file and r.op_type == "Constant"]
        assert not written_constants, f"constants written as ground truth: {written_constants[:3]}"

    findings = {}
    for precision in ("fp16", "int8"):
        dump = tmp_path / precision
        text = _run(["simulate", str(model), "--precision", precision, "-i", *inputs, "-o", str(dump)], capsys)
        findings[precision] = text
        result = tmp_path / f"{precision}.csv"
        summary = _run(["compare", "-l", str(dump), "-r", str(gt), "-f", str(dump / "model.json"), "-o",
                        str(result), "--overflow"], capsys)
        files = sorted(tmp_path.glob(f"{precision}_it*.csv"))
        assert len(files) == 2, summary  # one result per iteration
        for k, f in enumerate(files):
            assert f"sample folder {k}/ (iteration {k})" in summary
            rows = _rows(f)
            # sample k <-> iteration k: the device's copy of each model input equals that sample's input
            casts = [r for r in rows if r["NPUDump"].startswith("trans_Cast") and r["GroundTruth"] in names
                     and r["Shape"] != "[]"]
            for r in casts:
                assert _float(r["CosineSimilarity"]) > 0.9999, (f, r["GroundTruth"], r["CosineSimilarity"])
            # a Const op keeps the original tool's "no dump file" row (NaN cells); it is never compared as a layer
            for r in rows:
                if r["OpType"] in ("Constant", "Const"):
                    assert "There is no dump file" in r["CompareFailReason"], r
                    assert math.isnan(_float(r["CosineSimilarity"])), r
                    assert "weights and constants (Const)" in summary, summary  # counted apart from the layers
            if precision == "fp16":
                overflowed = False  # a genuine fp16 overflow (device inf/NaN) explains the layers after it
                for r in rows:
                    overflowed = overflowed or r.get("OverFlow", "").upper() in ("YES", "TRUE", "1")
                    cos = _float(r["CosineSimilarity"])
                    if not cos < 0.99 or _float(r["MaxAbsoluteError"]) < NEGLIGIBLE:
                        continue
                    assert overflowed, (name, f.name, r["TensorIndex"], cos, r["MaxAbsoluteError"])
                if overflowed:
                    assert "device tensors hold NaN or inf" in summary
                else:  # a healthy network: the summary itself says so (no fake "first below")
                    assert "every compared tensor has cosine similarity >= 0.99" in summary, summary
        first = [ln for ln in summary.splitlines() if ln.startswith("  first below")]
        for ln in first:
            assert "Constant" not in ln and "Const)" not in ln, ln

    # one single-op detail: the first compiled op with a compared output in iteration 0
    rows = _rows(sorted(tmp_path.glob("fp16_it0.csv"))[0])
    op = next(r["NPUDump"] for r in rows if r["NPUDump"] not in ("", "*") and ":output:" in r["TensorIndex"]
              and _float(r["CosineSimilarity"]) == _float(r["CosineSimilarity"])
              and not r["NPUDump"].startswith("trans_"))
    detail = tmp_path / "detail"
    text = _run(["compare", "-l", str(tmp_path / "fp16"), "-r", str(gt), "-f", str(tmp_path / "fp16" / "model.json"),
                 "--iteration", "0", "-d", op, "-o", str(detail)], capsys)
    assert "elements compared" in text
    assert any(detail.iterdir())


def test_included_constants_stay_out_of_first_bad(tmp_path, capsys):
    """ocr_cls exports its weights as Constant nodes: with --include-constants they are ground truth, marked in the
    index, and still never "first below" (int8, where layers do fall below 0.99)."""
    model = realnet_or_skip("ocr_cls")
    inputs = _inputs("ocr_cls", model, tmp_path / "in")
    gt = tmp_path / "gt"
    _run(["golden", str(model), "-i", *inputs, "-o", str(gt), "--include-constants", "--quiet"], capsys)
    marked = [r for r in read_golden_index(gt / "0") if r.file and "constant" in r.note]
    assert len(marked) > 100
    dump = tmp_path / "int8"
    _run(["simulate", str(model), "--precision", "int8", "-i", *inputs, "-o", str(dump), "--quiet"], capsys)
    from dumpcmp.comparison.compare import compare_runs

    for res in compare_runs(dump, gt, fusion_json=dump / "model.json"):
        first = res.first_below(0.99)
        assert first is None or not res.is_constant(first)
        constants = {str(gt / "0" / r.file) for r in marked} | {str(gt / "1" / r.file) for r in marked}
        assert all(row.pair.ground_truth_ref is None or row.pair.ground_truth_ref.path not in constants
                   or res.is_constant(row) for row in res if row.pair is not None)
