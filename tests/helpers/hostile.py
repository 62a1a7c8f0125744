"""Broken and hostile inputs for the walk over every subcommand (tests/hostile/test_hostile.py) and the fuzz harness.

Everything is generated in a folder given by the caller; nothing binary is committed. `corpus(root)` returns the
paths by role: device dumps (each alone in a folder named like a device dump tree), ground-truth folders, JSON files,
ONNX-ish files.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from helpers.dumpproto import DumpData, current_format

DUMP_NAME = "Conv2D.conv1.3.1700000000000000"
GT_NAME = "conv1.0.1700000000000000.npy"
MARK = b"OPNAMEXX"  # placeholder replaced by raw bytes that are not UTF-8


def dump_bytes(shape=(1, 2, 2, 2), dtype=1, fmt=0, size=None, payload=None, op_name="conv1",
               original_shape=None, with_input=True) -> bytes:
    """A current-format dump of one output (and one input of the same data) built with protobuf itself."""
    m = DumpData()
    m.version = "2.0"
    m.op_name = op_name
    count = int(np.prod(shape, dtype=object)) if shape else 1
    if payload is None:
        itemsize = {1: 4, 2: 2, 3: 1}.get(dtype, 4)  # FLOAT, FLOAT16, INT8
        payload = b"" if count > 1 << 16 else np.arange(count, dtype=np.float32).tobytes()[: count * itemsize]
    o = m.output.add()
    o.data_type, o.format = dtype, fmt
    o.shape.dim.extend(int(d) for d in shape)
    o.size = len(payload) if size is None else size
    if original_shape is not None:
        o.original_shape.dim.extend(original_shape)
    payloads = [payload]
    if with_input:
        i = m.input.add()
        i.data_type, i.format = dtype, fmt
        i.shape.dim.extend(int(d) for d in shape)
        i.size = o.size
        payloads.insert(0, payload)
    return current_format(m, payloads)


def npy_header(shape_text: str, descr: str = "<f4") -> bytes:
    header = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)).encode("latin1")
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header


def broken_dumps() -> dict[str, bytes]:
    good = dump_bytes()
    not_utf8 = dump_bytes(op_name=MARK.decode())
    not_utf8 = not_utf8.replace(MARK, b"\xff\xfe\x80op\xc3(\x00")
    return {
        "good": good,
        "empty": b"",
        "one_byte": b"\x01",
        "header_past_end": (1 << 40).to_bytes(8, "little") + b"\x0a\x03abc",
        "header_max": b"\xff" * 8 + b"junk",
        "truncated": good[: len(good) - 5],
        "extra_bytes": good + b"\x00" * 7,
        "garbage": bytes(np.random.default_rng(13).integers(0, 256, 1000, dtype=np.uint8)),
        "overflow_shape": dump_bytes(shape=(2**62, 2), dtype=3, size=0, payload=b""),  # INT8: 2**63 bytes wrap
        "overflow_shape_fp16": dump_bytes(shape=(2**62, 4), dtype=2, size=0, payload=b""),
        "zero_dim": dump_bytes(shape=(8, 14, 16, 0), dtype=2, payload=b""),
        "zero_dim_5hd": dump_bytes(shape=(1, 0, 2, 2, 16), dtype=2, fmt=3, payload=b"", original_shape=(1, 0, 2, 2)),
        "zero_dim_nz": dump_bytes(shape=(0, 1, 16, 16), dtype=2, fmt=29, payload=b"", original_shape=(16, 0)),
        "dims_70": dump_bytes(shape=(1,) * 70, payload=b"\x00\x00\x80\x3f"),
        "undefined_dtype": dump_bytes(dtype=0, payload=b"\x00" * 32),
        "not_utf8_name": not_utf8,
        "unknown_dtype": dump_bytes(dtype=99),
        "unknown_format": dump_bytes(fmt=77),
        "size_lies": dump_bytes(size=4),
        "fractal_z_bad": dump_bytes(shape=(3, 1, 16, 16), dtype=2, fmt=4, payload=b"\x00" * (3 * 16 * 16 * 2)),
    }


def broken_npys() -> dict[str, bytes]:
    good = npy_header("(1, 2, 2, 2)") + np.arange(8, dtype=np.float32).tobytes()
    return {
        "good": good,
        "empty": b"",
        "tib_claim": npy_header("(1099511627776,)", "<f4") + b"\x00" * 16,
        "bad_magic": b"\x93NUMPX\x01\x00" + good[8:],
        "truncated": good[:-3],
        "pickle": npy_header("(1,)", "|O") + b"\x80\x04N.",
        "header_len_huge": b"\x93NUMPY\x02\x00" + (1 << 31).to_bytes(4, "little") + b"{",
        "bad_header": b"\x93NUMPY\x01\x00\x10\x00" + b"__import__('os')",
        "zero_dim": npy_header("(8, 14, 16, 0)"),
    }


def broken_jsons() -> dict[str, bytes]:
    return {
        "deep_list": b"[" * 200_000 + b"]" * 200_000,
        "deep_dict": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
        "bom": b"\xef\xbb\xbf" + b'{"dump": {"dump_list": [], "dump_path": "x"}}',
        "not_utf8": b'{"\xff\xfe": 1}',
        "huge_number": b'{"graph": [{"op": [{"name": 1e99999}]}]}',
        "not_object": b"5",
        "empty": b"",
        "nul": b"\x00\x00",
    }


def _one_per_folder(parent: Path, file_name: str, contents: dict[str, bytes], folders: list[Path],
                    files: list[Path]) -> None:
    """Each content as `parent/NAME/file_name`; the folders and files appended to the lists given."""
    for name, data in contents.items():
        folder = parent / name
        folder.mkdir(parents=True)
        (folder / file_name).write_bytes(data)
        folders.append(folder)
        files.append(folder / file_name)


def corpus(root: Path) -> dict[str, list[Path]]:
    """Write every broken input under `root`; returns lists of paths by role."""
    root = Path(root)
    out: dict[str, list[Path]] = {"dump_dirs": [], "dumps": [], "gt_dirs": [], "npys": [], "jsons": [],
                                  "models": []}
    _one_per_folder(root / "dev", DUMP_NAME, broken_dumps(), out["dump_dirs"], out["dumps"])
    odd = root / "dev" / "odd"
    (odd / DUMP_NAME).mkdir(parents=True)  # a folder where a dump file belongs
    os.symlink("loop", odd / "loop")
    os.symlink(odd / "loop", odd / "Conv2D.conv2.4.1700000000000001")  # a symlink loop named like a dump
    out["dump_dirs"].append(odd)
    _one_per_folder(root / "gt", GT_NAME, broken_npys(), out["gt_dirs"], out["npys"])
    for name, data in broken_jsons().items():
        path = root / "json" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out["jsons"].append(path)
    for name, data in {"empty": b"", "garbage": b"\x08\x01\x12\xff\xff\xff\xff\x0f", "text": b"not a model"}.items():
        path = root / "models" / f"{name}.onnx"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        out["models"].append(path)
    return out
