"""`dumpcmp golden --format sigmastar`: the ground truth also as SigmaStar's `onnx_NHWC_outtensor_dump.bin`, the
file the SDK's `onnx_dump_data.py --dump_bin True` writes (isFloat 1, float32 payloads, 4-D tensors in NHWC as the
SigmaStar model holds them), so `auto_dump_debug.sh` and `dumpcmp compare -l sigma_outtensor_dump.bin -r ...`
take it as the benchmark.

In: a finished `GoldenRun` (its .npy files and index). Out: the dump beside them, written through
dumps/sigmastar.py's writer (atomic; an existing file replaced only with `force`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dumpcmp.dumps.ground_truth import load_npy
from dumpcmp.dumps.sigmastar import TensorSpec, write_sigmastar_dump
from dumpcmp.support.lazy_numpy import np

__all__ = ["SIGMASTAR_GOLDEN_NAME", "write_sigmastar_golden"]

SIGMASTAR_GOLDEN_NAME = "onnx_NHWC_outtensor_dump.bin"


def _specs(run: Any, skipped: list[str]) -> Iterator[TensorSpec]:
    for k, rec in enumerate(r for r in run.records if r.file):
        array = load_npy(Path(run.out_dir) / rec.file)
        if array.ndim == 0 or array.dtype.kind not in "biuf" and array.dtype.name not in ("bfloat16",):
            skipped.append(rec.tensor_name or rec.op_name)
            continue
        if array.ndim == 4:
            array = array.transpose(0, 2, 3, 1)
        yield TensorSpec(rec.tensor_name or rec.op_name, np.asarray(array, dtype=np.float32), rec.op_type or "OP",
                         k)


def write_sigmastar_golden(run: Any, *, force: bool = False) -> tuple[Path, list[str]]:
    """Write `run.out_dir/onnx_NHWC_outtensor_dump.bin` from the run's .npy files, one `//out 0` tensor per written
    record in order (`op_out[k] {op_type} = {`, name: the ONNX tensor name). Scalars (0-d, which the SDK's script
    does not dump either) and non-numeric tensors are left out; their names are returned."""
    skipped: list[str] = []
    path = write_sigmastar_dump(Path(run.out_dir) / SIGMASTAR_GOLDEN_NAME, _specs(run, skipped), is_float=True,
                                trailer="", force=force)
    return path, skipped
