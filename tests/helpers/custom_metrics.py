"""Custom algorithm plug-ins (`compare -c DIR -alg Name`) for the tests of extra metric columns, and what NumPy says
their values are on a `helpers.reportmodel.Chain`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dumpcmp import open_dump

from helpers.reportmodel import TS, Chain

SUMSQ = ("import numpy as np\n"
         "def compare(x, y, args):\n"
         "    d = x.astype(np.float64) - y.astype(np.float64)\n"
         "    return '%.6f' % (float(np.sum(d * d)) * float(getattr(args, 'scale', '1'))), ''\n")
# fails on one layer only: its cell is NaN and the row's CompareFailReason says why
PICKY = ("def compare(x, y, args):\n"
         "    if abs(float(y[0]) - float(args.first)) < 1e-6:\n"
         "        raise ValueError('picky does not like this layer')\n"
         "    return '1.5', ''\n")


def plugins(folder: Path, files: dict[str, str]) -> Path:
    (folder / "algorithm").mkdir(parents=True)
    for name, text in files.items():
        (folder / "algorithm" / name).write_text(text, encoding="utf-8")
    return folder


def expected_sumsq(chain: Chain, k: int) -> float:
    """op k's output: the device tensor (float16 in the dump) against its float32 ground truth, in NumPy."""
    dev = open_dump(chain.dev / f"{chain.types[k]}.op{k}.{k + 1}.{TS + k + 1}").outputs[0].array()
    gt = np.load(chain.gt / f"op{k}.0.{TS + k + 1}.npy")
    d = dev.astype(np.float64).ravel() - gt.astype(np.float32).astype(np.float64).ravel()
    return float(np.sum(d * d))
