"""A small sample dump tree the package writes on request, so `dumpcmp info` (and later commands) can be tried on
a machine without an accelerator. The full end-to-end demo (`dumpcmp demo`) builds on the same idea with a real
ONNX model.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from dumpcmp.support.files import atomic_write
from dumpcmp.dumps.dump import TensorData, write_dump

SAMPLE_TIME = "20261121120000"
SAMPLE_MODEL = "sample_net"


def make_sample_tree(out_dir: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write `{out}/{time}/0/sample_net/1/0/` with a handful of device dumps (fp16, NCHW/ND) and
    `{out}/ground_truth/` with the matching fp32 `.npy` files. Returns the device-side iteration folder."""
    rng = np.random.default_rng(seed)
    out = Path(out_dir)
    device = out / SAMPLE_TIME / "0" / SAMPLE_MODEL / "1" / "0"
    truth = out / "ground_truth"
    device.mkdir(parents=True, exist_ok=True)
    truth.mkdir(parents=True, exist_ok=True)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * np.float32(0.3)
    conv = np.zeros((1, 4, 6, 6), np.float32)
    for i in range(6):
        for j in range(6):
            conv[0, :, i, j] = np.tensordot(w, x[0, :, i:i + 3, j:j + 3], axes=([1, 2, 3], [0, 1, 2]))
    relu = np.maximum(conv, 0)
    flat = relu.reshape(1, -1)
    fc_w = rng.standard_normal((flat.shape[1], 10)).astype(np.float32) * np.float32(0.05)
    logits = flat @ fc_w
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    ops = [  # (op_type, op_name, inputs, outputs)
        ("Conv2D", "conv1", [x, w], [conv]),
        ("Relu", "relu1", [conv], [relu]),
        ("MatMulV2", "fc1", [flat, fc_w], [logits]),
        ("Softmax", "prob", [logits], [probs]),
    ]
    t0 = 1763726400000000
    for task, (op_type, name, ins, outs) in enumerate(ops):
        ts = t0 + 1000 * task
        fmt = lambda a: "NCHW" if a.ndim == 4 else "ND"  # noqa: E731
        write_dump(
            device / f"{op_type}.{name}.{task + 1}.{ts}",
            op_name=name,
            dump_time=ts,
            inputs=[TensorData(a.astype(np.float16), format=fmt(a), original_shape=a.shape) for a in ins],
            outputs=[TensorData(a.astype(np.float16), format=fmt(a), original_shape=a.shape) for a in outs],
        )
        for i, a in enumerate(outs):
            atomic_write(truth / f"{name}.{i}.{ts}.npy", lambda f, a=a: np.save(f, a, allow_pickle=False))
    return device
