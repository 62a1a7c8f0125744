"""Device vs device in both of the original's ways (`npu_vs_npu`, `--npu-vs-npu restored|raw`), against NumPy.

restored (the default, as msaccucmp in msprobe 2026): each tensor decoded to its original shape, padding removed,
compared as float32 (bool too); raw (as 72c5bd4c): the stored buffers, padding included. The references here are
NumPy's sums over the plain values the dumps were encoded from (restored) or over the stored arrays (raw), including
the cases where the current msaccucmp does not restore (its bugs, docs/compare.md): an NC1HWC0 tensor of a 2-D
original shape, a 5-D NDC1HWC0 tensor, a CHWN tensor. tests/oracle checks the cells against the original's files.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import dumpcmp
from dumpcmp import TensorData
from dumpcmp.cli import main
from dumpcmp.dumps import layout
from dumpcmp.errors import ConfigError

T = 1700000000000000
RNG = np.random.default_rng(38)


def _cases() -> dict[str, tuple[np.ndarray, np.ndarray, dict]]:
    """op -> (left plain values, right plain values, how they are stored: format, plain format, original shape)."""
    def pair(shape, dtype, scale=1.0):
        a = (RNG.standard_normal(shape) * scale + 0.3).astype(dtype)
        b = (a.astype(np.float32) * np.float32(1.01) + np.float32(0.002)).astype(dtype)
        return a, b

    out = {}
    out["nc1hwc0"] = (*pair((1, 20, 5, 5), np.float16), {"format": "NC1HWC0", "plain": "NCHW"})
    out["fractal_nz"] = (*pair((18, 33), np.float32), {"format": "FRACTAL_NZ", "plain": "ND"})
    out["fractal_z"] = (*pair((20, 3, 3, 3), np.float16), {"format": "FRACTAL_Z", "plain": "NCHW"})
    out["fc_nc1hwc0"] = (*pair((4, 20), np.float16), {"format": "NC1HWC0", "plain": "NCHW", "as4d": (4, 20, 1, 1)})
    out["ndc1hwc0"] = (*pair((1, 20, 2, 3, 3), np.float16), {"format": "NDC1HWC0", "plain": "NCDHW"})
    out["chwn"] = (*pair((2, 3, 4, 5), np.float32), {"format": "CHWN", "plain": "NCHW"})
    ints = RNG.integers(-100, 100, (1, 20, 3, 3)).astype(np.int8)
    out["int8_nc1hwc0"] = (ints, np.clip(ints.astype(np.int16) + 1, -128, 127).astype(np.int8),
                           {"format": "NC1HWC0", "plain": "NCHW"})
    mask = RNG.random((6, 7)) > 0.5
    other = mask.copy()
    other[0, :3] = ~other[0, :3]
    out["bool_nd"] = (mask, other, {"format": "ND", "plain": "ND"})
    out["no_original"] = (*pair((1, 20, 2, 2), np.float16), {"format": "NC1HWC0", "plain": "NCHW", "orig": False})
    return out


CASES = _cases()


def _stored(values: np.ndarray, how: dict) -> TensorData:
    plain = values.reshape(how["as4d"]) if "as4d" in how else values
    stored = layout.convert(plain, how["plain"], how["format"]) if how["format"] != how["plain"] else plain
    return TensorData(stored, format=how["format"], original_shape=values.shape if how.get("orig", True) else None)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("npu_vs_npu")
    for side in ("left", "right"):
        (root / side).mkdir()
    for task, (op, (a, b, how)) in enumerate(CASES.items(), start=1):
        for side, values in (("left", a), ("right", b)):
            dumpcmp.write_dump(root / side / f"Op.{op}.{task}.{T}", op_name=op, outputs=[_stored(values, how)],
                               dump_time=T)
    return root / "left", root / "right"


def _rows(result) -> dict[str, object]:
    return {r.npu_dump: r for r in result.rows}


def _reference(x: np.ndarray, y: np.ndarray) -> dict[int, float]:
    """Cosine, MaxAbs, MAE, RMSE and the means of NumPy's float64 sums over float32 values."""
    x = x.astype(np.float32).astype(np.float64).ravel()
    y = y.astype(np.float32).astype(np.float64).ravel()
    d = np.abs(x - y)
    return {0: float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))), 1: float(d.max()), 6: float(d.mean()),
            7: float(np.sqrt((d * d).mean())), "mean_x": float(x.mean()), "mean_y": float(y.mean())}


def _check(row, ref: dict) -> None:
    assert row.result is not None, row.fail_reason
    for metric in (0, 1, 6, 7):
        assert math.isclose(row.value(metric), ref[metric], rel_tol=2e-5, abs_tol=1e-6), metric
    assert math.isclose(row.result.mean_x, ref["mean_x"], rel_tol=1e-5, abs_tol=1e-6)
    assert math.isclose(row.result.mean_y, ref["mean_y"], rel_tol=1e-5, abs_tol=1e-6)


@pytest.mark.parametrize("op", [op for op in CASES if op != "no_original"])
def test_restored_is_numpy_on_the_original_values(dumps, op):
    left, right = dumps
    row = _rows(dumpcmp.compare(left, right))[op]  # restored is the default
    a, b, _ = CASES[op]
    _check(row, _reference(a, b))
    assert row.fail_reason == ""  # a bool pair too: compared as 0.0 and 1.0, every metric, no note


