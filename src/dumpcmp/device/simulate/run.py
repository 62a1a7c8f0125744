"""Simulated device dumps: run a lower-precision (fp16 or int8) version of an ONNX model on the CPU and write what
an Ascend NPU would, for users without the hardware and for dumpcmp's own demo and end-to-end tests.

    >>> from dumpcmp.device.simulate import simulate
    >>> r = simulate("net.onnx", "out", precision="fp16", samples=[{"x": x}])
    >>> r.sample_dirs[0]      # out/20261121093000/0/net/1/0: Conv2D.conv1bn1relu1.3.1763713800000003, ...
    >>> r.json_path           # out/model.json: the compiler-style graph JSON to compare with (-f)

What is written (needs the `onnx` extra):
- dump files in the device format, named `{op_type}.{op_name}.{task_id}.{timestamp}` (names sanitised, task ids
  increasing in execution order with gaps where ops are not dumped, 16-digit timestamps increasing in execution
  order), under `{dump_path}/{YYYYMMDDhhmmss}/{device_id}/{model_name}/{model_id}/{data_index}/`, one data_index
  folder per input sample;
- the graph JSON of the simulated compiler (`DIR/model.json` unless `json_out` says otherwise; rewritten by every
  run, it describes the latest one).

Precision (see `_lower`): fp16 keeps every float tensor in float16 and computes each op in float32 on those values,
like the NPU's fp32 accumulation; int8 is onnxruntime's static QDQ quantization of Conv/Gemm/MatMul inputs
(calibrated on the given samples) with the rest in fp16. Data types in the dumps are what that run produced:
FLOAT16 for activations and float weights, INT8 for the outputs of AscendQuant ops, the inputs of AscendDequant
ops and int8 weights, INT32 for quantized biases, FLOAT for the fp32 side of the input and output Casts, and the
model's own types for integer tensors. The fusion, inserted ops and layouts are described in `_device`.

The acl.json (`acl_json`) is checked with `dumpcmp.device.acljson.check_acl_json` first; its problems are reported as a
ConfigError. It decides the dump_mode (input, output, all), which model entry applies (its `model_name` must be
the model's: the file stem, the ONNX graph name, or `model_name`) and which ops (`layer`: names of the compiled
ops, as in the graph JSON). `out_dir` overrides its dump_path (and then a dump_path that does not exist here is
only a warning). NPU_COLLECT_PATH / ASCEND_WORK_PATH are not honoured: the simulation writes where it is told.
Exception and overflow dumps are not simulated. With ``"dump_data": "stats"`` (or `data="stats"`) each sample folder
gets one `statistic.csv` instead of the dump files (`dumpcmp.dumps.stats`): a row per tensor the dump mode and
layers select, with the op's task id and timestamp as its dump file would have had, Data Size the bytes of the tensor
in its device layout, Shape its plain (original) shape, and the statistics of its values computed by the core
(`_core.compare.stats_many`, the rule the statistics compare uses for the ground truth).

Never overwriting: every run gets its own `{time}` folder; when that second's folder exists already, the next free
second is taken (a suffix would break the `YYYYMMDDhhmmss` layout that readers recognise).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from dumpcmp.device.acljson import DUMP_MODES, ERROR, check_acl_json
from dumpcmp.dumps.dump import TensorData, data_type_of, write_dump
from dumpcmp.dumps.stats import STATS_FILE, StatsRecord, stats_csv_text, stats_record
from dumpcmp.errors import ConfigError, DumpcmpError, NotFoundError
from dumpcmp.dumps.naming import build_device_dump_name, safe_file_name, sanitize
from dumpcmp.device.simulate._device import DeviceGraph, Output, SimOp, Value, device_dims, encode
from dumpcmp.device.simulate._lower import (
    Lowered,
    blame_run_failure,
    constants_to_initializers,
    fold_conv_bn,
    check_runnable,
    lower_fp16,
    quantize_int8,
    rewrite_error,
)
from dumpcmp.onnx.controlflow import inline_static_ifs
from dumpcmp.onnx.inputs import load_sample, plan_inputs, sample_feeds, with_free_dims_hint
from dumpcmp.onnx.model import load_model_with_weights, model_inputs, name_nodes, tensor_nbytes, value_types
from dumpcmp.onnx.runner import Runner
from dumpcmp.support.files import made_folder, new_folder_in
from dumpcmp.support.progress import Progress

__all__ = ["PRECISIONS", "DumpConfig", "SimulateResult", "lower_model", "read_acl_config", "simulate",
           "simulate_from_sources"]

PRECISIONS = ("fp16", "int8")
DEFAULT_JSON_NAME = "model.json"
DEFAULT_BATCH_BYTES = 512 * 1024 * 1024


@dataclass
class DumpConfig:
    """What to dump, from an acl.json or from arguments."""

    dump_path: Path | None
    mode: str = "output"
    layers: list[str] | None = None
    model_name: str | None = None
    notes: list[str] = field(default_factory=list)
    data: str = "tensor"
    """"tensor" (dump files) or "stats" (one statistic.csv per sample folder)."""


@dataclass
class SimulateResult:
    """The result of `simulate`."""

    precision: str
    model_name: str
    run_dir: Path
    """`{dump_path}/{time}`."""
    model_dir: Path
    """`{run_dir}/{device_id}/{model_name}/{model_id}`; one `{data_index}` folder per sample below."""
    sample_dirs: list[Path]
    json_path: Path
    files: list[Path]
    dumped_ops: list[str]
    """Names of the compiled ops that were dumped, in execution order."""
    fused: list[list[str]]
    """The original op names of every fused op."""
    mode: str
    notes: list[str] = field(default_factory=list)
    graph: Any = field(default=None, repr=False)
    data: str = "tensor"
    """"tensor": `files` are dump files; "stats": `files` are the statistic.csv files, one per sample."""
    """The `_device.DeviceGraph` (for tests and tools)."""


# -- configuration -----------------------------------------------------------------------------------------------
def _model_candidates(path: Path, model: Any, model_name: str | None) -> list[str]:
    if model_name:
        return [model_name]
    names = [path.stem]
    if model.graph.name and model.graph.name not in names:
        names.append(model.graph.name)
    return names


def read_acl_config(acl_json: str | os.PathLike[str], candidates: Sequence[str], *, out_dir: str | None = None,
                    cwd: str | os.PathLike[str] | None = None) -> DumpConfig:
    """The dump settings an acl.json gives for a model known by any of `candidates` (ConfigError if the file
    breaks a rule, asks for a dump that is not simulated, or does not list the model)."""
    problems = check_acl_json(acl_json, cwd, remote=out_dir is not None)
    errors = [p for p in problems if p.severity == ERROR]
    if errors:
        text = "\n".join(f"  {p}".replace("\n", "\n  ") for p in errors)
        raise ConfigError(f"{acl_json}: not a valid acl.json ({len(errors)} problem{'s' * (len(errors) != 1)}; "
                          f"`dumpcmp acl-json check` says more):\n{text}")
    from dumpcmp.support import jsonfile

    dump = jsonfile.load(acl_json, "acl.json")["dump"]  # the check above passed: the same reading rules
    if dump.get("dump_scene"):
        raise ConfigError(f"{acl_json}: dump_scene {dump['dump_scene']!r} (exception/watcher dump) is not simulated; "
                          "remove it for a model dump")
    if dump.get("dump_debug") == "on":  # only the overflowing ops, inputs and outputs, each with an OpDebug file
        return DumpConfig(_dump_path(dump, out_dir, cwd), "all", None, candidates[0],
                          [str(p) for p in problems if p.severity != ERROR and p.severity != "info"], "debug")
    if dump.get("dump_data", "tensor") not in ("tensor", "stats"):
        raise ConfigError(f"{acl_json}: dump_data {dump['dump_data']!r} is not simulated; write \"tensor\" or "
                          "\"stats\"")
    entries = [e for e in dump.get("dump_list") or [] if isinstance(e, Mapping)]
    if not entries:
        raise ConfigError(f"{acl_json}: dump_list names no model (single-operator dump only): nothing to simulate; "
                          "add {\"model_name\": \"" + candidates[0] + "\"}")
    wanted = {sanitize(c) for c in candidates}
    entry = next((e for e in entries if isinstance(e.get("model_name"), str) and
                  (e["model_name"] in candidates or sanitize(e["model_name"]) in wanted)), None)
    notes = [str(p) for p in problems if p.severity != ERROR and p.severity != "info"]
    if entry is None:
        entry = next((e for e in entries if "model_name" not in e), None)
        if entry is None:
            listed = ", ".join(repr(e.get("model_name")) for e in entries)
            wanted_names = " or ".join(map(repr, candidates))
            raise ConfigError(f"{acl_json}: dump_list names {listed}, not this model ({wanted_names}); the runtime "
                              "would dump nothing. Fix the model_name, or pass --model-name")
        name = candidates[0]
    else:
        name = entry["model_name"]
    layers = entry.get("layer")
    return DumpConfig(_dump_path(dump, out_dir, cwd), dump.get("dump_mode", "output"),
                      None if layers is None else list(layers), name, notes, dump.get("dump_data", "tensor"))


def _dump_path(dump: Mapping[str, Any], out_dir: str | None, cwd: str | os.PathLike[str] | None) -> Path | None:
    if out_dir is not None:
        return Path(out_dir)
    raw = dump.get("dump_path")
    return None if raw is None else Path(raw) if Path(raw).is_absolute() else Path(cwd or os.getcwd()) / raw


# -- lowering ------------------------------------------------------------------------------------------------------
def _load(path: Path) -> Any:
    model = load_model_with_weights(path)
    name_nodes(model)
    return model


def lower_model(model: Any, precision: str, samples: Sequence[Mapping[str, np.ndarray]],
                where: str = "model") -> Lowered:
    """The runnable lower-precision model (`precision` fp16 or int8; int8 calibrates on `samples`). `model` must
    have its nodes named (`dumpcmp.onnx.model.name_nodes`)."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    source, _ = fold_conv_bn(constants_to_initializers(model))
    if precision == "int8":
        source = quantize_int8(source, samples, where)
    try:
        lowered = lower_fp16(source, value_types(source, samples[0]), precision)
    except DumpcmpError:
        raise
    except Exception as error:
        raise rewrite_error(where, precision, "cannot build the rewritten model", error) from error
    check_runnable(lowered, where)
    return lowered


