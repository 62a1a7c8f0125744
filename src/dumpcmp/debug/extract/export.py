"""Sub-models with their data (MindStudio's "Dump Network", for ONNX): an ONNX model, the start and end layers of a
suspicious region (original node names, tensor names or device op names), a device dump run with its graph JSON and
optionally the ground truth flow in; out comes one folder `OUT/dump_result_YYYY_MM_DD_HH_MM_SS/` holding the region
as a runnable model (`model.onnx`, weights inside), the dump files of the region's device ops (`dump_data/`, linked
or copied), the region's input data from the device (or the ground truth) as `.npy` in the original layout and as raw
`.bin` for the device, the ground truth of its outputs (`expected/`), an acl.json dumping exactly its layers,
`export.log` in the original tool's format and the commands to run and compare it (`commands.sh`). The folder is
built under a temporary name beside it and renamed at the end: it is whole or absent. `list_layers` prints the
original network's layers for choosing names.

    >>> r = extract("net.onnx", ["conv2"], ["add1"], dump="dump/", graph_json="net.json", ground_truth="gt/",
    ...             out="sub/")
    >>> r.folder          # sub/dump_result_2026_11_24_02_30_00
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from dumpcmp.debug.region import Region
from dumpcmp.dumps import naming
from dumpcmp.errors import ConfigError
from dumpcmp.support.files import atomic_folder, made_folder
from dumpcmp.debug.extract.network import Layer, LayerSpan, Network

__all__ = ["BIN_DTYPES", "ExtractResult", "bin_dtype_of", "extract", "list_layers", "load_network"]

BIN_DTYPES = {"fp16": "float16", "float16": "float16", "fp32": "float32", "float32": "float32", "int8": "int8",
              "uint8": "uint8", "int32": "int32", "int64": "int64"}
MODEL_NAME = "model"


@dataclass
class ExtractResult:
    """What `extract` wrote."""

    folder: Path
    span: LayerSpan
    """The layers exported and their region (the sub-model's nodes, inputs and outputs)."""
    model: Path
    inputs: dict[str, Path]
    """tensor name -> inputs/NAME.npy (NAME.bin beside it)."""
    expected: dict[str, Path]
    dump_files: list[Path]
    acl_json: Path
    log: Path
    commands: list[str]
    layers: list[str]
    """The acl.json's layer list."""
    sources: dict[str, str] = field(default_factory=dict)
    """tensor name -> where its data came from."""
    notes: list[str] = field(default_factory=list)


def load_network(model_path: str | os.PathLike[str], graph_json: str | os.PathLike[str] | None = None) -> Network:
    """The ONNX model (external data loaded) and its compiled graph, ready for naming layers and cutting regions."""
    from dumpcmp.graph.graph_json import load_graph
    from dumpcmp.debug.region import OriginalModel

    original = OriginalModel.load(model_path)
    graph = load_graph(graph_json) if graph_json is not None else None
    return Network(original, graph)


def list_layers(model_path: str | os.PathLike[str], graph_json: str | os.PathLike[str] | None = None,
                grep: str | None = None) -> list[Layer]:
    """The original network's layers in execution order (those whose name, type, outputs or device ops contain
    `grep`, case-insensitive)."""
    layers = load_network(model_path, graph_json).layers()
    if grep:
        g = grep.lower()
        layers = [x for x in layers if any(g in s.lower() for s in (x.name, x.op_type, *x.outputs, *x.device_ops))]
    return layers


def bin_dtype_of(array: np.ndarray, bin_type: np.dtype) -> np.dtype:
    """The dtype of an input's raw .bin: `bin_type` for floating-point data, the data's own for integers and
    booleans (shape tensors and indices reach the device as they are)."""
    return bin_type if array.dtype.kind == "f" else array.dtype


def _file_stem(name: str, used: set[str]) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "tensor"
    stem = stem[:150]
    base, k = stem, 1
    while stem.lower() in used:
        k += 1
        stem = f"{base}_{k}"
    used.add(stem.lower())
    return stem


def _source_key(net: Network, tensor: str) -> tuple[str, int]:
    """(node, output index) under which the ground truth and the pairing know a tensor."""
    p = net.original.producer.get(tensor)
    if p is None:
        return tensor, 0
    return p, list(net.original.nodes[p].output).index(tensor)


def _input_data(net: Network, region: Region, group: Any, gt: Any, data: str) -> tuple[dict[str, np.ndarray],
                                                                                          dict[str, str]]:
    from dumpcmp.debug.extract.data import decode, find_tensors, ground_truth

    wanted = {x: _source_key(net, x) for x in region.inputs}
    arrays: dict[str, np.ndarray] = {}
    sources: dict[str, str] = {}
    missing: list[str] = []
    if data == "device":
        found = find_tensors(group, net.graph, wanted)
        for x in region.inputs:
            if x not in found:
                missing.append(x)
                continue
            src = found[x]
            arrays[x] = decode(src.tensor(), shape=net.original.shape(x), dtype=net.original.dtype(x),
                               origin_format=src.pair.origin_format)
            sources[x] = f"device dump {src.describe()}"
    else:
        for x in region.inputs:
            node, idx = wanted[x]
            a = ground_truth(gt, node, idx, net.original.shape(x), net.original.dtype(x))
            if a is None:
                missing.append(x)
                continue
            arrays[x] = a
            sources[x] = f"ground truth {gt.get(node, idx).path}"
    if missing:
        where = "the device dump (with -f, through the graph JSON)" if data == "device" else "the ground truth"
        hint = ""
        them = "them" if len(missing) > 1 else "it"
        if data == "device" and gt is not None and all(gt.get(*wanted[x]) is not None for x in missing):
            hint = f"; the ground truth has {them}: pass --data ground-truth"
        elif data == "device":
            hint = (f"; no dumped device op wrote {them} (fused away, or not dumped): start the region at a layer "
                    "whose input a dumped op wrote, dump with dump_mode all, or pass -r GT --data ground-truth")
        raise ConfigError(f"the region's input{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))} "
                          f"ha{'ve' if len(missing) > 1 else 's'} no data in {where}{hint}")
    return arrays, sources


def _dump_files(net: Network, span: LayerSpan, group: Any) -> tuple[list[str], list[Any]]:
    """(device ops touching the layers, their newest dump entries in execution order)."""
    from dumpcmp.dumps.naming import sanitize

    touching, _ = net.device_ops(span)
    if net.graph is None:
        touching = span.layers
    wanted = {sanitize(n) for n in touching}
    entries = [e for e in group.newest().values() if sanitize(e.op_name) in wanted]
    return touching, entries


def _acl_layers(net: Network, span: LayerSpan) -> list[str]:
    """The compiled op names the sub-model's layers get: device ops wholly inside the span keep their name,
    layers the span splits off a fused op are named after themselves."""
    _, within = net.device_ops(span)
    covered = {o for op in within for o in net.originals_of.get(op, [])}
    return list(dict.fromkeys(within + [n for n in span.layers if n not in covered]))


def _log_text(net: Network, span: LayerSpan, final: Path, inputs: Mapping[str, np.ndarray],
              sources: Mapping[str, str], entries: Sequence[Any], group: Any) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    lines = []
    for x in span.region.inputs:
        a = inputs[x]
        lines += [f"{stamp}  Add Input Into Model:", f'name: "{x}"', f"type: {a.dtype.name}",
                  "shape {", *[f"  dim: {d}" for d in a.shape], "}", f"data: {sources[x]}", ""]
    lines.append(f"{stamp}  Output Dump Path:{final / 'dump_data'}")
    by_op = {e.op_name: e for e in group.newest().values()}
    from dumpcmp.dumps.naming import sanitize
    from dumpcmp.graph.pairing import graph_op_of

    by_sanitized = {sanitize(k): v for k, v in by_op.items()}
    for e in entries:
        graph_op = graph_op_of(net.graph, e.op_name) if net.graph is not None else None
        originals = net.originals_of.get(graph_op.name, []) if graph_op is not None else [e.op_name]
        inputs_from: list[str] = []
        if graph_op is not None:
            for prod in net.graph.producers(graph_op):
                if prod is None:
                    continue
                src = by_op.get(prod[0].name) or by_sanitized.get(sanitize(prod[0].name))
                if src is not None and src.file_name not in inputs_from:
                    inputs_from.append(src.file_name)
        lines += [f"{stamp}  Dump Layer:[{', '.join(originals)}]", f"Output File:{e.file_name}"]
        lines += [f"Input File:{f}" for f in inputs_from]
    lines.append(f"{stamp}  Export Layer:{','.join(span.layers)}")
    return "\n".join(lines) + "\n"


def _commands(final: Path, stems: Mapping[str, str], precision: str) -> list[str]:
    feeds = " ".join(shlex.quote(f"{x}=inputs/{s}.npy") for x, s in stems.items())
    return [
        f"cd {shlex.quote(os.fspath(final.absolute()))}",
        "# the sub-model in onnxruntime (fp32) on the exported inputs: every layer's output, as ground truth",
        f"dumpcmp golden model.onnx -i {feeds} -o sub_golden",
        "# the sub-model on the device, dumping exactly the exported layers: compile model.onnx (atc --framework=5"
        " --json=model.json), run it on inputs/*.bin with acl.json. Without a device, the simulator:",
        f"dumpcmp simulate model.onnx --precision {precision} -i {feeds} --acl-json acl.json -o device_dump",
        "# compare the sub-model's device run with its onnxruntime run (expected/ holds the full network's ground "
        "truth of the outputs)",
        "dumpcmp compare -l device_dump -r sub_golden -f device_dump/model.json -o result.csv",
    ]


def _free_name(out: Path, now: float) -> Path:
    for step in range(3600):
        name = time.strftime("dump_result_%Y_%m_%d_%H_%M_%S", time.localtime(now + step))
        if not (out / name).exists():
            return out / name
    raise ConfigError(f"{out}: an hour of dump_result folders after now exists already; choose another -o")


def _link(src: str, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def extract(model_path: str | os.PathLike[str], starts: Sequence[str], ends: Sequence[str], *,
            dump: str | os.PathLike[str], graph_json: str | os.PathLike[str] | None,
            out: str | os.PathLike[str], ground_truth: str | os.PathLike[str] | None = None,
            data: str = "device", bin_dtype: str = "fp16", precision: str = "fp16",
            selection: Mapping[str, Any] | None = None, now: float | None = None,
            gt_sample: int | Mapping[int, int] | None = None) -> ExtractResult:
    """Write the region from `starts` to `ends` with its data (module docstring). Every check runs before anything
    is written; the folder appears whole or not at all. The ground truth of iteration k is sample folder k/ (as
    compare pairs them), or `gt_sample` (`--gt-sample`)."""
    import onnx

    from dumpcmp.device.acljson import check_acl_json, has_errors
    from dumpcmp.debug.extract.data import ground_truth as gt_array
    from dumpcmp.debug.extract.data import run_ground_truth, select_run

    if data not in ("device", "ground-truth"):
        raise ConfigError(f"--data {data!r}: choose device or ground-truth")
    if bin_dtype not in BIN_DTYPES:
        raise ConfigError(f"--bin-dtype {bin_dtype!r}: choose one of {', '.join(BIN_DTYPES)}")
    if data == "ground-truth" and ground_truth is None:
        raise ConfigError("--data ground-truth needs the ground truth folder (-r)")
    out_dir = Path(out)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir}: exists and is not a folder")
    net = load_network(model_path, graph_json)
    span = net.span(starts, ends)
    region = span.region
    group = select_run(dump, **{k: v for k, v in (selection or {}).items() if v is not None})
    gt = run_ground_truth(ground_truth, group, gt_sample) if ground_truth is not None else None
    if gt is not None and len(gt) == 0:
        raise ConfigError(f"{ground_truth}: no ground-truth files ({{op}}.{{index}}.{{timestamp}}.npy)")
    arrays, sources = _input_data(net, region, group, gt, data)
    notes = list(span.notes) + (gt.notes if gt is not None else [])
    expected: dict[str, np.ndarray] = {}
    if gt is not None:
        for o in region.outputs:
            a = gt_array(gt, *_source_key(net, o), net.original.shape(o), net.original.dtype(o))
            if a is None:
                notes.append(f"no ground truth for the output {o!r}: expected/ leaves it out")
            else:
                expected[o] = a
    sub = net.sub_model(span, arrays)
    touching, entries = _dump_files(net, span, group)
    if not entries:
        notes.append(f"the dump run holds no file of the region's device ops ({', '.join(touching[:5])}): "
                     "dump_data/ is empty")
    layers = _acl_layers(net, span)
    bin_type = np.dtype(BIN_DTYPES[bin_dtype])

    # The folder is built privately beside its final name and renamed at the end without replacing anything: of
    # two runs that picked one name, the second gets the "already exists" error; only folders this run created and
    # left empty are removed (never another run's export).
    with made_folder(out_dir):
        final = _free_name(out_dir, time.time() if now is None else now)
        with atomic_folder(final, force=False, what="extract folder") as tmp:
            result = _write(tmp, final, net, span, sub, arrays, sources, expected, entries, layers, bin_type,
                            precision, group, notes, onnx)
            problems = check_acl_json(tmp / "acl.json", remote=True)
            if has_errors(problems):  # pragma: no cover - new_acl_json only writes valid files
                raise ConfigError("the written acl.json is not valid: " + "; ".join(map(str, problems)))
    return result


def _write(tmp: Path, final: Path, net: Network, span: LayerSpan, sub: Any, arrays: Mapping[str, np.ndarray],
           sources: Mapping[str, str], expected: Mapping[str, np.ndarray], entries: Sequence[Any],
           layers: list[str], bin_type: np.dtype, precision: str, group: Any, notes: list[str],
           onnx: Any) -> ExtractResult:
    from dumpcmp.support.files import atomic_write, atomic_write_text
    from dumpcmp.device.acljson import acl_json_text, new_acl_json

    model_path = atomic_write(tmp / f"{MODEL_NAME}.onnx", lambda f: f.write(sub.SerializeToString()))
    (tmp / "inputs").mkdir()
    used: set[str] = set()
    stems = {x: _file_stem(x, used) for x in span.region.inputs}
    inputs: dict[str, Path] = {}
    for x, stem in stems.items():
        a = arrays[x]
        inputs[x] = atomic_write(tmp / "inputs" / f"{stem}.npy", lambda f, a=a: np.save(f, a))
        raw = bin_dtype_of(a, bin_type)
        atomic_write(tmp / "inputs" / f"{stem}.bin", lambda f, a=a, raw=raw: f.write(a.astype(raw).tobytes()))
    exp_paths: dict[str, Path] = {}
    if expected:
        (tmp / "expected").mkdir()
        used_e: set[str] = set()
        for o, a in expected.items():
            exp_paths[o] = atomic_write(tmp / "expected" / f"{_file_stem(o, used_e)}.npy",
                                        lambda f, a=a: np.save(f, a))
    (tmp / "dump_data").mkdir()
    dump_files = []
    for e in entries:
        _link(e.path, tmp / "dump_data" / e.file_name)
        dump_files.append(final / "dump_data" / e.file_name)
    hashed = [e for e in entries if e.hashed]
    if hashed:  # their rows go with them: without mapping.csv a hashed file names no op
        atomic_write_text(tmp / "dump_data" / naming.MAPPING_FILE, "".join(
            naming.mapping_row(e.file_name, naming.file_name_of(e.path)) for e in hashed))
    (tmp / "device_dump").mkdir()
    config = new_acl_json([(MODEL_NAME, layers)], dump_path=os.fspath((final / "device_dump").absolute()))
    acl = atomic_write_text(tmp / "acl.json", acl_json_text(config))
    log = atomic_write_text(tmp / "export.log", _log_text(net, span, final.absolute(), arrays, sources, entries,
                                                          group))
    commands = _commands(final, stems, precision)
    atomic_write_text(tmp / "commands.sh", "#!/bin/sh\n# dumpcmp extract: run the sub-model and compare it\n"
                      + "\n".join(commands) + "\n")
    del acl, log, model_path
    return ExtractResult(final, span, final / f"{MODEL_NAME}.onnx",
                         {x: final / "inputs" / p.name for x, p in inputs.items()},
                         {o: final / "expected" / p.name for o, p in exp_paths.items()},
                         dump_files, final / "acl.json", final / "export.log", commands, layers, dict(sources), notes)
