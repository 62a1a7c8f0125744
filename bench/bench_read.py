"""Reading a big tensor through the mapping, against a plain memory read measured in the same run.

    python bench/bench_read.py --size 1GB [--json out.json]

Measures, on page-cached data (the file is written first and read once to warm the cache):
  * open: parsing the header of the dump (no tensor bytes touched)
  * mapped read: one pass over the tensor's bytes through the zero-copy array (C++ read loop, all threads)
  * memory read (baseline): the same loop over an in-memory copy of the same bytes
  * decode bf16 -> float32 in C++ (all threads) against a NumPy memcpy of the output size
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

import numpy as np

import dumpcmp
from dumpcmp import TensorData
from dumpcmp.support.native import core
from dumpcmp.benchmark.common import machine_info, parse_size, time_runs


def best_of(fn, repeat: int = 5) -> float:
    return time_runs(fn, repeat, warmup=False).best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GB")
    ap.add_argument("--json")
    args = ap.parse_args()
    nbytes = parse_size(args.size) // 8 * 8
    results: dict[str, object] = {
        "machine": machine_info(),
        "bytes": nbytes,
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "Conv2D.big.1.1700000000000000")
        data = np.random.default_rng(0).integers(0, 2**16, nbytes // 2, dtype=np.uint16)
        dumpcmp.write_dump(path, outputs=[TensorData(data.view(np.float16))])
        with open(path, "rb") as f:  # warm the page cache
            while f.read(1 << 24):
                pass
        in_memory = data.view(np.uint8)

        t_open = best_of(lambda: dumpcmp.open_dump(path))
        d = dumpcmp.open_dump(path)
        mapped = d.outputs[0].raw()  # the tensor's bytes in the mapping (unaligned: they follow the header)
        # the same C++ read loop (all threads) over the mapping and over an in-memory copy of the same bytes
        t_mapped = best_of(lambda: core.metrics.read_probe(mapped, 0))
        t_memory = best_of(lambda: core.metrics.read_probe(in_memory, 0))
        assert core.metrics.read_probe(mapped, 0) == core.metrics.read_probe(in_memory, 0)

        n = nbytes // 2
        out = np.empty(n, np.float32)
        src = np.ones(n, np.float32)
        t_decode = best_of(lambda: core.dtype.decode("BF16", data.view(np.uint8), n), repeat=3)
        t_copy = best_of(lambda: np.copyto(out, src), repeat=3)
        mapped = d = None  # the mapping closed

    gbs = lambda b, t: b / t / 1e9  # noqa: E731
    results.update({
        "open_header_us": t_open * 1e6,
        "mapped_read_GBps": gbs(nbytes, t_mapped),
        "memory_read_GBps": gbs(nbytes, t_memory),
        "mapped_vs_memory": t_memory / t_mapped,
        "bf16_decode_GBps_out": gbs(4 * n, t_decode),
        "memcpy_GBps_same_out": gbs(4 * n, t_copy),
        "threads": core.num_threads(),
    })
    print(f"tensor: {nbytes / 2**20:.0f} MiB fp16, page-cached, {core.num_threads()} threads")
    print(f"  open (header only)         {t_open * 1e6:9.1f} us")
    print(f"  mapped read                {results['mapped_read_GBps']:9.2f} GB/s")
    print(f"  memory read (baseline)     {results['memory_read_GBps']:9.2f} GB/s   "
          f"mapped/memory = {results['mapped_vs_memory']:.2f}")
    print(f"  bf16 -> fp32 decode        {results['bf16_decode_GBps_out']:9.2f} GB/s written")
    print(f"  memcpy of the same output  {results['memcpy_GBps_same_out']:9.2f} GB/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
