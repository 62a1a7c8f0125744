"""Mutated dumps through dumpcmp's public entry points: open_dump and every field `info` shows, each tensor's
array, what `dumpcmp info` prints (text and JSON) through stdio as strict as an en_US.UTF-8 locale makes it (C.UTF-8
would hide a name that is not UTF-8), layout.convert of device layouts, the model-level compare (device against
itself) and the element-level detail export. Each call either succeeds or raises `DumpcmpError`; anything else
(another exception, a signal, a case slower than --slow seconds) is a finding, and its input is kept in --keep.

    python tests/hostile/fuzz_harness.py --cases 100000 --seed 1 --keep fuzz-findings     # a long run
    python tests/hostile/fuzz_harness.py --replay fuzz-findings/case-123.dump             # one input again

The input of the case being run is written to --work before it runs, so a crash leaves it there (the test in
tests/hostile/test_fuzz.py reads it back and names it).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, for helpers
from helpers.dumpproto import DumpData, current_format  # noqa: E402
from helpers.hostile import DUMP_NAME, broken_dumps  # noqa: E402

from dumpcmp import DumpcmpError, open_dump  # noqa: E402
from dumpcmp.dumps import layout

INTERESTING = [0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 255, 256, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**64 - 1]


def seeds() -> list[bytes]:
    """Valid dumps in the layouts and types the device writes, plus the broken corpus."""
    out = [d for d in broken_dumps().values() if d]
    rng = np.random.default_rng(5)
    for device, plain, shape, dtype, np_dtype in [
        (3, "NCHW", (1, 20, 3, 3), 2, np.float16),    # NC1HWC0 fp16
        (29, "ND", (17, 33), 2, np.float16),          # FRACTAL_NZ
        (4, "NCHW", (17, 5, 3, 3), 2, np.float16),    # FRACTAL_Z
        (3, "NCHW", (1, 3, 4, 4), 3, np.int8),        # NC1HWC0 int8
        (0, "NCHW", (1, 3, 4, 4), 1, np.float32),
    ]:
        plain_array = rng.standard_normal(shape).astype(np_dtype) if np_dtype != np.int8 else \
            rng.integers(-100, 100, shape, dtype=np.int8)
        name = {3: "NC1HWC0", 29: "FRACTAL_NZ", 4: "FRACTAL_Z", 0: "NCHW"}[device]
        dev = layout.convert(plain_array, plain, name) if device else plain_array
        m = DumpData()
        m.version, m.op_name = "2.0", "conv1"
        o = m.output.add()
        o.data_type, o.format = dtype, device
        o.shape.dim.extend(dev.shape)
        o.original_shape.dim.extend(shape)
        o.size = dev.nbytes
        out.append(current_format(m, [dev.tobytes()]))
    return out


def mutate_bytes(data: bytes, r: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(r.choice([1, 1, 2, 4, 8])):
        op = r.randrange(8)
        if not b:
            b += bytes([r.randrange(256)])
            continue
        i = r.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << r.randrange(8)
        elif op == 1:
            b[i] = r.choice([0, 1, 0x7F, 0x80, 0xFF])
        elif op == 2:
            b[i:i] = bytes(r.randrange(256) for _ in range(r.randrange(1, 9)))
        elif op == 3:
            del b[i:i + r.randrange(1, 17)]
        elif op == 4:
            b = b[:i]
        elif op == 5:
            j = r.randrange(len(b))
            b[i:i] = b[j:j + r.randrange(1, 33)]
        elif op == 6 and len(b) >= 8:
            b[:8] = r.choice(INTERESTING + [len(b) - 8, len(b)]).to_bytes(8, "little", signed=False)
        else:
            b[i:i + 10] = b"\xff" * 9 + b"\x01"  # the longest varint
    return bytes(b)


def mutate_fields(data: bytes, r: random.Random) -> bytes | None:
    """Structure-aware: a header field set to an interesting value, the data kept (sizes then often still add up)."""
    if len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    if n > len(data) - 8:
        return None
    m = DumpData()
    try:
        m.ParseFromString(data[8:8 + n])
    except Exception:  # noqa: BLE001 - not a header protobuf accepts: byte-level mutations instead
        return None
    tensors = list(m.output) + list(m.input)
    if not tensors:
        return None
    t = r.choice(tensors)
    field = r.randrange(6)
    if field == 0:
        dims = list(t.shape.dim) or [1]
        dims[r.randrange(len(dims))] = r.choice(INTERESTING)
        if r.random() < 0.2:
            dims = dims + [r.choice([0, 1, 2])] * r.randrange(1, 70)
        del t.shape.dim[:]
        t.shape.dim.extend(dims)
    elif field == 1:
        t.data_type = r.choice(list(range(-1, 45)) + [2**31 - 1])
    elif field == 2:
        t.format = r.choice(list(range(-1, 51)) + [255, 2**31 - 1])
    elif field == 3:
        t.size = r.choice(INTERESTING)
    elif field == 4:
        dims = [r.choice([0, 1, 2, 3, 16, 17, 2**62]) for _ in range(r.randrange(0, 7))]
        del t.original_shape.dim[:]
        t.original_shape.dim.extend(dims)
    else:
        m.op_name = r.choice(["", "a" * 300, "../../x", "a/b", "-d", "\n", "é"])
    head = m.SerializeToString()
    return len(head).to_bytes(8, "little") + head + data[8 + n:]


def mutate(data: bytes, r: random.Random) -> bytes:
    if r.random() < 0.5:
        out = mutate_fields(data, r)
        if out is not None:
            return out
    return mutate_bytes(data, r)


def _plain_target(fmt: str, shape: tuple[int, ...]) -> str:
    return "ND" if fmt == "FRACTAL_NZ" else ("NCDHW" if fmt in ("NDC1HWC0", "FRACTAL_Z_3D") else "NCHW")


STATS = {"opened": 0, "printed": 0, "arrays": 0, "converted": 0, "compared": 0, "detailed": 0}


def strict_cli(argv: list[str]) -> int:
    """`dumpcmp ARGV` in this process with stdout and stderr as a strict UTF-8 locale (en_US.UTF-8) makes them:
    errors='strict', where C.UTF-8 would write any byte (surrogateescape). Raises whatever the command raises."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from dumpcmp.cli import main as cli_main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(argv)
        out.flush()
        err.flush()
    if code not in (0, 2) or b"Traceback" in err.buffer.getvalue():
        raise AssertionError(f"dumpcmp {' '.join(argv)}: exit {code}: {err.buffer.getvalue()[-1000:]!r}")
    return code