# -- writing -------------------------------------------------------------------------------------------------------
def _time_names(now: float | None) -> Iterator[str]:
    """The names a run's time folder may take, in order: its second, then the next ones (an hour of them; a suffix
    would break the `YYYYMMDDhhmmss` layout that readers recognise)."""
    t = time.time() if now is None else now  # the run's start, whenever the names are asked for
    return (time.strftime("%Y%m%d%H%M%S", time.localtime(t + step)) for step in range(3600))


def _select(graph: DeviceGraph, layers: list[str] | None, notes: list[str], where: str) -> list[SimOp]:
    dumpable = [op for op in graph.ops if op.dumped]
    if layers is None:
        return dumpable
    by_name = {op.name: op for op in graph.ops}
    by_sanitized = {sanitize(op.name): op for op in graph.ops}
    chosen: set[str] = set()
    fused_into = {m: op.name for op in graph.ops if op.originals and len(op.originals) > 1 for m in op.originals}
    for layer in layers:
        op = by_name.get(layer) or by_sanitized.get(sanitize(layer))
        if op is None:
            hint = f"; {layer!r} was fused into {fused_into[layer]!r}" if layer in fused_into else ""
            notes.append(f"{where}: layer {layer!r} is not an op of the compiled graph; the runtime ignores it{hint}")
        elif not op.dumped:
            notes.append(f"{where}: layer {layer!r} is a {op.type} op, which produces no dump; list its successors")
        else:
            chosen.add(op.name)
    ops = [op for op in dumpable if op.name in chosen]
    if not ops:
        sample = ", ".join(op.name for op in dumpable[:8])
        raise ConfigError(f"{where}: the layer list selects no op that is dumped; the compiled ops are named like "
                          f"the graph JSON's ({sample}, ...)")
    return ops


