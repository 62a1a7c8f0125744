"""`dumpcmp locate --cluster`: the replay batches run by a Dask cluster's workers, with the rows of a local run.

In: the units `dumpcmp.debug.locate.core` plans on this machine (which original nodes each device op stands for, its
regions, which dumped tensors feed it), cut into the same batches as a local run (`replay_batches`). Each batch
travels as the units without their dumps' opened headers (`travelling_units`); a worker loads the original model
from the same path (once per worker, while the file is unchanged), opens the dumps, decodes, replays in onnxruntime
and measures (`replay_units`), and sends back only the rows. Out: every unit's row, measured where it ran; a batch the
cluster could not run leaves its rows `not replayed` with the reason. The verdicts are drawn afterwards, here, as in a
local run.

The model, the dumps and the ground truth must be at the same paths on the workers (shared storage): the planning
reads the dumps' headers on this machine, so `-l HOST=PATH` roots that only the workers see are refused.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

from dumpcmp.comparison.cluster import Cluster, Task, run_tasks, threads_by_host, worker_threads
from dumpcmp.debug.locate.core import replay_batches, replay_units, travelling_units
from dumpcmp.debug.region import OriginalModel

__all__ = ["replay_on_cluster", "replay_batch"]

_LOCK = threading.Lock()
_MODELS: dict[tuple[str, int, int], OriginalModel] = {}  # on a worker: the last model loaded, by path and stat


def _model(path: str) -> OriginalModel:
    st = os.stat(path)
    key = (path, st.st_size, st.st_mtime_ns)
    with _LOCK:
        om = _MODELS.get(key)
        if om is None:
            _MODELS.clear()
            om = _MODELS[key] = OriginalModel.load(path)
    return om


def replay_batch(model: str, travelled: list, own_metrics: Sequence[int],
                 threads: int | dict[str, int]) -> tuple[str, list]:
    """A task: one batch replayed on the worker that runs it; (this worker's address, the batch's rows)."""
    from distributed import get_worker

    rows = replay_units(_model(model), travelled, own_metrics, worker_threads(threads))
    return str(get_worker().address), rows


def replay_on_cluster(client: Any, om: OriginalModel, units: Sequence[Any], own_metrics: Sequence[int],
                      batch_bytes: int, threads: int, label: str, quiet: bool) -> list[str]:
    """Replay `units` (core's, planned here) on the cluster, their rows put in place; the workers that replayed them.
    `client`: a distributed Client or a `dumpcmp.comparison.cluster.Cluster`; `threads`: onnxruntime threads per
    task (0: each host's cores shared among the worker threads on it)."""
    if om.path is None:
        from dumpcmp.errors import ConfigError

        raise ConfigError("locate on a cluster needs the model as a file path the workers read")
    bare = client.client if isinstance(client, Cluster) else client
    engine_threads: int | dict[str, int] = threads if threads > 0 else threads_by_host(bare)
    batches = replay_batches(om, units, batch_bytes)
    tasks = [Task((os.path.abspath(om.path), travelling_units(b), tuple(own_metrics), engine_threads), weight=len(b))
             for b in batches]
    hosts: set[str] = set()
    for batch, (ok, value) in zip(batches, run_tasks(client, replay_batch, tasks, label, quiet,
                                                     name="dumpcmp-locate")):
        if ok:
            address, rows = value
            hosts.add(address)
            for unit, row in zip(batch, rows):
                unit.row = row
        else:
            for unit in batch:
                unit.row.note = value
    return sorted(hosts)
