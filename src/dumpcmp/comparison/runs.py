"""Runs: the left tree's runs (device, model, iteration) selected, each with its ground truth (a sample folder, or
the right-hand run of a device-vs-device comparison) and its tensors paired (`paired_runs`): what a model-level or a
single-operator comparison starts from.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from dumpcmp.comparison.sources import DeviceTruth, device_ops, slice_notes
from dumpcmp.dumps.ground_truth import keys_by_index
from dumpcmp.dumps.scan import DumpGroup, DumpIndex, GroundTruthIndex, scan
from dumpcmp.errors import ConfigError, NotFoundError
from dumpcmp.graph.graph_json import Graph, load_graph, merge_close_fusion
from dumpcmp.graph.pairing import DeviceOp, TensorPair, pair_device_to_device, pair_with_ground_truth

__all__ = ["PairedRun", "paired_runs", "sample_ground_truth", "select_runs"]


def select_runs(index: DumpIndex, selection: dict[str, Any], side: str = "left") -> list[DumpGroup]:
    """The runs of a scanned tree that the selection (time, device_id, model_name, model_id, data_index; None:
    any) names; every run when it names none; an error listing the runs when none matches."""
    groups = index.find(**selection) if any(v is not None for v in selection.values()) else list(index)
    if not groups:
        runs = ", ".join(g.key.describe() for g in index) or "none"
        raise NotFoundError(f"{index.root}: no {side} dump run matches the selection (runs: {runs})")
    return groups


@dataclass
class PairedRun:
    """One run of the left tree with its tensors paired: what a model-level or a single-operator comparison
    starts from."""

    run: str
    pairs: list[TensorPair]
    device_vs_device: bool
    graph: Graph | None = None
    notes: list[str] = field(default_factory=list)
    """How the ground truth was chosen, when that needs saying (samples, several candidates)."""
    device_truth: bool = False
    """The ground truth is another device dump paired through the graph (`-cf`): `DeviceTruth` refs."""


def sample_ground_truth(data_index: int | None, gt: GroundTruthIndex, root: str,
                        gt_sample: int | Mapping[int, int] | None, iterations: int = 1) -> tuple[dict[str, Any],
                                                                                                 list[str]]:
    """The ground-truth files (`{op}.{output_index}` -> entry, file-name keys) for the device run of iteration
    `data_index`: sample folder k (`dumpcmp golden` with several samples writes DIR/0, DIR/1, ...) for data_index k,
    or `gt_sample` for every run (or as mapped); the whole tree `gt` (scanned from `root`) when it has no sample
    folders. Whatever is not one-to-one is said in the notes, never resolved silently. The one rule compare,
    locate and extract pair iterations and samples by."""
    samples = gt.by_sample(root)
    if isinstance(gt_sample, Mapping):  # an explicit iteration -> sample mapping; iterations not in it: k -> k
        gt_sample = gt_sample.get(data_index) if data_index is not None else None
    k = data_index if gt_sample is None else gt_sample
    if samples:
        if k is not None and k in samples:
            how = "--gt-sample" if gt_sample is not None else f"iteration {k}"
            return dict(samples[k].files), [f"ground truth: sample folder {k}/ ({how})"]
        if gt_sample is not None:
            raise NotFoundError(f"{root}: no sample folder {gt_sample}/ (folders: "
                                f"{', '.join(map(str, samples))})")
        if len(samples) == 1:
            only = next(iter(samples))
            return dict(samples[only].files), [f"ground truth: the only sample folder {only}/ for iteration {k}"]
        return dict(gt.files), [f"ground truth: no sample folder {k}/ for iteration {k} among "
                                f"{', '.join(map(str, samples))}; the newest file of each tensor across them was "
                                "taken: choose one with --gt-sample K"]
    # a tensor has candidates in several folders only if some file lost to a newer one (none lost: nothing to walk)
    mixed = gt.mixed_folders() if gt.superseded else 0
    notes = [f"ground truth: {mixed} tensors have files in several folders; the newest of each was taken"] \
        if mixed else []
    if iterations > 1:
        notes.append(f"ground truth: one set (no sample folders) for each of the {iterations} iterations")
    return dict(gt.files), notes


def paired_runs(
    left: str | os.PathLike[str],
    right: str | os.PathLike[str],
    *,
    fusion_json: str | os.PathLike[str] | None = None,
    quant_json: str | os.PathLike[str] | None = None,
    time: str | None = None,
    device_id: int | None = None,
    model_name: str | None = None,
    model_id: int | None = None,
    data_index: int | None = None,
    gt_sample: int | Mapping[int, int] | None = None,
    right_time: str | None = None,
    right_data_index: int | None = None,
    graph: Graph | None = None,
    left_index: DumpIndex | None = None,
    left_ops: Callable[[DumpGroup], list[DeviceOp]] | None = None,
    per_slice: bool = False,
    close_fusion_json: str | os.PathLike[str] | None = None,
) -> list[PairedRun]:
    """Scan both sides, select the left runs, pair every tensor (graph JSON with `fusion_json`, merged with
    `quant_json`; by name without; by file name against another device dump). `graph`: those files already
    loaded (`load_graph`), so a caller that needs the graph too reads it once. `left_index`/`left_ops`: the left
    side already scanned, and its runs' ops (headers read), elsewhere (on a cluster's workers).
    `close_fusion_json` (the original's `-cf`): the graph of the model compiled without fusion, whose device dump
    is the right side; the left (fused) tensors pair with its ops' outputs through both graphs
    (`merge_close_fusion`)."""
    left_index = scan(left) if left_index is None else left_index
    if left_ops is None:  # the left tree scanned here (else by a cluster's workers: comparison/cluster.py)
        def left_ops(group: DumpGroup) -> list[DeviceOp]:
            return device_ops(group, per_slice)
    if left_index.dump_count == 0:
        raise NotFoundError(f"{left}: no device dump files found"
                            + (f" ({len(left_index.skipped)} files skipped)" if left_index.skipped else ""))
    right_index = scan(right)
    close_notes: list[str] = []
    if close_fusion_json is not None:
        graph, close_notes = _close_fusion_graph(right, right_index, fusion_json, quant_json, close_fusion_json)
    if graph is None and (fusion_json is not None or quant_json is not None):
        main = fusion_json if fusion_json is not None else quant_json
        graph = load_graph(main, quant_fusion=quant_json if fusion_json is not None else None, attrs=False)
    selection = {"time": time, "device_id": device_id, "model_name": model_name, "model_id": model_id,
                 "data_index": data_index}
    groups = select_runs(left_index, selection, "left")
    device_vs_device = len(right_index.ground_truth) == 0
    if device_vs_device and right_index.dump_count == 0:
        raise NotFoundError(f"{right}: no ground-truth files ({{op}}.{{index}}.{{timestamp}}.npy) and no dumps found")
    runs = []
    for group in groups:
        if device_vs_device:
            if right_time is not None or right_data_index is not None:  # the right-hand run chosen explicitly
                match = right_index.find(time=right_time, data_index=right_data_index)
                if len(match) > 1:
                    match = [g for g in match if (g.key.device_id, g.key.model_name) ==
                             (group.key.device_id, group.key.model_name)] or match
            else:
                right_groups = right_index.find(**{k: v for k, v in selection.items() if k != "time"}) or \
                    list(right_index)
                match = [g for g in right_groups if (g.key.device_id, g.key.model_name, g.key.data_index) ==
                         (group.key.device_id, group.key.model_name, group.key.data_index)] or right_groups
            if not match:
                runs_r = ", ".join(g.key.describe() for g in right_index) or "none"
                raise NotFoundError(f"{right}: no run matches --right-time/--right-iteration (runs: {runs_r})")
            if len(match) != 1:
                names = ", ".join(g.key.describe() for g in match)
                raise NotFoundError(f"{right}: several runs could pair with {group.key.describe()} ({names}); "
                                    f"select the right-hand one with --right-time / --right-iteration")
            if graph is not None and close_fusion_json is not None:
                truth = {f"{op.op_name}.{i}": DeviceTruth(op.ref, i) for op in device_ops(match[0], per_slice)
                         if op.ref.dump is not None for i in range(op.n_outputs)}
                pairs = pair_with_ground_truth(left_ops(group), truth, graph)
                runs.append(PairedRun(group.key.describe(), pairs, False, graph, close_notes + slice_notes(pairs),
                                      device_truth=True))
                continue
            pairs = pair_device_to_device(left_ops(group), device_ops(match[0], per_slice))
        else:
            iterations = len({g.key.data_index for g in groups})
            gt_files, notes = sample_ground_truth(group.key.data_index, right_index.ground_truth, right_index.root,
                                                  gt_sample, iterations)
            pairs = pair_with_ground_truth(left_ops(group), keys_by_index(gt_files, notes), graph)
            if graph is None:
                # without the graph an input's producer is unknown: such rows would only say so, one per input
                pairs = [p for p in pairs if not (p.kind == "input" and p.ground_truth_ref is None)]
        runs.append(PairedRun(group.key.describe(), pairs, device_vs_device, None if device_vs_device else graph,
                              ([] if device_vs_device else notes) + slice_notes(pairs)))
    return runs


def _close_fusion_graph(right: Any, right_index: DumpIndex, fusion_json: Any, quant_json: Any,
                        close_fusion_json: Any) -> tuple[Graph, list[str]]:
    """The fused graph composed with the unfused one (`-cf`), and what did not map; ConfigError when the run is
    not a fused device dump against an unfused one with both graphs."""
    if fusion_json is None:
        raise ConfigError("-cf (the graph without fusion) goes with -f (the fused model's graph)")
    if quant_json is not None:
        raise ConfigError("-cf compares two device dumps of one model: there is no need for -q")
    if len(right_index.ground_truth) or right_index.dump_count == 0:
        raise ConfigError(f"{right}: with -cf the right side is the device dump of the model compiled without "
                          f"fusion, not ground-truth files")
    graph, warnings = merge_close_fusion(load_graph(fusion_json), load_graph(close_fusion_json))
    shown = warnings[:5] + ([f"... and {len(warnings) - 5} more"] if len(warnings) > 5 else [])
    return graph, [f"-cf: {w}" for w in shown]