class _Writer:
    def __init__(self, graph: DeviceGraph, lowered: Lowered, mode: str, where: Path, batch_bytes: int,
                 data: str = "tensor") -> None:
        self.graph = graph
        self.mode = mode
        self.data = data
        self.records: list[StatsRecord] = []  # data "stats": the sample's records so far
        self.runner = Runner(lowered.model, where, False)
        self.batch_bytes = batch_bytes
        self.inits: dict[str, np.ndarray] = {}
        self.low_inits = {t.name: t for t in lowered.model.graph.initializer}

    def _tensors(self, op: SimOp) -> tuple[list[Output], list[Output]]:
        ins = [o for o in self.graph.input_outputs(op) if o is not None] if self.mode in ("input", "all") else []
        outs = list(op.outputs) if self.mode in ("output", "all") else []
        return ins, outs

    def _needs(self, op: SimOp) -> set[str]:
        ins, outs = self._tensors(op)
        return {o.value.name for o in ins + outs if o.value.kind in ("run", "fp32")}

    def batches(self, ops: Sequence[SimOp], sizes: Mapping[str, int | None]) -> list[list[SimOp]]:
        result: list[list[SimOp]] = []
        current: list[SimOp] = []
        names: set[str] = set()
        total = 0
        largest = max((s for s in sizes.values() if s), default=0)
        for op in ops:
            new = self._needs(op) - names
            extra = sum(sizes.get(n) or largest for n in new)
            if current and total + extra > self.batch_bytes:
                result.append(current)
                current, names, total = [], set(), 0
                new = self._needs(op)
                extra = sum(sizes.get(n) or largest for n in new)
            current.append(op)
            names |= new
            total += extra
        if current:
            result.append(current)
        return result

    def value(self, v: Value, run: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray]) -> np.ndarray:
        if v.kind == "feed":
            return np.asarray(feeds[v.name])
        if v.kind == "init":
            if v.name not in self.inits:
                from onnx import numpy_helper

                self.inits[v.name] = numpy_helper.to_array(self.low_inits[v.name])
            return self.inits[v.name]
        array = np.asarray(run[v.name])
        return array.astype(np.float32) if v.kind == "fp32" else array

    def tensor(self, out: Output, array: np.ndarray) -> TensorData:
        fmt = out.settle(array)
        groups = out.groups if fmt == "FRACTAL_Z" else 0
        return TensorData(encode(array, fmt, max(groups, 1)), format=fmt,
                          original_shape=tuple(int(d) for d in array.shape), sub_format=groups)

    def run_sample(self, ops: Sequence[SimOp], feeds: Mapping[str, np.ndarray], folder: Path,
                   next_stamp: Any, sizes: Mapping[str, int | None], progress: Progress | None = None) -> list[Path]:
        files: list[Path] = []
        for batch in self.batches(ops, sizes):
            names = sorted(set().union(*(self._needs(op) for op in batch)))
            run: dict[str, np.ndarray] = {}
            if names:
                session = self.runner.session(names)
                run = dict(zip(names, self.runner.run(session, names, feeds)))
                del session
            for op in batch:
                if progress is not None:
                    progress.advance()
                ins, outs = self._tensors(op)
                if not ins and not outs:
                    continue
                stamp = next_stamp()
                assert op.task_id is not None
                if self.data == "stats":
                    self.add_stats(op, stamp, ins, outs, run, feeds)
                    continue
                if self.data == "debug":
                    files += self.add_overflow(op, stamp, next_stamp, ins, outs, run, feeds, folder)
                    continue
                name = build_device_dump_name(op.type, op.name, op.task_id, stamp)
                path = folder / safe_file_name(name, folder)
                write_dump(path, op_name=op.name,
                           inputs=[self.tensor(o, self.value(o.value, run, feeds)) for o in ins],
                           outputs=[self.tensor(o, self.value(o.value, run, feeds)) for o in outs],
                           dump_time=stamp)
                files.append(path)
            del run
        if self.data == "stats":
            path = folder / STATS_FILE
            path.write_text(stats_csv_text(self.records), encoding="utf-8")
            self.records = []
            files.append(path)
        return files

    def add_overflow(self, op: SimOp, stamp: int, next_stamp: Any, ins: Sequence[Output], outs: Sequence[Output],
                     run: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray], folder: Path) -> list[Path]:
        """dump_debug on: an op whose float16 outputs hold inf or NaN is dumped (inputs and outputs, stream 0),
        followed by its OpDebug file, an AI Core record of status 1 (docs/formats.md#opdebug-files); others leave
        nothing."""
        from dumpcmp.dumps.opdebug import OPDEBUG_NAME, OPDEBUG_TYPE, opdebug_bytes

        values = [self.value(o.value, run, feeds) for o in outs]
        if not any(v.dtype == np.float16 and not np.isfinite(v).all() for v in values):
            return []
        assert op.task_id is not None
        name = build_device_dump_name(op.type, op.name, op.task_id, stamp, stream_id=0)
        path = folder / safe_file_name(name, folder)
        write_dump(path, op_name=op.name, inputs=[self.tensor(o, self.value(o.value, run, feeds)) for o in ins],
                   outputs=[self.tensor(o, v) for o, v in zip(outs, values)], dump_time=stamp)
        debug_stamp = next_stamp()
        debug = folder / build_device_dump_name(OPDEBUG_TYPE, OPDEBUG_NAME, op.task_id, debug_stamp, stream_id=0)
        record = np.frombuffer(opdebug_bytes("AIC", status=1, task_id=op.task_id, stream_id=0), np.uint8)
        write_dump(debug, op_name=OPDEBUG_NAME, outputs=[TensorData(record, data_type="UINT8")],
                   dump_time=debug_stamp)
        return [path, debug]

    def add_stats(self, op: SimOp, stamp: int, ins: Sequence[Output], outs: Sequence[Output],
                  run: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray]) -> None:
        """The statistics records of one op's tensors, as the runtime writes them for dump_data stats."""
        from dumpcmp.support.native import core

        tensors = [("input", i, o) for i, o in enumerate(ins)] + [("output", i, o) for i, o in enumerate(outs)]
        arrays = [np.require(self.value(o.value, run, feeds), requirements="C") for _, _, o in tensors]
        computed = core.compare.stats_many([core.compare.source_from_array(a) for a in arrays], 1)
        for (kind, slot, out), array, stats in zip(tensors, arrays, computed):
            if isinstance(stats, str):
                raise DumpcmpError(f"{op.name}:{kind}:{slot}: no statistics: {stats}")
            fmt = out.settle(array)
            dims = device_dims(out) if out.shape is not None else None
            size = int(np.prod(dims)) * array.itemsize if dims is not None else array.nbytes
            self.records.append(stats_record(
                stats, op_type=op.type, op_name=op.name, task_id=op.task_id, stream_id=0, timestamp=stamp,
                kind=kind, slot=slot, data_size=size, data_type=data_type_of(array), format=fmt,
                shape=tuple(int(d) for d in array.shape)))


