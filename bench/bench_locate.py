"""`dumpcmp locate` over every operator of a network against `dumpcmp golden` on the same model and input, in the
same run (the goal: locate within 2x golden).

    python bench/bench_locate.py [--blocks 64] [--channels 32] [--size 16] [--precision fp16] [--repeat 3]
                                 [--real ocr_cls] [--json out.json]

Networks: one generated with onnx.helper (tests/helpers/locate_nets.py: Conv+BN+ReLU stem, `--blocks` residual
blocks of Conv+BN, SiLU, Conv+BN+ReLU, Add, an attention-like MatMul/Softmax head, a Gemm; 64 blocks make 344 device
operators), and, with --real NAME, a real network from tests/helpers/realnets.py when that helper and its cache are
there.
Both sides are timed as the user runs them: `dump_golden` (with its check run, as `dumpcmp golden` does) and
`dumpcmp.debug.locate` (scan, pairing, decoding, replay, metrics); the device dump is simulated once beforehand. The two
are run alternately `--repeat` times and the medians taken, of wall time and of this process's CPU time (all its
threads; less disturbed by other processes on a shared machine). Memory: the peak of NumPy buffers alive during one
locate (tracemalloc), with the default batch and with 4 MiB batches, next to the size of all the ground truth.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _timed(fn) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """(wall seconds, CPU seconds of this process, all its threads)."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def bench_one(name: str, model: Path, x: dict, work: Path, precision: str, repeat: int) -> dict:
    import dumpcmp
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate

    sim = simulate(model, work / "dump", precision=precision, samples=[x], dump_mode="all", model_name="net")
    k = [0]

    def golden() -> None:
        k[0] += 1
        dump_golden(model, x, work / f"gt{k[0]}")

    result = None

    def locate() -> None:
        nonlocal result
        result = dumpcmp.locate(model, work / "dump", work / "gt1", fusion_json=sim.json_path)

    # interleaved, so both sides see the same load of a shared machine
    g_runs, l_runs = [], []
    for _ in range(repeat):
        g_runs.append(_timed(golden))
        l_runs.append(_timed(locate))
    golden_s = statistics.median(t[0] for t in g_runs)
    locate_s = statistics.median(t[0] for t in l_runs)
    golden_cpu = statistics.median(t[1] for t in g_runs)
    locate_cpu = statistics.median(t[1] for t in l_runs)
    assert result is not None
    replayed = sum(1 for r in result.rows if r.own is not None)
    # memory: the NumPy arrays alive at once (tracemalloc sees NumPy's buffers, not onnxruntime's), with the default
    # batch and with 4 MiB batches, against all the ground truth's activations together
    gt_bytes = sum(p.stat().st_size for p in (work / "gt1").glob("*.npy"))
    peaks = {}
    for label, batch in (("default", None), ("4MiB", 4 << 20)):
        tracemalloc.start()
        dumpcmp.locate(model, work / "dump", work / "gt1", fusion_json=sim.json_path,
                       **({} if batch is None else {"batch_bytes": batch}))
        peaks[label] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {"network": name, "precision": precision, "device_ops": len(result.rows), "replayed": replayed,
            "golden_s": golden_s, "locate_s": locate_s, "ratio": locate_s / golden_s,
            "golden_cpu_s": golden_cpu, "locate_cpu_s": locate_cpu, "cpu_ratio": locate_cpu / golden_cpu,
            "ground_truth_MiB": gt_bytes / 2**20, "peak_numpy_MiB": peaks["default"] / 2**20,
            "peak_numpy_4MiB_batches_MiB": peaks["4MiB"] / 2**20,
            "origin": result.origin.op if result.origin else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--channels", type=int, default=32)
    ap.add_argument("--size", type=int, default=16)
    ap.add_argument("--precision", default="fp16", choices=("fp16", "int8"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--real", action="append", default=[], help="a tests/helpers/realnets.py network (repeatable)")
    ap.add_argument("--json")
    args = ap.parse_args()
    from helpers.locate_nets import build_net

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "gen").mkdir()
        model = build_net(root / "gen" / "net.onnx", blocks=args.blocks, channels=args.channels, size=args.size)
        x = {"x": np.random.default_rng(0).standard_normal((1, 3, args.size, args.size)).astype(np.float32)}
        rows.append(bench_one(f"generated {args.blocks} blocks", model, x, root / "gen", args.precision, args.repeat))
        for name in args.real:
            try:
                from helpers import realnets
                from dumpcmp.onnx.inputs import random_input
                from dumpcmp.onnx.model import model_inputs
                import onnx

                path = realnets.realnet(name)
                net = realnets.REGISTRY[name]
            except Exception as error:  # the helper or the network is not here: say so, go on
                print(f"{name}: skipped ({error})")
                continue
            rng = np.random.default_rng(0)
            feeds = {}
            for mi in model_inputs(onnx.load(path, load_external_data=False)):
                shape = tuple(int(d) for d in net.shapes[mi.name].split(",")) if mi.name in net.shapes else None
                feeds[mi.name] = (rng.standard_normal(shape).astype(np.float32) if shape is not None
                                  else random_input(mi, rng))
            (root / name).mkdir()
            rows.append(bench_one(name, path, feeds, root / name, args.precision, args.repeat))
    print(f"{'network':<26} {'prec':<5} {'ops':>5} {'replayed':>8} {'golden s':>9} {'locate s':>9} {'ratio':>6} "
          f"{'golden cpu':>10} {'locate cpu':>10} {'ratio':>6} {'GT MiB':>7} {'peak MiB':>8} {'(4MiB batches)':>14}")
    for r in rows:
        print(f"{r['network']:<26} {r['precision']:<5} {r['device_ops']:>5} {r['replayed']:>8} {r['golden_s']:>9.3f} "
              f"{r['locate_s']:>9.3f} {r['ratio']:>6.2f} {r['golden_cpu_s']:>10.3f} {r['locate_cpu_s']:>10.3f} "
              f"{r['cpu_ratio']:>6.2f} {r['ground_truth_MiB']:>7.1f} {r['peak_numpy_MiB']:>8.1f} "
              f"{r['peak_numpy_4MiB_batches_MiB']:>14.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": {"python": platform.python_version(), "cpu": platform.processor(),
                                   "system": platform.platform()}, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