@pytest.mark.parametrize("op", list(CASES))
def test_raw_is_numpy_on_the_stored_buffers(dumps, op):
    left, right = dumps
    row = _rows(dumpcmp.compare(left, right, npu_vs_npu="raw"))[op]
    a, b, how = CASES[op]
    if a.dtype == np.bool_:  # 72c5bd4c gives a bool pair the cosine only, its notes saying why
        assert "does not support Boolean types" in row.fail_reason and math.isnan(row.value(1))
        return
    _check(row, _reference(np.asarray(_stored(a, how).array), np.asarray(_stored(b, how).array)))


def test_padding_is_what_differs(dumps):
    """A fractal dump's padding zeros enter the raw numbers: the mean error and the means shrink by the padding's
    share (here 12 of every 32 channels), the restored ones are the layer's."""
    left, right = dumps
    restored = _rows(dumpcmp.compare(left, right))["nc1hwc0"].result
    raw = _rows(dumpcmp.compare(left, right, npu_vs_npu="raw"))["nc1hwc0"].result
    assert raw.count == 32 * 25 and restored.count == 20 * 25
    assert math.isclose(raw.value(6) * raw.count, restored.value(6) * restored.count, rel_tol=1e-4)
    assert raw.value(6) < restored.value(6) * 0.7


def test_a_device_layout_without_original_shape_is_compared_as_stored(dumps):
    left, right = dumps
    row = _rows(dumpcmp.compare(left, right))["no_original"]
    a, b, how = CASES["no_original"]
    _check(row, _reference(np.asarray(_stored(a, how).array), np.asarray(_stored(b, how).array)))


def test_summary_says_how(dumps):
    left, right = dumps
    assert any("restored to its original shape" in n for n in dumpcmp.compare(left, right).notes)
    assert any("padding included" in n for n in dumpcmp.compare(left, right, npu_vs_npu="raw").notes)


def test_cli_flag(dumps, tmp_path):
    left, right = dumps
    base = ["compare", "-l", str(left), "-r", str(right), "--quiet"]
    assert main(base + ["-o", str(tmp_path / "default.csv")]) == 0
    assert main(base + ["-o", str(tmp_path / "restored.csv"), "--npu-vs-npu", "restored"]) == 0
    assert main(base + ["-o", str(tmp_path / "raw.csv"), "--npu-vs-npu", "raw"]) == 0
    assert (tmp_path / "default.csv").read_bytes() == (tmp_path / "restored.csv").read_bytes()
    assert (tmp_path / "raw.csv").read_bytes() != (tmp_path / "restored.csv").read_bytes()
    with pytest.raises(SystemExit) as bad:
        main(base + ["--npu-vs-npu", "padded"])
    assert bad.value.code == 2


@pytest.mark.parametrize("extra", [["-d", "nc1hwc0", "-o", "detail"], ["--stats"]])
def test_cli_flag_refused_where_it_does_not_apply(dumps, tmp_path, capsys, extra):
    left, right = dumps
    extra = [str(tmp_path / e) if e == "detail" else e for e in extra]
    assert main(["compare", "-l", str(left), "-r", str(right), "--quiet", "--npu-vs-npu", "raw", *extra]) == 2
    err = capsys.readouterr().err
    assert "--npu-vs-npu" in err and "Traceback" not in err


def test_python_api_refuses_an_unknown_mode(dumps):
    left, right = dumps
    with pytest.raises(ConfigError, match="restored, raw"):
        dumpcmp.compare(left, right, npu_vs_npu="padded")


def test_original_spelling_restores_as_the_current_version(dumps, tmp_path):
    """`compare -m A -g B -out DIR` (the current msaccucmp's command line) gives the restored numbers."""
    left, right = dumps
    assert main(["compare", "-m", str(left), "-g", str(right), "-out", str(tmp_path / "out"), "--quiet"]) == 0
    assert main(["compare", "-l", str(left), "-r", str(right), "-o", str(tmp_path / "ours.csv"), "--quiet"]) == 0
    (written,) = (tmp_path / "out").glob("result_*.csv")
    assert written.read_bytes() == (tmp_path / "ours.csv").read_bytes()


def test_restored_bool_masks_get_no_16_bit_advice(tmp_path):
    """Restored, a bool mask has an RMSE (as 0 and 1): on an int8 device the int16-layer rule must not tell a user to
    run a mask in 16 bit (it never fired before, when a bool pair had no RMSE)."""
    from dumpcmp.output.advice.rules import advise

    left, right = tmp_path / "l", tmp_path / "r"
    rng = np.random.default_rng(1)
    q = rng.integers(-100, 100, (4, 40)).astype(np.int8)
    mask = rng.random((6, 40)) > 0.5
    for side, flip in ((left, False), (right, True)):
        side.mkdir()
        m = mask.copy()
        if flip:
            m[:, ::3] = ~m[:, ::3]
        dumpcmp.write_dump(side / f"AscendQuant.q.1.{T}", op_name="q", outputs=[q])
        dumpcmp.write_dump(side / f"Greater.mask.2.{T}", op_name="mask", outputs=[m])
    result = dumpcmp.compare(left, right)
    row = _rows(result)["mask"]
    assert row.result is not None and row.value(7) > 0.5 and row.cosine < 0.99
    assert [a for a in advise(result) if a.rule == "int16-layer"] == []
