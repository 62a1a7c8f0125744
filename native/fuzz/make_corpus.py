"""Write the fuzzers' seed corpus (native/fuzz/corpus/{dump,layout,graph}/) and the regression inputs of the issue's
crashes (native/fuzz/regressions/): small files, regenerated with `python native/fuzz/make_corpus.py`.

Layout inputs are read by targets.hpp's layout_target: byte 0 picks a supported (device, plain) pair, 1 the element
size, 2 the groups, 3 the rank, 4 the C0, then the plain dims, a window, and a raw device shape."""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests"))

from helpers import graphjson as gj  # noqa: E402
from helpers.hostile import broken_dumps  # noqa: E402

from dumpcmp.dumps import layout  # noqa: E402


def layout_seed(device: str, plain: str, dims: list[int], elem_log2: int = 1, groups: int = 1, c0: int = 0,
                tail: bytes = b"\x03\x05") -> bytes:
    pairs = layout.supported_pairs()
    k = next(i for i, (a, b) in enumerate(pairs) if (a, b) in ((device, plain), (plain, device)))
    return bytes([k, elem_log2, groups - 1, len(dims) - 1, c0]) + bytes(dims) + tail


def graph_seeds() -> dict[str, bytes]:
    """Graph JSON documents in the shapes real files have (the C++ reader takes them) and a few it gives up on."""
    out = gj.desc(origin_name="a", origin_index=0, origin_format="NCHW", origin_shape=(1, 16, 4, 4))
    out["attr"].append({"key": "t", "value": {"t": {"desc": {"dtype": "DT_FLOAT"}, "n": [1, 2.5, None, True]}}})
    conv = gj.op("b", "Conv2D", 1, inputs=["a:0", "", "c:-1"], originals=["x", "y"], outputs=[out],
                 input_descs=[gj.desc()], l1="3", multiop=True)
    conv["attr"] += [gj.i("n", "-12"), {"key": "f", "value": {"f": "0.05"}},
                     {"key": "lf", "value": {"list": {"f": [1, 2.5]}}}, {"key": "ldt", "value": {"list": {"dt": [1]}}},
                     {"key": "esc", "value": {"s": "\u00e9\\\"\U0001F600"}}]
    doc = gj.document(gj.op("a", "Data", 0), conv, gj.op("t", "TransData", 2, inputs=["b:0"], originals=[]))
    text = json.dumps(doc)
    return {
        "model": text.encode(),
        "model_indented": json.dumps(doc, indent=2, ensure_ascii=False).encode(),
        "one_graph_object": json.dumps({"graph": {"op": [gj.op("x", "Relu", 0)]}}).encode(),
        "bom": b"\xef\xbb\xbf" + text.encode(),
        "surrogate": text.replace('"Data"', '"\\ud800"').encode(),
        "deep": b'{"graph": [], "x": ' + b"[" * 300 + b"]" * 300 + b"}",
        "long_number": text.replace('"id": 0', '"id": 12345678901234567890').encode(),
    }


def main() -> None:
    seeds = {
        "dump": {name: data for name, data in broken_dumps().items() if not name.startswith(("overflow", "zero",
                                                                                              "dims_70"))},
        "graph": graph_seeds(),
        "layout": {
            "5hd_nchw": layout_seed("NC1HWC0", "NCHW", [1, 20, 3, 3]),
            "5hd_nhwc": layout_seed("NC1HWC0", "NHWC", [2, 3, 3, 17]),
            "fz_nchw": layout_seed("FRACTAL_Z", "NCHW", [17, 5, 3, 3]),
            "fz_grouped": layout_seed("FRACTAL_Z", "NCHW", [8, 3, 3, 3], groups=4),
            "nz_nd": layout_seed("FRACTAL_NZ", "ND", [2, 17, 33]),
            "c04": layout_seed("NC1HWC0_C04", "NCHW", [1, 3, 5, 5], c0=1),
            "fz3d": layout_seed("FRACTAL_Z_3D", "NCDHW", [4, 3, 2, 3, 3]),
            "ndc1": layout_seed("NDC1HWC0", "NCDHW", [1, 20, 2, 3, 3], elem_log2=2),
        },
    }
    regressions = {
        # issue 13: a shape whose byte size wraps to 0 passed the size check (SIGSEGV in device-vs-device compare)
        "dump": {name: data for name, data in broken_dumps().items()
                 if name.startswith(("overflow", "zero", "dims_70"))},
        # issue 13: a zero-size dimension divided by zero in the chunking (SIGFPE)
        "layout": {
            "zero_dim_5hd": layout_seed("NC1HWC0", "NCHW", [8, 14, 16, 0]),
            "zero_dim_nz": layout_seed("FRACTAL_NZ", "ND", [0, 16]),
            "zero_dim_fz": layout_seed("FRACTAL_Z", "NCHW", [0, 3, 3, 3]),
            "zero_c_fz": layout_seed("FRACTAL_Z", "NCHW", [4, 0, 3, 3]),
        },
    }
    for folder, sets in (("corpus", seeds), ("regressions", regressions)):
        for target, files in sets.items():
            out = HERE / folder / target
            out.mkdir(parents=True, exist_ok=True)
            for name, data in files.items():
                (out / name).write_bytes(data)


if __name__ == "__main__":
    main()