def _check_samples(model: Any, samples: Sequence[Mapping[str, np.ndarray]] | None, seed: int | None,
                   where: str) -> list[dict[str, np.ndarray]]:
    declared = model_inputs(model)
    names = [mi.name for mi in declared]
    given = list(samples) if samples is not None else []
    if not given:
        given = [{}]
    out = []
    for k, sample in enumerate(given):
        unknown = [n for n in sample if n not in names]
        if unknown:
            raise ConfigError(f"{where}: the model has no input {unknown[0]!r}; its inputs: {', '.join(names)}")
        rng = np.random.default_rng([seed, k]) if seed is not None else None
        out.append(sample_feeds(declared, sample, rng, where, f"sample {k}"))
    return out


def simulate(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None = None, *,
             precision: str = "fp16", samples: Sequence[Mapping[str, np.ndarray]] | None = None,
             seed: int | None = None, acl_json: str | os.PathLike[str] | None = None, dump_mode: str | None = None,
             layers: Sequence[str] | None = None, device_id: int = 0, model_name: str | None = None,
             model_id: int = 1, json_out: str | os.PathLike[str] | None = None,
             batch_bytes: int = DEFAULT_BATCH_BYTES, now: float | None = None, quiet: bool = True) -> SimulateResult:
    """Simulate the device run of an ONNX model and write its dumps and graph JSON (module doc).

    samples: one dict (input name -> array) per execution (data_index 0, 1, ...); inputs left out get random data
        from `seed` (the random data `dumpcmp golden --seed` makes for the same sample). int8 calibrates on all.
    acl_json: the dump configuration; without it, every compiled op is dumped with `dump_mode` (default output)
        or only the `layers` given. `out_dir` is the dump path (required without an acl.json).
    now: the time (seconds since the epoch) the time folder is named after; default the current time.
    quiet: without it, a progress bar on a terminal's stderr counts the ops of every sample.
    """
    path = Path(model_path)
    if precision not in PRECISIONS:
        raise ConfigError(f"precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    model = _load(path)
    candidates = _model_candidates(path, model, model_name)
    if acl_json is not None:
        if dump_mode is not None or layers is not None:
            raise ConfigError("give the dump mode and layers in the acl.json, or as arguments, not both")
        config = read_acl_config(acl_json, candidates, out_dir=None if out_dir is None else os.fspath(out_dir))
    else:
        if dump_mode is not None and dump_mode not in DUMP_MODES:
            raise ConfigError(f"dump mode {dump_mode!r}: choose one of {', '.join(DUMP_MODES)}")
        config = DumpConfig(None if out_dir is None else Path(out_dir), dump_mode or "output",
                            None if layers is None else list(layers), candidates[0])
    if config.dump_path is None:
        raise ConfigError("no dump path: give an output folder (-o), or an acl.json with dump_path")
    if config.dump_path.exists() and not config.dump_path.is_dir():
        raise ConfigError(f"{config.dump_path}: exists and is not a folder")
    name = config.model_name or candidates[0]
    feeds = _check_samples(model, samples, seed, str(path))
    flow_notes: list[str] = []
    if any(n.op_type == "If" for n in model.graph.node):
        model, flow_notes = inline_static_ifs(model, feeds)  # the same decision golden makes on these samples
        name_nodes(model)

    lowered = lower_model(model, precision, feeds, str(path))
    low_types = value_types(lowered.model, feeds[0])
    graph = DeviceGraph(model, lowered, low_types, feeds[0], name)
    notes = list(config.notes) + flow_notes + lowered.findings
    ops = _select(graph, config.layers, notes, str(acl_json or path))

    writer = _Writer(graph, lowered, config.mode, path, batch_bytes, config.data)
    sizes = {n: tensor_nbytes(low_types.get(n)) for op in ops for n in writer._needs(op)}
    counter = [max(int(time.time() * 1_000_000), 10**15)]

    def next_stamp() -> int:
        counter[0] += 1
        return counter[0]

    json_path = Path(json_out) if json_out is not None else config.dump_path / DEFAULT_JSON_NAME
    rel_model = Path(str(int(device_id)), sanitize(name), str(int(model_id)))
    files: list[Path] = []
    names = _time_names(now)
    try:
        # the time folder and the graph JSON appear together when every sample is written, or not at all (an
        # error, Ctrl-C, SIGTERM): a dump path never holds a run without its graph, nor a run cut short
        with made_folder(config.dump_path), made_folder(json_path.parent), \
                new_folder_in(config.dump_path, names, what="time folder") as run:
            with Progress(len(ops) * len(feeds), f"simulating {precision}", quiet=quiet) as progress:
                for k, sample in enumerate(feeds):
                    folder = run.path / rel_model / str(k)
                    folder.mkdir(parents=True, exist_ok=False)
                    files += writer.run_sample(ops, sample, folder, next_stamp, sizes, progress)
            run.add_file(json_path, graph.json_text(precision).encode("utf-8"))
    except BaseException as error:
        blamed = blame_run_failure(error, model, feeds, str(path), precision) \
            if isinstance(error, DumpcmpError) else error
        if blamed is not error:
            raise blamed from error
        raise
    run_dir = run.final
    model_dir = run_dir / rel_model
    sample_dirs = [model_dir / str(k) for k in range(len(feeds))]
    files = [run.published(f) for f in files]
    return SimulateResult(precision, name, run_dir, model_dir, sample_dirs, json_path, files,
                          [op.name for op in ops], graph.fused, config.mode, notes, graph, config.data)


def simulate_from_sources(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str] | None,
                          sources: Sequence[str] = (), preprocess: Sequence[str] = (), *, seed: int | None = None,
                          shapes: Mapping[str, Sequence[int]] | None = None, **options: Any) -> SimulateResult:
    """What `dumpcmp simulate` does: the `-i` sources and `--preprocess` scripts are read as `dumpcmp golden`
    reads them (`dumpcmp.onnx.inputs.plan_inputs`), every sample becoming one data_index."""
    if not Path(model_path).is_file():
        raise NotFoundError(f"{model_path}: no such model file")
    plans, count = plan_inputs(model_path, sources, preprocess, seed, shapes)
    samples = [load_sample(plans, k, seed) for k in range(count)]
    try:
        return simulate(model_path, out_dir, samples=samples, seed=seed, **options)
    except DumpcmpError as error:
        raise with_free_dims_hint(error, plans) from error