def run_case(path: Path, work: Path, k: int) -> None:
    """Every entry point on the dump at `path`; raises anything that is not a DumpcmpError."""
    try:
        d = open_dump(path)
    except DumpcmpError:
        return
    STATS["opened"] += 1
    repr(d)
    if k % 2 == 0:  # what `info` prints, through stdio as strict as en_US.UTF-8's
        for argv in (["info", str(path)], ["info", "--json", str(path)]):
            strict_cli(argv)
        STATS["printed"] += 1
    for t in d.tensors():
        json.dumps(t.to_dict(), default=str)
        repr(t)
        if t.problem():
            continue
        try:
            a = t.array()
            if a.size < 1 << 20 and a.dtype.kind in "biuf":
                float(np.asarray(a, dtype=np.float64).sum())
        except DumpcmpError:
            continue
        STATS["arrays"] += 1
        if t.format in layout.DEVICE_FORMATS:
            for padded in (False, True):
                try:
                    layout.convert(a, t.format, _plain_target(t.format, t.shape),
                                   original_shape=None if padded else t.original_shape, padded=padded)
                    STATS["converted"] += 1
                except DumpcmpError:
                    pass
    if k % 8 == 0:  # the model-level compare of the device side against itself (the core's engine)
        from dumpcmp import compare
        try:
            compare(path.parent, path.parent, quiet=True, threads=1)
            STATS["compared"] += 1
        except DumpcmpError:
            pass
    if k % 16 == 0:  # one tensor element by element, to files
        from dumpcmp.comparison.single_op import compare_op
        out = work / "detail"
        shutil.rmtree(out, ignore_errors=True)
        try:
            compare_op(path.parent, path.parent, "conv1", out, threads=1, max_lines=100)
            STATS["detailed"] += 1
        except DumpcmpError:
            pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=None, help="folder for the case being run (default: a temporary one)")
    p.add_argument("--keep", default=None, help="folder to keep findings in")
    p.add_argument("--slow", type=float, default=10.0, help="seconds after which a case counts as a hang")
    p.add_argument("--replay", default=None, help="run one input file and exit")
    args = p.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="dumpcmp-fuzz-"))
    (work / "dump").mkdir(parents=True, exist_ok=True)
    target = work / "dump" / DUMP_NAME
    if args.replay:
        target.write_bytes(Path(args.replay).read_bytes())
        run_case(target, work, 0)
        return 0
    r = random.Random(args.seed)
    pool = seeds()
    findings: list[dict[str, object]] = []
    start = time.monotonic()
    slowest = 0.0
    for k in range(args.cases):
        data = mutate(r.choice(pool), r)
        if r.random() < 0.3:
            data = mutate(data, r)
        (work / "current").write_bytes(data)
        target.write_bytes(data)
        t0 = time.monotonic()
        try:
            run_case(target, work, k)
            problem = None
        except Exception:  # noqa: BLE001 - that is what we are looking for
            problem = traceback.format_exc()
        took = time.monotonic() - t0
        slowest = max(slowest, took)
        if problem is None and took > args.slow:
            problem = f"took {took:.1f} s"
        if problem is not None:
            findings.append({"case": k, "problem": problem[-2000:]})
            if args.keep:
                Path(args.keep).mkdir(parents=True, exist_ok=True)
                (Path(args.keep) / f"case-{k}.dump").write_bytes(data)
    json.dump({"cases": args.cases, "findings": findings, "seconds": round(time.monotonic() - start, 1),
               "slowest": round(slowest, 3), **STATS}, sys.stdout)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
