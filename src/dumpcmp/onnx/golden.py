"""Ground truth from an ONNX model: run it in onnxruntime with every node output exposed, and write each output as
`{op_name}.{output_index}.{timestamp}.npy`, the NumPy ground-truth naming the comparison reads, plus an index.

Needs the `onnx` extra (`pip install 'dumpcmp[onnx]'`: onnx, onnxruntime).

What is written, and the decisions behind it:
- Names: `.`, `/`, `\\` and spaces in an op name become `_` (the runtime's rule, so the names match the device
  side). A node without a name is named after its first output tensor. Two ops that sanitise to the same name get
  `_1`, `_2`, ... (noted in the index); a file name too long for the file system (255 bytes) is written as a
  digits-only hash with a `{hash},{name}` row in the folder's mapping.csv, as the Ascend tools do, so scans resolve
  it (noted). The index is the mapping table from original names to files.
- Model inputs are written as the output 0 of an "op" named after the input, op type `Input` (ATC turns each
  graph input into a Data op of that name, so a comparison finds them under `{input}.0`). Initializers (weights)
  are not written.
- Order and timestamps: inputs first, then every node in topological order (the graph's own order when it is
  already sorted, which ONNX requires), outputs by index. Timestamps are 16-digit microseconds: the start time plus
  the file's position in that order, and always above every timestamp already in the folder, so "newest wins"
  never mixes two runs.
- The index `golden_index.csv` has one row per output, written or not: order, op_name, file_op_name, op_type,
  output_index, tensor_name, file, shape (JSON list), dtype, note. Outputs that are not plain tensors (sequences,
  maps, optionals), string tensors and optional outputs the node does not produce have an empty `file` and a note.
  `golden_run.json` records the model, the inputs' sources, the seed and the versions.
- With `stats` (`dumpcmp golden --stats`), also `statistic.csv` (`dumpcmp.dumps.stats`, the columns a runtime's
  statistics dump has): one row per written file, Op Name its file's op name, IO output, Slot its output index,
  Timestamp its file's; each file read back as the statistics compare reads ground truth
  (`dumps.ground_truth.ground_truth_source`) and its statistics computed by the core in one pass
  (`_core.compare.stats_many`). The statistics compare reads a row instead of the file when op, output index and
  timestamp match. Published with the other files; a run without `stats` into the folder (--force) removes it.
- Only top-level nodes are dumped; the nodes inside If/Loop/Scan bodies are not graph values onnxruntime can return.
- onnxruntime's graph optimisations are off, so every file is the result of that ONNX node itself (fusions would
  otherwise remove or merge nodes) and the results do not depend on which outputs are exposed. With `check=True`
  a plain run of the unmodified model is made first and every batch's final outputs must equal it bit for bit.

Memory stays bounded: onnxruntime keeps every graph output of a run alive until the run ends, whichever outputs
are fetched, so exposing all node outputs at once would hold all activations. The nodes are cut, in execution
order, into batches whose outputs fit in `batch_bytes` (sizes from ONNX shape inference with the actual input
shapes; where a shape is unknown, the largest tensor seen so far); each batch gets its own session exposing only
its outputs, and each output is written and dropped as it comes, before the next batch runs. Peak memory: one plain
inference + one batch + the weights, whatever the number of nodes (measured: a chain of 40 or 80 outputs of 16 MB
each peaks at 290 MB in batches of 16 MB, 800 MB when all are exposed at once; an Expand to 2 GiB peaks at 2.1 GB,
one copy of it). The price is one inference (and one session creation)
per batch, so a small `batch_bytes` on a deep model costs time.

Models over 2 GB keep their weights in external data files: the model is read without them
(`load_external_data=False`) and onnxruntime reads them from the model's folder (session option
`session.model_external_initializers_file_folder_path`, onnxruntime >= 1.21; older versions load a temporary copy
of the graph written beside the model).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from dumpcmp.dumps import naming
from dumpcmp.dumps.ground_truth import (
    CONSTANT_MARK,
    INDEX_COLUMNS,
    INDEX_NAME,
    GoldenRecord,
)
from dumpcmp.dumps.stats import STATS_FILE
from dumpcmp.errors import ConfigError, DumpcmpError
from dumpcmp.onnx.controlflow import inline_static_ifs
from dumpcmp.onnx.inputs import load_sample, plan_inputs, sample_feeds, with_free_dims_hint
from dumpcmp.onnx.model import (
    constant_tensors,
    execution_order,
    external_files,
    load_model,
    model_inputs,
    node_name,
    subgraph_note,
    tensor_nbytes,
    value_types,
)
from dumpcmp.onnx.runner import Runner, require_onnx
from dumpcmp.support.files import atomic_write, atomic_write_text, file_set
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.progress import Progress

__all__ = [
    "CONSTANT_NOTE",
    "DEFAULT_BATCH_BYTES",
    "INPUT_OP_TYPE",
    "RUN_NAME",
    "GoldenRun",
    "dump_golden",
    "golden_from_sources",
    "sanitize_name",
]

RUN_NAME = "golden_run.json"
INPUT_OP_TYPE = "Input"
DEFAULT_BATCH_BYTES = 512 * 1024 * 1024
CONSTANT_NOTE = f"{CONSTANT_MARK}: not written; --include-constants writes it"
_TIMESTAMP_RE = re.compile(r"\.\d+\.(\d{16})\.npy$")


sanitize_name = naming.sanitize  # the runtime's rule, one definition in dumpcmp.dumps.naming


# -- records ---------------------------------------------------------------------------------------------------
@dataclass
class GoldenRun:
    """The result of `dump_golden`."""

    out_dir: Path
    index_path: Path
    records: list[GoldenRecord]
    outputs: dict[str, np.ndarray]  # the model's own final outputs (the plain run when checked)
    batches: list[list[str]] = field(default_factory=list)  # tensor names exposed per session
    checked: bool = False  # every batch's final outputs equal the plain run's
    stats_path: Path | None = None  # statistic.csv, when written (stats=True)
    timestamp_base: int = 0  # a written file's timestamp is this plus its record's order

    @property
    def written(self) -> list[GoldenRecord]:
        return [r for r in self.records if r.file]


# -- writing ---------------------------------------------------------------------------------------------------
def _latest_timestamp(out: Path) -> int:
    latest = 0
    if out.is_dir():
        for f in out.iterdir():
            m = _TIMESTAMP_RE.search(f.name)
            if m:
                latest = max(latest, int(m.group(1)))
    return latest


class _Namer:
    """Unique file-safe op names; notes say what was changed."""

    def __init__(self) -> None:
        self.used: dict[str, str] = {}

    def __call__(self, op_name: str) -> tuple[str, str]:
        base = sanitize_name(op_name) or "_"
        note = ""
        name, k = base, 0
        while name in self.used and self.used[name] != op_name:
            k += 1
            name = f"{base}_{k}"
        if k:
            note = (note + "; " if note else "") + f"renamed: {self.used[base]!r} also sanitises to {base!r}"
        self.used[name] = op_name
        return name, note


def _save_npy(path: Path, array: np.ndarray) -> None:
    atomic_write(path, lambda f: np.save(f, array, allow_pickle=False))


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def dump_golden(model_path: str | os.PathLike[str], inputs: Mapping[str, np.ndarray] | None,
                out_dir: str | os.PathLike[str], *, seed: int | None = None,
                batch_bytes: int = DEFAULT_BATCH_BYTES, check: bool = True, force: bool = False,
                sources: Mapping[str, str] | None = None, include_constants: bool = False,
                control_samples: Sequence[Mapping[str, np.ndarray]] | None = None,
                _external_strategy: str | None = None, quiet: bool = True, stats: bool = False) -> GoldenRun:
    """Run the ONNX model on `inputs` (name -> array; inputs left out get random data when `seed` is given) and
    write every op output to `out_dir` as `{op_name}.{output_index}.{timestamp}.npy`, with `golden_index.csv`.

    `batch_bytes` bounds the outputs held at once (see the module doc). `check`: make a plain run first and
    require every batch's final outputs to equal it. A folder that already has a golden index is refused unless
    `force`. `sources` (name -> description) only goes into golden_run.json. Outputs computed from the weights
    alone (`constant_tensors`) are not written unless `include_constants`: their index rows say so. An If whose
    condition is the same on `control_samples` (default: these inputs) is inlined (`dumpcmp.onnx.controlflow`): the
    nodes of the branch taken are written as layers of their own, as `dumpcmp simulate` dumps them. Unless `quiet`,
    a progress bar on a terminal's stderr counts the tensors written. `stats`: also write `statistic.csv`, the
    statistics of every written tensor (module doc).
    """
    out = Path(out_dir)
    created = not out.exists()
    try:
        return _dump_golden(model_path, inputs, out, seed=seed, batch_bytes=batch_bytes, check=check, force=force,
                            sources=sources, include_constants=include_constants,
                            control_samples=control_samples, _external_strategy=_external_strategy, quiet=quiet,
                            stats=stats)
    except BaseException:
        if created:  # a failed run leaves no folder behind that it made itself
            shutil.rmtree(out, ignore_errors=True)
        raise


def _dump_golden(model_path: str | os.PathLike[str], inputs: Mapping[str, np.ndarray] | None, out: Path, *,
                 seed: int | None, batch_bytes: int, check: bool, force: bool, sources: Mapping[str, str] | None,
                 include_constants: bool, control_samples: Sequence[Mapping[str, np.ndarray]] | None,
                 _external_strategy: str | None, quiet: bool = True, stats: bool = False) -> GoldenRun:
    onnx, ort = require_onnx()
    path = Path(model_path)
    model = load_model(path)
    external = bool(external_files(model, path.parent, path))
    declared = model_inputs(model)
    by_name = {mi.name: mi for mi in declared}
    given = dict(inputs or {})
    unknown = [n for n in given if n not in by_name]
    if unknown:
        raise ConfigError(f"{path}: the model has no input {unknown[0]!r}; its inputs: "
                          f"{', '.join(by_name) or '(none)'}")
    rng = np.random.default_rng([seed, 0]) if seed is not None else None
    feeds = sample_feeds(declared, given, rng, str(path))
    source_notes = dict(sources or {})
    for mi in declared:
        if mi.name in given:
            source_notes.setdefault(mi.name, "array")
        else:
            source_notes[mi.name] = f"random (seed {seed})"

    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: exists and is not a folder")
    if (out / INDEX_NAME).exists() and not force:
        raise ConfigError(f"{out}: already holds ground truth ({INDEX_NAME}); choose a new folder or use --force "
                          "(force=True in Python; the new files get later timestamps, so they win)")
    out.mkdir(parents=True, exist_ok=True)

    flow = ""
    if any(n.op_type == "If" for n in model.graph.node):
        model, flow_notes = inline_static_ifs(model, list(control_samples or [feeds]))
        flow = "; ".join(flow_notes) or "every If inlined (its condition is the same on every sample)"
    nodes = execution_order(model.graph, path)
    types = value_types(model, feeds)
    runner = Runner(model, path, external, _external_strategy)

    # Everything is built in a private temporary folder inside `out` and moved into place at the end, index
    # last: a run stopped by an error or a signal leaves nothing, not a set without its index.
    with file_set(out, force=force, what="ground truth") as staged:
        run = _dump_into(out, staged, path, model, runner, feeds, declared, nodes, types, check, seed,
                         batch_bytes, source_notes, ort, onnx, include_constants, flow, quiet=quiet)
        if stats:
            run.stats_path = _write_stats(out, staged, run)
        else:
            staged.drop(STATS_FILE)  # with --force: no statistics file of an older run stays beside the new files
        return run


def _dump_into(out: Path, staged: Any, path: Path, model: Any, runner: Runner, feeds: dict[str, np.ndarray],
               declared: Any, nodes: Any, types: Any, check: bool, seed: int | None, batch_bytes: int,
               source_notes: dict[str, str], ort: Any, onnx: Any, include_constants: bool,
               flow: str, quiet: bool = True) -> GoldenRun:
    progress = Progress(1 + len(nodes), f"golden {out.name}", quiet=quiet)  # the plain run, then each node's outputs
    try:
        return _dump_nodes(out, staged, path, model, runner, feeds, declared, nodes, types, check, seed, batch_bytes,
                           source_notes, ort, onnx, include_constants, flow, progress)
    finally:
        progress.close()


def _dump_nodes(out: Path, staged: Any, path: Path, model: Any, runner: Runner, feeds: dict[str, np.ndarray],
                declared: Any, nodes: Any, types: Any, check: bool, seed: int | None, batch_bytes: int,
                source_notes: dict[str, str], ort: Any, onnx: Any, include_constants: bool,
                flow: str, progress: Progress) -> GoldenRun:
    plain: dict[str, np.ndarray] = {}
    if check:
        session = runner.session([])
        plain = dict(zip(runner.original_outputs, runner.run(session, runner.original_outputs, feeds)))
        del session
        progress.advance()

    base = max(int(time.time() * 1_000_000), _latest_timestamp(out) + 1)
    namer = _Namer()
    records: list[GoldenRecord] = []
    for mi in declared:
        name, note = namer(mi.name)
        records.append(GoldenRecord(len(records), mi.name, name, INPUT_OP_TYPE, 0, mi.name, note=note))
    pending: list[tuple[GoldenRecord, int | None]] = []  # exposable outputs with their estimated size
    constants = constant_tensors(model.graph)
    for node in nodes:
        op_name = node_name(node)
        naming_note = "" if node.name else "node has no name: named after its first output"
        file_name, note = namer(op_name)
        note = "; ".join(n for n in (naming_note, note, subgraph_note(node)) if n)
        for index, tensor in enumerate(node.output):
            rec = GoldenRecord(len(records), op_name, file_name, node.op_type, index, tensor, note=note)
            records.append(rec)
            if not tensor:
                rec.note = _join_note(rec.note, "optional output not produced by this node")
                continue
            if tensor in constants:
                if include_constants:
                    rec.note = _join_note(rec.note, CONSTANT_MARK)
                else:
                    rec.note = _join_note(rec.note, CONSTANT_NOTE)
                    continue
            kind = _not_a_tensor(types.get(tensor))
            if kind:
                rec.note = _join_note(rec.note, f"{kind} output: not a tensor, not written")
                continue
            pending.append((rec, tensor_nbytes(types.get(tensor))))

    progress.total = max(1, len(pending) + (1 if check else 0))
    # Inputs are written first: they are what the run starts from.
    for rec in records[: len(declared)]:
        _write(out, staged, rec, feeds[rec.tensor_name], base)

    batches: list[list[str]] = []
    largest = max((a.nbytes for a in feeds.values()), default=0)
    final = set(runner.original_outputs)
    outputs_seen: dict[str, np.ndarray] = {}
    i = 0
    while i < len(pending):
        batch: list[GoldenRecord] = []
        total = 0
        while i < len(pending):
            rec, size = pending[i]
            estimate = size if size is not None else largest
            if batch and total + estimate > batch_bytes:
                break
            batch.append(rec)
            total += estimate
            i += 1
        names = [r.tensor_name for r in batch]
        batches.append(names)
        session = runner.session(names)
        fetch = names + [n for n in runner.original_outputs if n not in names]
        values = runner.run(session, fetch, feeds)
        del session
        for k, n in enumerate(fetch):
            if n not in final:
                continue
            if check and not _same(values[k], plain[n]):
                raise DumpcmpError(f"{path}: exposing intermediate outputs changed the final output {n!r}; "
                                   "onnxruntime does not compute this model deterministically")
            outputs_seen.setdefault(n, values[k])
        # Each output is written, then dropped: the list is its only holder (no loop variable keeps the last one
        # alive into the next batch's run, which would hold a large intermediate twice).
        for k, rec in enumerate(batch):
            largest = max(largest, _write_output(out, staged, rec, values, k, base))
            progress.advance()
        del values
    if not check:
        if not batches:  # a model without nodes: its outputs are inputs or weights
            session = runner.session([])
            outputs_seen.update(zip(runner.original_outputs, runner.run(session, runner.original_outputs, feeds)))
            del session
        plain = {n: outputs_seen[n] for n in runner.original_outputs}

    index_path = out / INDEX_NAME
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(INDEX_COLUMNS)
    for rec in records:
        w.writerow(rec.row())
    atomic_write_text(staged.path(INDEX_NAME), text.getvalue())
    run_info = {
        "model": str(path.resolve()),
        "inputs": {n: source_notes.get(n, "") for n in feeds},
        "seed": seed,
        "control_flow": flow,
        "timestamp_base": base,
        "batches": len(batches),
        "checked_against_plain_run": check,
        "graph_optimizations": "disabled",
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
    }
    atomic_write_text(staged.path(RUN_NAME), json.dumps(run_info, indent=2) + "\n")
    return GoldenRun(out, index_path, records, plain, batches, check, timestamp_base=base)


def _write_stats(out: Path, staged: Any, run: GoldenRun) -> Path:
    """statistic.csv of the files `run` wrote (still in `staged`), each read back as the statistics compare reads
    ground truth; a file the compare could not read either (no values the metrics compare) gets no row."""
    from dumpcmp.dumps.ground_truth import ground_truth_source
    from dumpcmp.dumps.scan import GroundTruthEntry
    from dumpcmp.dumps.stats import stats_csv_text, stats_record
    from dumpcmp.support.native import core

    sources: list[Any] = []
    rows: list[tuple[GoldenRecord, int]] = []
    for rec in run.written:
        ts = run.timestamp_base + rec.order
        try:
            name = naming.parse_framework_dump_name(
                naming.build_framework_dump_name(rec.file_op_name, rec.output_index, ts))
            source, _, _ = ground_truth_source(GroundTruthEntry(staged.path(rec.file), rec.file, name))
        except DumpcmpError:
            continue
        sources.append(source)
        rows.append((rec, ts))
    records = []
    for (rec, ts), computed in zip(rows, core.compare.stats_many(sources)):
        if isinstance(computed, str):
            continue
        shape = tuple(rec.shape or ())
        records.append(stats_record(
            computed, op_type=rec.op_type, op_name=rec.file_op_name, timestamp=ts, kind="output",
            slot=rec.output_index, data_size=int(np.prod(shape, dtype=np.int64)) * np.dtype(rec.dtype).itemsize,
            data_type=rec.dtype, format="ND", shape=shape))
    atomic_write_text(staged.path(STATS_FILE), stats_csv_text(records))
    return out / STATS_FILE


def _not_a_tensor(type_proto: Any) -> str | None:
    if type_proto is None:
        return None
    kind = type_proto.WhichOneof("value")
    if kind in (None, "tensor_type"):
        return None
    return {"sequence_type": "sequence", "map_type": "map", "optional_type": "optional",
            "sparse_tensor_type": "sparse tensor"}.get(kind, kind)


def _join_note(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _write_output(out: Path, staged: Any, rec: GoldenRecord, values: list[Any], k: int, base: int) -> int:
    """Write `values[k]` for `rec` and drop it from the list (its bytes are freed when this returns); its size."""
    value, values[k] = values[k], None
    if not isinstance(value, np.ndarray):
        rec.note = _join_note(rec.note, f"{type(value).__name__} output: not a tensor, not written")
        return 0
    if value.dtype.kind in "OSU":
        rec.shape, rec.dtype = tuple(value.shape), "string"
        rec.note = _join_note(rec.note, "string tensor: not written")
        return value.nbytes
    _write(out, staged, rec, value, base)
    return value.nbytes


def _write(out: Path, staged: Any, rec: GoldenRecord, array: np.ndarray, base: int) -> None:
    ts = base + rec.order
    # a name too long for the file system becomes a digits-only hash with a mapping.csv row, as the Ascend tools
    # do, so a scan of the folder resolves it back to its {op}.{output_index} key
    rec.file = naming.safe_file_name(f"{rec.file_op_name}.{rec.output_index}.{ts}.npy", out)
    if rec.file.isdigit():
        rec.note = _join_note(rec.note, f"name too long for a file: written as {rec.file}, see mapping.csv")
    rec.shape = tuple(int(d) for d in array.shape)
    rec.dtype = str(array.dtype)
    _save_npy(Path(staged.path(rec.file)), array)


def golden_from_sources(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                        sources: Sequence[str] = (), preprocess: Sequence[str] = (), *, seed: int | None = None,
                        batch_bytes: int = DEFAULT_BATCH_BYTES, check: bool = True,
                        force: bool = False, include_constants: bool = False,
                        shapes: Mapping[str, Sequence[int]] | None = None, quiet: bool = True,
                        stats: bool = False) -> list[GoldenRun]:
    """What `dumpcmp golden` does: plan the inputs (see `plan_inputs`) and dump every sample; one sample goes to
    `out_dir`, several to `out_dir/0`, `out_dir/1`, ... (like the device side's data_index folders)."""
    plans, count = plan_inputs(model_path, sources, preprocess, seed, shapes)
    top = Path(out_dir)
    created = not top.exists()
    runs = []
    try:
        samples = [load_sample(plans, k, seed) for k in range(count)]
        for k in range(count):
            target = top if count == 1 else top / str(k)
            described = {p.input.name: p.describe(k) for p in plans}
            runs.append(dump_golden(model_path, samples[k], target, seed=seed, batch_bytes=batch_bytes, check=check,
                                    force=force, sources=described, include_constants=include_constants,
                                    control_samples=samples, quiet=quiet, stats=stats))
    except DumpcmpError as error:
        if created:
            shutil.rmtree(top, ignore_errors=True)
        raise with_free_dims_hint(error, plans) from error
    except BaseException:
        if created:  # a failed run leaves no folder behind that it made itself
            shutil.rmtree(top, ignore_errors=True)
        raise
    return runs
