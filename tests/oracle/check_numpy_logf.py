"""native/src/numpy_logf.hpp against this interpreter's np.log on every float32 input (2^32 of them).

    python tests/oracle/check_numpy_logf.py [--chunk-bits 26]

Compiles the header's scalar `numpy_logf` into a small shared library with the C++ compiler (`CXX`, default g++,
`-mfma`), then compares its results with np.log, chunk by chunk, bit for bit (NaN against NaN whatever its sign).
Prints the mismatches and exits 1 if there is one. Run it with the NumPy that made the oracle outputs (1.26.4) and
with CI's: on x86-64 with AVX2+FMA3 or AVX-512F both use the kernel the header reproduces (no mismatch with 1.26.4
and 2.4.6 here, about a minute and a half each). Not part of the test run; test_metrics_exact.cpp and
test_metrics_float32.py pin the same function on chosen arguments.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HEADER = Path(__file__).resolve().parents[2] / "native" / "src" / "numpy_logf.hpp"
SOURCE = """
#include <cstdint>
#include <cstring>
#include "numpy_logf.hpp"
extern "C" void numpy_logf_range(std::uint32_t first, std::uint32_t count, float* out) {
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint32_t b = first + i;
        float x;
        std::memcpy(&x, &b, sizeof x);
        out[i] = dumpcmp::detail::numpy_logf(x);
    }
}
"""


def build(folder: Path) -> ctypes.CDLL:
    src = folder / "numpy_logf_range.cpp"
    src.write_text(SOURCE)
    lib = folder / "libnumpy_logf.so"
    cmd = [os.environ.get("CXX", "g++"), "-std=c++17", "-O2", "-mfma", "-ffp-contract=off", "-shared", "-fPIC",
           f"-I{HEADER.parent}", str(src), "-o", str(lib)]
    subprocess.run(cmd, check=True)
    return ctypes.CDLL(str(lib))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunk-bits", type=int, default=26, help="inputs per chunk, as a power of two")
    args = ap.parse_args()
    chunk = 1 << args.chunk_bits
    mismatches = 0
    with tempfile.TemporaryDirectory() as tmp:
        lib = build(Path(tmp))
        out = np.empty(chunk, np.float32)
        for first in range(0, 1 << 32, chunk):
            x = np.arange(first, first + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
            with np.errstate(all="ignore"):
                want = np.log(x)
            lib.numpy_logf_range(ctypes.c_uint32(first), ctypes.c_uint32(chunk), out.ctypes.data_as(ctypes.c_void_p))
            differ = (want.view(np.uint32) != out.view(np.uint32)) & ~(np.isnan(want) & np.isnan(out))
            n = int(differ.sum())
            for i in np.flatnonzero(differ)[:3]:
                print(f"x = 0x{int(x.view(np.uint32)[i]):08x}: np.log 0x{int(want.view(np.uint32)[i]):08x}, "
                      f"numpy_logf 0x{int(out.view(np.uint32)[i]):08x}")
            mismatches += n
    print(f"NumPy {np.__version__}: {mismatches} mismatches over 2^32 float32 inputs")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
