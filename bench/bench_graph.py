"""The graph JSON of a very large model (issue #35): `load_graph` and the pairing, timed in child processes.

    python bench/bench_graph.py [--ops 300000] [--repeats 3] [--other-src OLD/src] [--keep DIR] [--json FILE]

The graph JSON is generated as bench/bench_large.py generates it (tests/helpers/graphjson.py's builders: one compute
operator in four fused from two original ops, an inserted TransData after one in three), with what a real `atc
--mode=1` file carries besides: each compute op reads the previous op's output (`input`, an `input_desc` with its
attributes) and has the attributes of a convolution (strides, pads, dilations, data format, the fusion engine's
`_fe_imply_type`, `_op_compile_strategy`...). 300,000 operators make about 200 MB. Next to it, the dump index the
pairing takes (one device op per graph op, as the scan of a run folder lists them, and one ground-truth key per
original output), written as a small JSON of its own and read by the child before the clock starts.

Each measurement runs in a child process (`--repeats` times, the median counts): `parse` is `load_graph` alone,
`pair` is `load_graph` then `pair_with_ground_truth` on the index (with the cyclic
collector paused, as `dumpcmp compare` runs it). The child reports the CPU of its main thread
per stage (`time.thread_time`); the parent reads the child's CPU (user + sys, from wait4, import and start-up
included) and samples its peak anonymous memory (RssAnon of /proc/<pid>/status, as bench_large.py does). The
pairs' digest must be the same in every run. `--other-src DIR` times another source tree (its `src/`) in the same
run, alternating with this one, imported even beside an editable install of this tree (bench_large.py's way), and
its pairs must be the same. The files are generated under a temporary folder (TMPDIR, /tmp by default) and deleted
after, unless `--keep DIR` (where files kept by an earlier run are reused).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from helpers import graphjson as gj  # noqa: E402  (tests/helpers/graphjson.py)

from bench_large import PLAIN, measured_run, mib, tensor_shape  # noqa: E402  (bench/bench_large.py)

# The child: import the given tree's dumpcmp (dropping an editable install's finder), time the stages, print JSON.
_CHILD = """\
import hashlib, json, sys, time
src, mode, graph_path, index_path, out_path = sys.argv[1:6]
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__module__.startswith("_editable")]
sys.path.insert(0, src)
import dumpcmp
if not dumpcmp.__file__.startswith(src):
    raise SystemExit(f"the tree's dumpcmp was not imported: {dumpcmp.__file__}")
from dumpcmp.graph.graph_json import load_graph
from dumpcmp.graph.pairing import DeviceOp, pair_with_ground_truth
out = {}
if mode == "pair":
    with open(index_path, "rb") as f:
        index = json.load(f)
    device = [DeviceOp(name, op_type, n_in, n_out, order=k, ref=name)
              for k, (name, op_type, n_in, n_out) in enumerate(index["device"])]
    truth = {key: key for key in index["truth"]}
t0 = time.thread_time()
graph = load_graph(graph_path)
t1 = time.thread_time()
out["ops"] = len(graph)
out["load_graph_s"] = t1 - t0
if mode == "pair":
    try:  # the collector paused as `dumpcmp compare` pauses it (a tree without dumpcmp.support.gcpause: not)
        from dumpcmp.support.gcpause import paused
    except ImportError:
        import contextlib
        paused = contextlib.nullcontext
    with paused():
        pairs = pair_with_ground_truth(device, truth, graph)
    out["pairing_s"] = time.thread_time() - t1
    out["pairs"] = len(pairs)
    digest = hashlib.sha256()
    for p in pairs:
        digest.update(repr((p.npu_op, p.kind, p.index, p.ground_truth_op, p.ground_truth_ops, p.ground_truth_key,
                            p.ground_truth_ref, str(p.relation), p.origin_shape, p.origin_format,
                            p.origin_data_type, p.graph_op, p.skip_reason, p.note)).encode())
    out["digest"] = digest.hexdigest()
with open(out_path, "w") as f:
    json.dump(out, f)
