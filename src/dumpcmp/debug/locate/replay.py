"""Running regions in onnxruntime, many at once: every region of a batch side by side in one model (activations
renamed per job, weights shared), one session per batch, so the cost is close to one run of the original model.
A batch whose merged model onnxruntime refuses is run job by job, so one bad region only fails its own job."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from dumpcmp.support.lazy_numpy import np
from dumpcmp.debug.region import OriginalModel, Region, merged_onnx

__all__ = ["Job", "run_jobs"]


class Job:
    """One replay: `region` fed `feeds` (original tensor name -> array). After `run_jobs`, `outputs` holds the
    region's outputs by original name, or `error` says why not."""

    __slots__ = ("region", "feeds", "outputs", "error")

    def __init__(self, region: Region, feeds: Mapping[str, np.ndarray]) -> None:
        self.region = region
        self.feeds = dict(feeds)
        self.outputs: dict[str, np.ndarray] = {}
        self.error: str | None = None


def _session(model: Any, threads: int) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    # each region must compute what the original graph's nodes compute: no fusion, no constant folding
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    so.enable_cpu_mem_arena = False
    if threads:
        so.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[-1] if text else ''}"[:300]


def run_jobs(model: OriginalModel, jobs: Sequence[Job], threads: int = 0) -> None:
    """Run every job (identity regions in Python, the others in one merged onnxruntime session)."""
    real = []
    for job in jobs:
        if job.region.identity:
            job.outputs = {t: job.feeds[t] for t in job.region.outputs}
        else:
            real.append(job)
    if not real:
        return
    try:
        _run_merged(model, real, threads)
    except Exception:
        if len(real) == 1:
            raise
        for job in real:
            try:
                _run_merged(model, [job], threads)
            except Exception as error:  # one region onnxruntime cannot run: its row says why
                job.error = f"onnxruntime cannot run the region: {_short(error)}"


def _run_merged(model: OriginalModel, jobs: Sequence[Job], threads: int) -> None:
    prefixes = [f"j{k}__" for k in range(len(jobs))]
    types = {}
    feeds: dict[str, np.ndarray] = {}
    for job, prefix in zip(jobs, prefixes):
        for t in job.region.inputs:
            a = job.feeds[t]
            types[prefix + t] = (a.dtype, a.shape)
            feeds[prefix + t] = a
    from onnx import helper

    merged = merged_onnx(model, [j.region for j in jobs], prefixes)
    # each input is typed by its job's own array (what the device gave, decoded), not by the original model
    for vi in merged.graph.input:
        dtype, shape = types[vi.name]
        vi.CopyFrom(helper.make_tensor_value_info(vi.name, helper.np_dtype_to_tensor_dtype(dtype), list(shape)))
    names = [p + t for j, p in zip(jobs, prefixes) for t in j.region.outputs]
    session = _session(merged, threads)
    values = session.run(names, feeds)
    k = 0
    for job in jobs:
        job.outputs = {}
        for t in job.region.outputs:
            job.outputs[t] = np.asarray(values[k])
            k += 1
