"""`dumpcmp bench`: every layout and direction measured and checked, the JSON's documented fields, wrong kernels
caught, sizes refused before allocating, user dump trees left untouched, temporary data removed, the plot."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile

import numpy as np
import pytest

import dumpcmp.dumps.layout as L
from dumpcmp.benchmark import common, compare, dumps, layouts
from dumpcmp.benchmark.model import generate_model
from dumpcmp.cli import main

from helpers.layout_reference import loops_fractal_z, loops_nc1hwc0, loops_ndc1hwc0

MACHINE_FIELDS = {"cpu", "cores_logical", "cores_physical", "cores_usable", "memory_total_bytes",
                  "memory_available_bytes", "platform", "python", "numpy", "dumpcmp", "simd_level", "cpu_simd_flags",
                  "DUMPCMP_SIMD", "dumpcmp_threads"}
TOP_FIELDS = {"schema", "benchmark", "options", "machine", "parameters", "unit", "checked", "results"}


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The system's temporary folder, redirected so that leftovers can be seen."""
    folder = tmp_path / "systmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def run_cli(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


# ---- the NumPy references are themselves right ----------------------------------------------------------------


def loops_fractal_z_3d(x, c0):  # the spec's row formula, written out
    n_, c_, d_, h_, w_ = x.shape
    c1 = -(-c_ // c0)
    out = np.zeros((d_ * c1 * h_ * w_, -(-n_ // 16), 16, c0), x.dtype)
    for n, c, d, h, w in np.ndindex(*x.shape):
        out[d * c1 * h_ * w_ + (c // c0) * h_ * w_ + h * w_ + w, n // 16, n % 16, c % c0] = x[n, c, d, h, w]
    return out


def loops_nz(x, c0):  # x is (B, M, N)
    b_, m_, n_ = x.shape
    out = np.zeros((b_, -(-n_ // c0), -(-m_ // 16), 16, c0), x.dtype)
    for b, m, n in np.ndindex(*x.shape):
        out[b, n // c0, m // 16, m % 16, n % c0] = x[b, m, n]
    return out


LOOPS = {
    "NC1HWC0": (loops_nc1hwc0, (2, 20, 3, 5)), "NC1HWC0_C04": (loops_nc1hwc0, (2, 3, 4, 5)),
    "FRACTAL_Z": (loops_fractal_z, (18, 20, 3, 2)), "FRACTAL_Z_C04": (loops_fractal_z, (17, 3, 2, 3)),
    "NDC1HWC0": (loops_ndc1hwc0, (2, 20, 2, 3, 4)), "FRACTAL_Z_3D": (loops_fractal_z_3d, (17, 20, 2, 2, 3)),
    "FRACTAL_NZ": (loops_nz, (2, 19, 21)),
}


@pytest.mark.parametrize("device", layouts.ALL_FORMATS)
@pytest.mark.parametrize("dtype", [np.float16, np.int8])
def test_numpy_recipes_match_the_spec_loops(device, dtype):
    loops, shape = LOOPS[device]
    c0 = L.default_c0(device, dtype)
    x = np.arange(math.prod(shape)).astype(dtype).reshape(shape) + 1
    want = loops(x, c0)
    got = np.full(want.shape, 99, dtype)
    layouts.numpy_encode(device, x, got)
    np.testing.assert_array_equal(got, want)
    back = np.zeros(shape, dtype)
    layouts.numpy_decode(device, want, back)
    np.testing.assert_array_equal(back, x)


def test_streamed_numpy_reference_matches_the_plain_one():
    rng = np.random.default_rng(3)
    y = rng.standard_normal(10_000).astype(np.float32)
    x = (y + rng.standard_normal(10_000).astype(np.float32) * 0.05).astype(np.float16)
    y[::97] = 0.0  # relative errors skip |y| <= EPS
    plain = compare.numpy_metrics(x, y)
    streamed = compare.numpy_reference(compare._plain_chunks(x, y, 777), precise=True)
    for i in range(10):
        want = plain[i]
        got = streamed[i][1] if i == 5 else streamed[i]
        assert got == pytest.approx(want, rel=1e-9, abs=1e-13), i
    assert streamed[5][0] == pytest.approx(float(np.mean(x.astype(np.float64))), rel=1e-12)
    assert streamed[5][3] == pytest.approx(float(np.std(y.astype(np.float64))), rel=1e-12)


def test_parse_size_and_threads():
    assert common.parse_size("256MB") == 256 << 20
    assert common.parse_size("1GiB") == 1 << 30 and common.parse_size("1.5k") == 1536
    assert common.parse_size("4096") == 4096
    for bad in ("", "12XB", "-1MB", "0"):
        with pytest.raises(ValueError):
            common.parse_size(bad)
    assert common.parse_threads("1,2,2") == (1, 2)
    with pytest.raises(ValueError):
        common.parse_threads("1,x")


# ---- bench layouts ---------------------------------------------------------------------------------------------


def test_layouts_every_layout_direction_dtype_and_thread_count_is_measured_and_checked(tmp_path, capsys):
    out = tmp_path / "layouts.json"
    code, text, _ = run_cli(["bench", "layouts", "--size", "96KB", "--dtype", "fp16,fp32,int8,bf16", "--threads",
                             "1,2", "--repeats", "2", "--formats", "all", "--json", str(out)], capsys)
    assert code == 0
    result = json.loads(out.read_text())
    assert TOP_FIELDS <= set(result) and result["schema"] == "dumpcmp-bench/1"
    assert MACHINE_FIELDS <= set(result["machine"])
    assert result["benchmark"] == "layouts" and result["checked"] is True
    want = {(f, d, t, th) for f in layouts.ALL_FORMATS for d in ("decode", "encode")
            for t in ("fp16", "fp32", "int8", "bf16") for th in (1, 2)}
    got = {(r["layout"], r["direction"], r["dtype"], r["threads"]) for r in result["results"]}
    assert got == want and len(result["results"]) == len(want)
    for r in result["results"]:
        assert r["check"] == "checked"
        g = r["gbps"]
        assert 0 < g["min"] <= g["median"] <= g["max"]
        for key in ("memcpy_gbps", "read_probe_gbps", "numpy_gbps", "elements_per_s"):
            assert r[key] > 0
        assert r["vs_memcpy"] == pytest.approx(g["median"] / r["memcpy_gbps"])
        assert r["elements"] == math.prod(r["plain_shape"])
        itemsize = 4 if r["dtype"] == "fp32" else 1 if r["dtype"] == "int8" else 2
        assert r["plain_bytes"] == r["elements"] * itemsize
        c0 = 4 if r["layout"].endswith("_C04") else 32 if itemsize == 1 else 16
        assert r["device_shape"][-1] == c0  # the spec's C0 per data type
    assert "NC1HWC0->NCHW" in text and "NCDHW->FRACTAL_Z_3D" in text and "checked" in text


class CorruptingPlan:
    """A layout plan whose output has one element changed: what a broken kernel would give."""

    def __init__(self, plan):
        self.plan = plan
        self.kernel = plan.kernel

    def run(self, src, dst, threads=0):
        self.plan.run(src, dst, threads)
        flat = dst.reshape(-1).view(np.uint8)
        flat[len(flat) // 3] ^= 0x40


def test_layouts_a_wrong_kernel_is_caught(monkeypatch, capsys):
    real = L.make_plan
    monkeypatch.setattr(L, "make_plan", lambda *a, **k: CorruptingPlan(real(*a, **k)))
    with pytest.raises(common.CheckFailed, match="NC1HWC0->NCHW fp16 with 1 thread.*differs from the NumPy"):
        layouts.run(64 << 10, ("fp16",), (1,), 1, formats=("NC1HWC0",), directions=("decode",))
    code, _, err = run_cli(["bench", "layouts", "--size", "64KB", "--dtype", "fp16", "--formats", "FRACTAL_NZ",
                            "--threads", "1", "--repeats", "1"], capsys)
    assert code == 1 and "wrong result" in err and "FRACTAL_NZ->ND" in err


def test_layouts_a_kernel_that_leaves_elements_unwritten_is_caught(monkeypatch):
    """The destination is filled with a sentinel before the checked run: stale correct data cannot pass."""
    real = L.make_plan

    class Lazy(CorruptingPlan):
        calls = 0

        def run(self, src, dst, threads=0):
            Lazy.calls += 1
            if Lazy.calls == 1:  # right once; later runs (the next thread count's checked one) write nothing
                self.plan.run(src, dst, threads)

    monkeypatch.setattr(L, "make_plan", lambda *a, **k: Lazy(real(*a, **k)))
    with pytest.raises(common.CheckFailed):
        layouts.run(64 << 10, ("fp32",), (1, 2), 1, formats=("FRACTAL_Z",), directions=("encode",))


def test_layouts_size_too_large_for_memory_is_refused_before_allocating(monkeypatch, capsys):
    monkeypatch.setattr(common, "available_memory_bytes", lambda: 100 << 20)
    allocated = []
    monkeypatch.setattr(layouts, "measure_case", lambda *a, **k: allocated.append(a) or [])
    with pytest.raises(common.InsufficientMemory, match="needs about .* MiB .* only 100.0 MiB is available"):
        layouts.run(64 << 20, ("fp16",), (1,), 1)
    assert not allocated
    code, _, err = run_cli(["bench", "layouts", "--size", "64MB", "--dtype", "fp16"], capsys)
    assert code == 2 and "MemAvailable" in err and "--size" in err
    # a size that fits is accepted by the same check
    common.require_memory(10 << 20, "small", available=100 << 20)


@pytest.mark.parametrize("args, message", [
    (["--dtype", "fp64"], "fp64"), (["--formats", "NCHW"], "NCHW"), (["--size", "lots"], "lots"),
    (["--threads", "two"], "two"), (["--repeats", "0"], "repeats"),
])
def test_layouts_bad_options_are_clear_errors(args, message, capsys):
    code, _, err = run_cli(["bench", "layouts", "--size", "64KB"] + args, capsys)
    assert code == 2 and message in err


# ---- bench compare ---------------------------------------------------------------------------------------------


def test_compare_measures_and_checks_every_case_and_removes_its_dumps(tmp_path, private_tmp, capsys):
    out = tmp_path / "compare.json"
    code, text, _ = run_cli(["bench", "compare", "--size", "256KB", "--threads", "1,2", "--repeats", "2",
                             "--json", str(out)], capsys)
    assert code == 0
    assert os.listdir(private_tmp) == []  # the temporary dumps are gone
    result = json.loads(out.read_text())
    assert TOP_FIELDS <= set(result) and MACHINE_FIELDS <= set(result["machine"])
    assert result["benchmark"] == "compare" and result["checked"] is True
    cases = {(r["case"], r["metrics"], r["threads"]) for r in result["results"]}
    for t in (1, 2):
        assert {("fp16 vs fp32", "10 metrics", t), ("fp16 vs fp32", "without KLD", t), ("fp16 vs fp32", "one pass", t),
                ("fp32 vs fp32", "10 metrics", t), ("fp16 NC1HWC0 dump vs fp32 NCHW", "10 metrics", t),
                ("fp16 FRACTAL_NZ dump vs fp32 ND", "10 metrics", t)} <= cases
    n = result["parameters"]["elements"]
    for r in result["results"]:
        assert r["check"] == "checked" and r["elements"] == n
        assert r["read_probe_gbps"] > 0 and r["numpy_gbps"] > 0 and r["gbps"]["median"] > 0
        if r["case"] == "fp16 vs fp32":
            assert r["bytes"] == 6 * n
        assert r["reads"] == {"10 metrics": 3, "without KLD": 2, "one pass": 1}[r["metrics"]]
        assert r["ceiling_gbps"] == pytest.approx(r["read_probe_gbps"] / r["reads"])
        assert r["vs_ceiling"] == pytest.approx(r["vs_read_probe"] * r["reads"])
    assert "fp16 FRACTAL_NZ dump vs fp32 ND" in text and "/ceil" in text


@pytest.mark.parametrize("metrics, reads", [
    (None, 3), ("4", 3), ("0,4", 3), (compare.WITHOUT_KLD, 2), ("0", 2), ("0,1,2", 2), (compare.ONE_PASS, 1),
    ("1", 1), ("5,6,7,8,9", 1),
])
def test_compare_dependent_reads(metrics, reads):
    # KLD's terms need the float32 sums of p, which need the minima and maxima: three reads; the float32 cosine's
    # terms need the norms: two; every other metric is one read
    assert compare.dependent_reads(metrics) == reads


def test_compare_a_wrong_metric_is_caught(monkeypatch, private_tmp):
    real = compare.compare_arrays

    def off(x, y, **kw):  # a kernel that reads one element wrong
        x = x.copy()
        x[5] = x[5] + 1
        return real(x, y, **kw)

    monkeypatch.setattr(compare, "compare_arrays", off)
    with pytest.raises(common.CheckFailed, match="fp16 vs fp32, 10 metrics, 1 thread.*NumPy reference gives"):
        compare.run_compare_benchmark(64 << 10, threads=(1,), repeat=1)
    assert os.listdir(private_tmp) == []  # removed on the error path too


def test_compare_size_refused(monkeypatch, capsys):
    monkeypatch.setattr(common, "available_memory_bytes", lambda: 1 << 30)
    code, _, err = run_cli(["bench", "compare", "--size", "1GB"], capsys)
    assert code == 2 and "needs about" in err and "1.0 GiB is available" in err


def test_check_metrics_accepts_only_summation_noise():
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    y = x + np.float32(0.001)
    result = compare.compare_arrays(x, y)
    ref = compare.numpy_reference(compare._plain_chunks(x, y, 100))
    assert common.check_metrics(result, ref, "ok")["status"] == "checked"
    nudged = dict(ref)
    nudged[2] = ref[2] * (1 + 1e-12)  # below what another summation order changes
    common.check_metrics(result, nudged, "noise")
    nudged[2] = ref[2] * (1 + 1e-6)
    with pytest.raises(common.CheckFailed, match="metric 2"):
        common.check_metrics(result, nudged, "wrong")


# ---- bench dumps -----------------------------------------------------------------------------------------------


def snapshot(root):
    out = {}
    for folder, _, files in os.walk(root):
        for f in files:
            p = os.path.join(folder, f)
            st = os.stat(p)
            with open(p, "rb") as handle:
                out[p] = (st.st_mtime_ns, st.st_size, handle.read())
    return out


def test_dumps_times_a_tree_leaves_it_untouched_and_checks_rows(tmp_path, private_tmp, capsys):
    dump, gt = generate_model(tmp_path / "model", ops=6, bytes_per_side=1 << 18)
    before = snapshot(tmp_path / "model")
    out = tmp_path / "dumps.json"
    code, text, _ = run_cli(["bench", "dumps", str(dump), "-r", str(gt), "--threads", "1,2", "--repeats", "2",
                             "--check-rows", "all", "--json", str(out)], capsys)
    assert code == 0
    assert snapshot(tmp_path / "model") == before
    assert os.listdir(private_tmp) == []
    result = json.loads(out.read_text())
    assert TOP_FIELDS <= set(result) and MACHINE_FIELDS <= set(result["machine"])
    assert result["dumps"] == 6 and result["rows"] == {"compared": 6} and result["checked_rows"] == 6
    assert result["checked"] is True
    assert result["file_bytes"] == sum(len(v[2]) for v in before.values())
    steps = [(r["step"], r["threads"]) for r in result["results"]]
    assert ("index by name", 1) in steps and ("compare", 1) in steps and ("compare", 2) in steps
    assert ("read probe", 2) in steps and ("numpy reference", 1) in steps
    for r in result["results"]:
        if r["step"] == "compare":
            assert r["tensors"] == 6 and r["check"] == "checked 6 of 6 rows" and r["gbps"]["median"] > 0
        if r["step"] in ("index by name", "read headers"):
            assert r["files"] == 6 and r["files_per_s"] > 0
    assert "index by name" in text


def test_dumps_device_vs_device_without_ground_truth(tmp_path, capsys):
    """Without -r the tree is compared with itself: plain tensors give exact agreement, checked against NumPy."""
    from dumpcmp.dumps.dump import TensorData, write_dump

    run = tmp_path / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for k in range(3):
        a = rng.standard_normal((4, 50)).astype(np.float16)
        write_dump(run / f"MatMul.mm{k}.{k + 1}.{1700000000000000 + k}", op_name=f"mm{k}",
                   outputs=[TensorData(a, format="ND")])
    before = snapshot(tmp_path / "dump")
    result = dumps.run_dumps_benchmark(tmp_path / "dump", threads=(1,), repeat=1)
    assert snapshot(tmp_path / "dump") == before
    assert result["parameters"]["device_vs_device"] and result["rows"] == {"compared": 3}
    assert result["checked"] and result["checked_rows"] == 3
    assert "itself (device vs device)" in dumps.format_table(result)


def test_dumps_all_zero_sides_are_checked_not_refused(tmp_path, capsys):
    """A device tensor that is all zero (and a zero ground truth): KLD is a number for the engine and the
    reference alike (the original's clamp), so the run checks those rows instead of stopping."""
    from dumpcmp.dumps.dump import TensorData, write_dump

    run = tmp_path / "dump" / "20260101000000" / "0" / "net" / "1" / "0"
    run.mkdir(parents=True)
    gt = tmp_path / "gt"
    gt.mkdir()
    rng = np.random.default_rng(2)
    cases = {"zero_device": (np.zeros((4, 50), np.float16), rng.standard_normal((4, 50)).astype(np.float32)),
             "zero_truth": (rng.standard_normal((4, 50)).astype(np.float16), np.zeros((4, 50), np.float32)),
             "zero_both": (np.zeros((4, 50), np.float16), np.zeros((4, 50), np.float32))}
    for k, (name, (device, truth)) in enumerate(cases.items()):
        write_dump(run / f"Relu.{name}.{k + 1}.{1700000000000000 + k}", op_name=name,
                   outputs=[TensorData(device, format="ND")])
        np.save(gt / f"{name}.0.{1700000000000000 + k}.npy", truth)
    code, _, err = run_cli(["bench", "dumps", str(tmp_path / "dump"), "-r", str(gt), "--threads", "1",
                            "--repeats", "1", "--check-rows", "all"], capsys)
    assert code == 0, err
    result = dumps.run_dumps_benchmark(tmp_path / "dump", gt, threads=(1,), repeat=1)
    assert result["checked"] and result["checked_rows"] == 3


def test_dumps_a_wrong_comparison_is_caught(tmp_path, monkeypatch, capsys):
    dump, gt = generate_model(tmp_path / "model", ops=2, bytes_per_side=1 << 16)
    real = dumps.reference_for_row

    def shifted(row, dvd, chunk=1 << 20):  # as if the engine had decoded another layout: the reference disagrees
        ref, why = real(row, dvd, chunk)
        ref = dict(ref)
        ref[1] = ref[1] + 0.5
        return ref, why

    monkeypatch.setattr(dumps, "reference_for_row", shifted)
    code, _, err = run_cli(["bench", "dumps", str(dump), "-r", str(gt), "--threads", "1", "--repeats", "1"], capsys)
    assert code == 1 and "metric 1" in err


def test_dumps_missing_folder(tmp_path, capsys):
    code, _, err = run_cli(["bench", "dumps", str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "nowhere" in err


# ---- plot ------------------------------------------------------------------------------------------------------


def test_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    png = tmp_path / "layouts.png"
    code, text, _ = run_cli(["bench", "layouts", "--size", "64KB", "--dtype", "fp16", "--threads", "1",
                             "--repeats", "1", "--plot", str(png)], capsys)
    assert code == 0 and f"plot: {png}" in text
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000


def test_plot_without_matplotlib_is_a_clear_error_before_measuring(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    measured = []
    monkeypatch.setattr(layouts, "run", lambda *a, **k: measured.append(1))
    code, _, err = run_cli(["bench", "layouts", "--size", "64KB", "--plot", str(tmp_path / "x.png")], capsys)
    assert code == 2 and "matplotlib" in err and "dumpcmp[plot]" in err
    assert not measured and not (tmp_path / "x.png").exists()


def test_plot_of_a_kind_matplotlib_cannot_write_is_refused_before_measuring(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "chart.txt"
    code, _, err = run_cli(["bench", "layouts", "--size", "64KB", "--plot", str(out)], capsys)
    assert code == 2 and f"{out}: matplotlib writes no 'txt' files" in err and "Traceback" not in err
    assert not out.exists()