"""

_CONV_ATTRS = [gj.s("data_format", "NCHW"), gj.i("_fe_imply_type", 6)]


def generate_graph(path: Path, ops: int, seed: int = 0) -> dict:
    """The graph JSON of `ops` operators written to `path` one op at a time; returns the dump index."""
    import random

    rng = random.Random(seed)
    device: list[tuple[str, str, int, int]] = []
    truth: list[str] = []
    previous = None
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"name": "bench_net", "version": 2, "graph": [{"name": "g0", "op": [')
        k = 0
        while len(device) < ops:
            elements = int(2.718281828 ** rng.uniform(7.8, 12.4))
            layout, shape = tensor_shape(k, max(elements, 64))
            device_shape = (list(shape[:1]) + [2] + list(shape[2:]) + [16]) if layout == "NC1HWC0" \
                else [max(shape[1] // 16, 1), shape[0] // 16, 16, 16]
            original = f"model/block{k // 50}/op{k}"
            fused = k % 4 == 3
            name = f"model/block{k // 50}/fused{k}" if fused else original
            out = gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device_shape, origin_name=original,
                          origin_index=0, origin_format=PLAIN[layout], ge_origin_format=PLAIN[layout],
                          origin_shape=shape)
            inputs = [f"{previous}:0"] if previous else []
            op = gj.op(name, "Conv2D", len(device), inputs=inputs, outputs=[out],
                       originals=[f"{original}_bn", original] if fused else gj.ABSENT)
            op["attr"] = op["attr"] + _CONV_ATTRS
            f.write(("" if not device else ", ") + json.dumps(op))
            device.append((name.replace("/", "_"), "Conv2D", len(inputs), 1))
            truth.append(f"{original.replace('/', '_')}.0")
            previous = name
            if k % 3 == 2 and len(device) < ops:  # a layout change the compiler inserted
                trans = f"trans_TransData_{k}"
                op = gj.op(trans, "TransData", len(device), originals=[], inputs=[f"{name}:0"],
                           input_descs=[gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device_shape,
                                                origin_shape=shape, ge_origin_format=PLAIN[layout])],
                           outputs=[gj.desc(dtype="DT_FLOAT16", layout=layout, shape=device_shape,
                                            origin_shape=shape, ge_origin_format=PLAIN[layout])])
                op["attr"].append(gj.s("src_format", layout))
                op["attr"].append(gj.s("dst_format", PLAIN[layout]))
                f.write(", " + json.dumps(op))
                device.append((trans, "TransData", 1, 1))
                previous = trans
            k += 1
        f.write("]}]}")
    return {"device": device, "truth": truth}


def child_command(src: str, mode: str, graph: Path, index: Path, out: Path) -> list[str]:
    return [sys.executable, "-c", _CHILD, os.path.abspath(src), mode, str(graph), str(index), str(out)]


def run_child(src: str, mode: str, graph: Path, index: Path) -> dict:
    """One measured child: wait4's CPU and the sampled peaks, and the child's own figures (a JSON file)."""
    out = index.with_name("child.json")
    figures = measured_run(child_command(src, mode, graph, index, out))
    own = json.loads(out.read_text())
    out.unlink()
    return {**figures, **own}


def median_of(runs: list[dict]) -> dict:
    keys = ("wall_s", "cpu_s", "user_s", "sys_s", "peak_anon_bytes", "peak_rss_bytes", "load_graph_s", "pairing_s")
    out = {k: statistics.median(r[k] for r in runs) for k in keys if k in runs[0]}
    out["runs"] = runs
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=300_000, help="operators in the graph (300,000: about 200 MB)")
    ap.add_argument("--repeats", type=int, default=3, help="children per measurement; the median counts")
    ap.add_argument("--other-src", help="also time the dumpcmp of this source tree (src/ of an older checkout)")
    ap.add_argument("--keep", type=Path, help="generate under this folder and keep it (files there are reused)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    trees = {"this": str(HERE.parent / "src")}
    if args.other_src:
        trees["other"] = args.other_src
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        graph, index = root / f"graph_{args.ops}.json", root / f"index_{args.ops}.json"
        if not (graph.is_file() and index.is_file()):
            index.write_text(json.dumps(generate_graph(graph, args.ops)))
        size = graph.stat().st_size
        print(f"graph JSON: {args.ops} ops, {size / 1e6:.1f} MB")
        results: dict[str, dict] = {}
        for mode in ("parse", "pair"):
            runs: dict[str, list[dict]] = {t: [] for t in trees}
            for _ in range(args.repeats):
                for tree, src in trees.items():  # alternated: the host's speed moves
                    runs[tree].append(run_child(src, mode, graph, index))
            for tree in trees:
                m = results.setdefault(tree, {})[mode] = median_of(runs[tree])
                stages = f"load_graph {m['load_graph_s']:.2f} s" + (
                    f" + pairing {m['pairing_s']:.2f} s" if "pairing_s" in m else "")
                print(f"  {mode:5} {tree:5}: main thread {stages}; child wall {m['wall_s']:.2f} s, CPU "
                      f"{m['cpu_s']:.2f} s (user {m['user_s']:.2f}, sys {m['sys_s']:.2f}), peak anonymous "
                      f"{mib(m['peak_anon_bytes'])}")
            digests = {r["digest"] for t in trees for r in runs[t] if "digest" in r}
            if len(digests) > 1:
                raise SystemExit("the pairs differ between runs or trees")
        if args.json:
            args.json.write_text(json.dumps({"ops": args.ops, "graph_json_bytes": size, "trees": trees,
                                             "results": results}, indent=2))


if __name__ == "__main__":
    main()
