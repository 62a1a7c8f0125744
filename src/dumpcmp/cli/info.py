"""`dumpcmp info PATH... [--json]`: what is in dump files, .npy files and whole dump trees.

For a dump: the op name (header) and op type (file name), and every input, output, buffer and workspace with
dtype, device format, shape, original shape and bytes. For a .npy file: dtype, shape and bytes, read from its
header through a memory mapping (the data is never read). For a folder: the tree is scanned and every dump header
read in parallel; dumps are listed per run (device / model / iteration), then ground-truth and converted files,
then a summary; files that cannot be used are listed on stderr with the reason.

Exit code: 0 when every PATH gave something usable; 2 when a PATH does not exist, a named file cannot be read
(corrupt, truncated, not a dump), or a folder holds no usable file. Everything readable is printed either way, and
a folder with some bad files among good ones still exits 0 (the bad ones are reported on stderr and in the JSON).

JSON (``--json``), one object on stdout::

    {"ok": bool,                              # false exactly when the exit code is 2
     "paths": [                               # one item per PATH, in order
       {"path": str, "kind": "dump", "file": DUMP},
       {"path": str, "kind": "npy", "file": NPY},
       {"path": str, "kind": "sigmastar", "file": SIGMASTAR},   # a SigmaStar DumpDebug dump (.bin or .txt)
       {"path": str, "kind": "stats", "file": STATS},
       {"path": str, "kind": "tree", "root": str,
        "runs": [{"key": RUN, "dumps": [DUMP, ...]}, ...],      # execution order within a run
        "ground_truth": [DUMP | NPY, ...],    # newest file per {op_name}.{output_index}
        "superseded": [str, ...],             # older ground-truth files of the same keys (paths)
        "converted": [NPY, ...],
        "stats": [STATS, ...],                # statistics dumps (statistic.csv), by run
        "skipped": [{"path": str, "reason": str}, ...],
        "summary": {"runs": int, "dumps": int, "ground_truth": int, "converted": int, "stats": int,
                    "skipped": int}},
       {"path": str, "kind": "error", "error": str,
        "skipped": [{"path": str, "reason": str}, ...]}]}   # why each file of an unusable folder was skipped
    RUN  = {"layout": "model"|"single_op"|"flat", "folder": str, "time": str|null, "device_id": int|null,
            "model_name": str|null, "model_id": int|null, "data_index": int|null}
    NAME = null (the file name fits no scheme) or {"scheme": "device"|"pb"|"quant"|"npy"|"converted", ...the
           parsed fields: device: op_type, op_name, task_id, stream_id, dump_number, timestamp,
           ffts: null|{task_type, context_id, thread_id, device_id}; pb/quant/npy: op_name, output_index,
           timestamp; converted: original, kind, index, shape}
    DUMP = {"path": str, "file_name": str, "name": NAME, "type": "dump", "op_name": str (from the header),
            "op_type": str|null (from the file name), "version": str, "dump_time": int, "legacy": bool,
            "file_size": int, "tensors": [TENSOR, ...]}
    TENSOR = {"kind": "input"|"output"|"buffer"|"workspace", "index": int, "data_type": str, "format": str,
              "shape": [int], "original_shape": [int]|null, "sub_format": int, "size": int (bytes)}
    SIGMASTAR = {"path": str, "file_name": str, "type": "sigmastar", "is_float": bool, "text": bool,
                 "file_size": int, "tensors": [{"index": int, "direction": "out"|"in", "slot": int, "name": str,
                 "op_kind": str, "op_index": int, "op_type": str, "data_type": str, "shape": [int], "size": int,
                 "scale": float, "zero_point": int, "constant": bool}, ...]}
    NPY  = {"path": str, "file_name": str, "name": NAME, "type": "npy", "dtype": str, "shape": [int],
            "bytes": int, "fortran_order": bool}
    STATS = {"path": str, "file_name": str, "type": "stats", "run": RUN|null (null for a file named alone),
             "columns": [str, ...] (record fields found), "tensors": int (records), "ops": int}
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import math
import operator
import os
import sys
from typing import Any, Iterable, Iterator

from dumpcmp.dumps import naming
from dumpcmp.errors import DumpcmpError, NamingError, NotFoundError
from dumpcmp.dumps.ground_truth import open_npy, plain_npy
from dumpcmp.dumps.scan import DumpIndex, read_dump_headers, read_dump_records, scan
from dumpcmp.support import jsonfile
from dumpcmp.support.gcpause import paused
from dumpcmp.dumps.sigmastar import is_sigmastar_dump
from dumpcmp.dumps.stats import is_stats_file_name, read_stats

EXIT_OK, EXIT_BAD_INPUT = 0, 2


def add_parser(sub: Any) -> None:
    p = sub.add_parser("info", help="show what dump files, .npy files or dump trees hold",
                       description="Show op name and type, and each tensor's dtype, format, shape, original "
                                   "shape and bytes, for dump files, .npy files or whole dump trees.")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a dump file, a .npy file, a SigmaStar DumpDebug dump (.bin/.txt) or a folder (scanned whole)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout (schema: dumpcmp.cli.info)")
    p.set_defaults(run=run)


# --- gathering ----------------------------------------------------------------------------------------------------

_PLAIN = (int, str, type(None), bool)


def _parsed_dict(parsed: naming.ParsedName) -> dict[str, Any]:
    """The fields of a parsed name (what dataclasses.asdict gives, shape as a list), without asdict's deep copy of
    every field: a tree of 10^6 dumps has as many names."""
    names, values = _fields_of(type(parsed))
    out: dict[str, Any] = {"scheme": parsed.scheme}
    out.update(zip(names, values(parsed)))
    for field, value in out.items():
        if type(value) not in _PLAIN:
            if dataclasses.is_dataclass(value):
                out[field] = dataclasses.asdict(value)  # type: ignore[arg-type]
            elif isinstance(value, tuple):
                out[field] = list(value)
    return out


@functools.cache
def _fields_of(cls: type) -> tuple[tuple[str, ...], Any]:
    names = tuple(f.name for f in dataclasses.fields(cls))
    get = operator.attrgetter(*names)
    return names, (get if len(names) > 1 else lambda value: (get(value),))


def _name_dict(file_name: str, folder: str) -> dict[str, Any] | None:
    """The parsed name of a file given by the user (resolved through mapping.csv if hashed), or None."""
    name = naming.file_name_of(os.path.join(folder, file_name))
    try:
        return _parsed_dict(naming.parse_name(name))
    except NamingError:
        return None


def _dump_dict(dump: Any, name: dict[str, Any] | None) -> dict[str, Any]:
    tensors = []
    for t in dump.descs():  # the core's records: their fields without a Tensor and its properties over them
        original_shape = t.original_shape
        tensors.append({
            "kind": t.kind, "index": t.index, "data_type": t.data_type, "format": t.format, "shape": list(t.shape),
            "original_shape": None if original_shape is None else list(original_shape),
            "sub_format": t.sub_format, "size": t.size,
        })
    info = {"path": dump.path, "file_name": os.path.basename(dump.path), "name": name, "type": "dump",
            "op_name": dump.op_name, "op_type": name.get("op_type") if name else None, "version": dump.version,
            "dump_time": dump.dump_time, "legacy": dump.legacy, "file_size": dump.file_size, "tensors": tensors}
    if name and name.get("op_type") == "Opdebug" and name.get("op_name") == "Node_OpDebug":
        info["overflow"] = _opdebug_list(dump)
    return info


def _opdebug_list(dump: Any) -> list[dict[str, Any]]:
    """An OpDebug file's overflow records (docs/formats.md#opdebug-files), or what is wrong with each."""
    from dumpcmp.dumps.opdebug import parse_opdebug_bytes

    records = []
    for t in dump.outputs:
        try:
            if t.problem():
                raise DumpcmpError(t.problem())
            record = parse_opdebug_bytes(t.raw().tobytes(), t.name, t.index)
        except DumpcmpError as error:
            records.append({"output": t.index, "error": str(error)})
            continue
        records.append({"output": t.index, "layout": "current" if record.new_layout else "old",
                        "overflows": [dict(o.fields, type=o.kind) for o in record.overflows],
                        "warnings": list(record.warnings)})
    return records


@functools.cache
def _dtype_of(descr: str) -> tuple[str, int]:
    from dumpcmp.support.lazy_numpy import np

    dtype = np.dtype(descr)
    return str(dtype), dtype.itemsize


def _npy_dict(path: str, name: dict[str, Any] | None) -> dict[str, Any]:
    plain = plain_npy(path)  # a plain header (what golden and NumPy write): read without NumPy, nothing mapped
    if plain is not None:
        dtype, itemsize = _dtype_of(plain.descr)
        return {"path": path, "file_name": os.path.basename(path), "name": name, "type": "npy",
                "dtype": dtype, "shape": list(plain.shape), "bytes": math.prod(plain.shape) * itemsize,
                "fortran_order": False}
    array = open_npy(path)
    return {"path": path, "file_name": os.path.basename(path), "name": name, "type": "npy",
            "dtype": str(array.dtype), "shape": [int(d) for d in array.shape], "bytes": int(array.nbytes),
            "fortran_order": bool(array.flags.f_contiguous and not array.flags.c_contiguous)}


def _stats_dict(path: str, run: dict[str, Any] | None) -> dict[str, Any]:
    f = read_stats(path)
    return {"path": path, "file_name": os.path.basename(path), "type": "stats", "run": run, "columns": f.columns,
            "tensors": len(f), "ops": len(f.op_names)}


def _file_info(path: str) -> dict[str, Any]:
    """A named file: .npy by its extension, a statistics dump by its name (statistic.csv), anything else read as a
    dump (whatever its name)."""
    from dumpcmp.dumps.dump import open_dump

    if is_stats_file_name(os.path.basename(path)):
        return {"path": path, "kind": "stats", "file": _stats_dict(path, None)}
    name = _name_dict(os.path.basename(path), os.path.dirname(path) or ".")
    if path.endswith(".npy"):
        return {"path": path, "kind": "npy", "file": _npy_dict(path, name)}
    if is_sigmastar_dump(path):
        return {"path": path, "kind": "sigmastar", "file": sigmastar_dict(path)}
    return {"path": path, "kind": "dump", "file": _dump_dict(open_dump(path), name)}


_HEADER_BATCH = 4096  # dump headers read (in parallel) and held at a time while a tree's records are written


def _dump_records(entries: list[Any], skipped: list[dict[str, str]], batch: int = 0, render: bool = False,
                  into: jsonfile.Streamed | None = None) -> Iterator[Any]:
    """The records of a run's dumps; with `render`, as `jsonfile.Rendered` text where the core writes them, at the
    level of the list `into` once it is being written (no indenting pass over the text after)."""
    if render:
        def level() -> int:  # asked once a batch, before its records are made
            return 0 if into is None else into.level

        for item in read_dump_records(entries, batch=batch or _HEADER_BATCH, level=level):
            if type(item) is jsonfile.Rendered:  # records the core wrote: one Rendered for the run of them
                yield item
                continue
            entry, dump, skip = item
            if skip is not None:
                skipped.append({"path": skip.path, "reason": skip.reason})
            else:
                yield _dump_dict(dump, _parsed_dict(entry.name))
        return
    for entry, dump, skip in read_dump_headers(entries, batch=batch or _HEADER_BATCH):
        if skip is not None:
            skipped.append({"path": skip.path, "reason": skip.reason})
        else:
            yield _dump_dict(dump, _parsed_dict(entry.name))


def _tried(records: Iterable[tuple[str, Any]], skipped: list[dict[str, str]], strip: bool = False) -> Iterator[Any]:
    # (path, a function making the record): the records that could be made; why the others could not, in skipped
    for path, make in records:
        try:
            yield make()
        except DumpcmpError as error:
            reason = str(error)  # a Skipped names the file already
            skipped.append({"path": path, "reason": reason.removeprefix(path + ": ") if strip else reason})


def _gt_records(index: DumpIndex) -> Iterator[tuple[str, Any]]:
    for entry in index.ground_truth:
        name, path = _parsed_dict(entry.name), entry.path  # (path joined on access: once)
        if entry.name.extension == naming.NPY:
            yield path, functools.partial(_npy_dict, path, name)
        else:
            yield path, lambda entry=entry, name=name: _dump_dict(entry.open(), name)


def _tree_item(path: str, index: DumpIndex, render: bool = False) -> dict[str, Any]:
    """The tree's item with its runs, ground truth, converted files, statistics and skipped files as
    `jsonfile.Streamed` lists, made (headers read a batch at a time) as they are written or listed; `summary` is
    filled in once the skipped files are listed (all the others are then made). With `render`, dump records are
    `jsonfile.Rendered` text where the core writes them (for `jsonfile.write_text` only)."""
    skipped: list[dict[str, str]] = [{"path": s.path, "reason": s.reason} for s in index.skipped]
    counts = {"runs": 0, "dumps": 0, "ground_truth": 0, "converted": 0, "stats": 0}
    summary: dict[str, int] = {}

    def counted(what: str, records: Iterable[Any]) -> Iterator[Any]:
        for record in records:
            counts[what] += record.count if type(record) is jsonfile.Rendered else 1
            yield record

    def runs() -> Iterator[dict[str, Any]]:
        for group in index:
            into = jsonfile.Streamed(None)
            dumps = _dump_records(group.entries, skipped, render=render, into=into)
            first = next(dumps, None)
            if first is None:  # no header of the run could be read
                continue
            counts["runs"] += 1
            into.items = counted("dumps", itertools.chain([first], dumps))
            yield {"key": group.key.to_dict(), "dumps": into}

    class SkippedThenSummary:  # listed again by _report once written
        def __iter__(self) -> Iterator[dict[str, str]]:
            skipped.sort(key=lambda s: s["path"])
            summary.update(counts, skipped=len(skipped))
            return iter(skipped)

    def batched(records: Iterable[Any]) -> Iterator[Any]:  # ground truth's records written by orjson 1,024 at a time
        if not render:
            yield from records
            return
        for batch in iter(lambda: list(itertools.islice(records, 1024)), []):
            text = jsonfile.rendered(batch)
            yield from batch if text is None else (text,)

    converted = ((c.path, functools.partial(_npy_dict, c.path, _parsed_dict(c.name))) for c in index.converted)
    stats = ((st.path, functools.partial(_stats_dict, st.path, st.key.to_dict())) for st in index.stats)
    return {"path": path, "kind": "tree", "root": index.root, "runs": jsonfile.Streamed(runs()),
            "ground_truth": jsonfile.Streamed(counted("ground_truth", batched(_tried(_gt_records(index), skipped)))),
            "superseded": [e.path for e in index.ground_truth.superseded],
            "converted": jsonfile.Streamed(counted("converted", _tried(converted, skipped))),
            "stats": jsonfile.Streamed(counted("stats", _tried(stats, skipped, strip=True))),
            "skipped": jsonfile.Streamed(SkippedThenSummary()), "summary": summary}


def _made(value: Any) -> Any:
    """`value` with every Streamed list made a list (in the order write_text would write it)."""
    if isinstance(value, jsonfile.Streamed):
        return [_made(v) for v in value.items]
    if isinstance(value, dict):
        return {k: _made(v) for k, v in value.items()}
    return value


def _usable(index: DumpIndex) -> bool:
    """Whether the tree's item has a record (what its summary will count), found by making records until one is
    made: usually the first header read."""
    ignored: list[dict[str, str]] = []
    for group in index:
        if next(_dump_records(group.entries, ignored, batch=64), None) is not None:
            return True
    item = _tree_item(index.root, DumpIndex(index.root, ground_truth=index.ground_truth, converted=index.converted,
                                            stats=index.stats))
    return any(next(iter(item[what].items), None) is not None for what in ("ground_truth", "converted", "stats"))


def _tree_info(path: str) -> tuple[dict[str, Any], bool]:
    info = _made(_tree_item(path, scan(path, opened=True)))
    s = info["summary"]
    return info, s["dumps"] + s["ground_truth"] + s["converted"] + s["stats"] > 0


def gather(paths: list[str], stream: bool = False) -> tuple[list[dict[str, Any]], bool]:
    """Information on every PATH, and whether all of them were usable (see the module's exit code rule). With
    `stream`, a usable tree's item holds `jsonfile.Streamed` lists, made as `jsonfile.write_text` writes them."""
    items: list[dict[str, Any]] = []
    ok = True
    for path in paths:
        skipped: list[dict[str, str]] = []
        try:
            if os.path.isdir(path):
                if stream:
                    index = scan(path, opened=True)
                    if _usable(index):
                        items.append(_tree_item(path, index, render=True))
                        continue
                info, usable = _tree_info(path)
                if not usable:
                    skipped = info["skipped"]
                    raise NotFoundError(f"{path}: no usable dump or .npy file in this folder"
                                        + (f" ({len(skipped)} skipped)" if skipped else " (it is empty)"))
                items.append(info)
            elif os.path.exists(path):
                items.append(_file_info(path))
            else:
                raise NotFoundError(f"{path}: no such file or directory")
        except NotFoundError as error:
            ok = False
            # a folder with nothing usable still lists why each file was skipped
            items.append({"path": path, "kind": "error", "error": str(error), "skipped": skipped})
        except (DumpcmpError, OSError) as error:
            ok = False
            message = str(error) if isinstance(error, DumpcmpError) else f"{path}: {error.strerror or error}"
            items.append({"path": path, "kind": "error", "error": message, "skipped": []})
    return items, ok


# --- printing -----------------------------------------------------------------------------------------------------

def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _dims(shape: list[int] | None) -> str:
    return "-" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"


def _name_line(name: dict[str, Any] | None) -> str:
    if name is None:
        return "file name fits no naming scheme"
    if name["scheme"] == naming.DEVICE:
        parts = [f"type {name['op_type']}", f"task {name['task_id']}"]
        if name["stream_id"] is not None:
            parts.append(f"stream {name['stream_id']}")
        if name["dump_number"] is not None:
            parts.append(f"dump number {name['dump_number']}")
        parts.append(f"timestamp {name['timestamp']}")
        if name["ffts"]:
            f = name["ffts"]
            parts.append(f"FFTS+ task type {f['task_type']} context {f['context_id']} thread {f['thread_id']} "
                         f"device {f['device_id']}")
        return ", ".join(parts)
    if name["scheme"] == naming.CONVERTED:
        return f"converted {name['kind']} {name['index']} of {name['original']}"
    return f"{name['scheme']}: op {name['op_name']}, output {name['output_index']}, timestamp {name['timestamp']}"


def _print_dump(d: dict[str, Any], indent: str, out: Any) -> None:
    print(f"{indent}{d['file_name']}", file=out)
    version = "old inline format" if d["legacy"] else f"version {d['version'] or '-'}"
    print(f"{indent}  op {d['op_name'] or '-'}; {_name_line(d['name'])}; {version}, {d['file_size']} bytes",
          file=out)
    for t in d["tensors"]:
        label = f"{t['kind']}.{t['index']}"
        if t["kind"] in ("buffer", "workspace"):
            print(f"{indent}  {label:<12} {t['size']} bytes", file=out)
            continue
        sub = f" sub_format {t['sub_format']}" if t["sub_format"] else ""
        print(f"{indent}  {label:<12} {t['data_type']:<10} {t['format'] + sub:<12} shape {_dims(t['shape'])}  "
              f"original {_dims(t['original_shape'])}  {t['size']} bytes", file=out)
    for r in d.get("overflow", []):
        if "error" in r:
            print(f"{indent}  OpDebug {r['error']}", file=out)
        for o in r.get("overflows", []):
            print(f"{indent}  overflow ({r['layout']} OpDebug record): {o['type']} task {o['task_id']} stream "
                  f"{o['stream_id']} status {o['status']}", file=out)


def sigmastar_dict(path: str) -> dict[str, Any]:
    from dumpcmp.dumps.sigmastar import open_sigmastar

    dump = open_sigmastar(path)
    tensors = [{"index": t.index, "direction": t.direction, "slot": t.slot, "name": t.name, "op_kind": t.op_kind,
                "op_index": t.op_index, "op_type": t.op_type, "data_type": t.data_type, "shape": list(t.shape),
                "size": t.size, "scale": t.scale, "zero_point": t.zero_point, "constant": t.constant}
               for t in dump.tensors]
    return {"path": path, "file_name": os.path.basename(path), "type": "sigmastar", "is_float": dump.is_float,
            "text": dump.text, "file_size": dump.file_size, "tensors": tensors}


def print_sigmastar(d: dict[str, Any], indent: str, out: Any) -> None:
    kind = "text" if d["text"] else "binary"
    values = "float32 values" if d["is_float"] else "fixed-point values"
    print(f"{indent}{d['file_name']}", file=out)
    print(f"{indent}  SigmaStar DumpDebug {kind} dump (isFloat: {int(d['is_float'])}, {values}), "
          f"{_count(len(d['tensors']), 'tensor')}, {d['file_size']} bytes", file=out)
    for t in d["tensors"]:
        const = "  constant" if t["constant"] else ""
        print(f"{indent}  {t['index']:>4} {t['direction']:<3} {t['slot']:<3} {t['name']}  {t['op_kind']}"
              f"[{t['op_index']}] {t['op_type']}  {t['data_type']} shape {_dims(t['shape'])}  {t['size']} bytes  "
              f"s: {t['scale']:g} z: {t['zero_point']}{const}", file=out)


def _print_npy(d: dict[str, Any], indent: str, out: Any) -> None:
    order = ", Fortran order" if d["fortran_order"] else ""
    print(f"{indent}{d['file_name']}", file=out)
    print(f"{indent}  {_name_line(d['name'])}; {d['dtype']} shape {_dims(d['shape'])}{order}  {d['bytes']} bytes",
          file=out)


def _print_stats(d: dict[str, Any], indent: str, out: Any) -> None:
    print(f"{indent}{d['path'] if indent else d['file_name']}", file=out)
    print(f"{indent}  statistics: {_count(d['tensors'], 'tensor')} of {_count(d['ops'], 'op')}; columns "
          f"{', '.join(d['columns'])}", file=out)


def _print_file(d: dict[str, Any], indent: str, out: Any) -> None:
    {"npy": _print_npy, "sigmastar": print_sigmastar, "stats": _print_stats}.get(d["type"], _print_dump)(d, indent,
                                                                                                     out)


def _print_tree(t: dict[str, Any], out: Any) -> None:
    s = t["summary"]
    print(f"{t['root']}: {_count(s['runs'], 'run')}, {_count(s['dumps'], 'dump')}, "
          f"{_count(s['ground_truth'], 'ground-truth file')}, {s['converted']} converted, "
          + (f"{_count(s['stats'], 'statistics file')}, " if s["stats"] else "") + f"{s['skipped']} skipped",
          file=out)
    for run in t["runs"]:
        k = run["key"]
        where = []
        for field, label in (("time", "time"), ("device_id", "device"), ("model_name", "model"),
                             ("model_id", "model_id"), ("data_index", "iteration")):
            if k[field] is not None:
                where.append(f"{label} {k[field]}")
        if k["layout"] != "model":
            where.append(f"{k['layout'].replace('_', '-')} folder {k['folder']}")
        print(f"run {' / '.join(where)}: {_count(len(run['dumps']), 'dump')}", file=out)
        for d in run["dumps"]:
            _print_dump(d, "  ", out)
    if t["ground_truth"]:
        print(f"ground truth: {_count(len(t['ground_truth']), 'file')}", file=out)
        for d in t["ground_truth"]:
            _print_file(d, "  ", out)
    if t["converted"]:
        print(f"converted: {_count(len(t['converted']), 'file')}", file=out)
        for d in t["converted"]:
            _print_npy(d, "  ", out)
    if t["stats"]:
        print(f"statistics: {_count(len(t['stats']), 'file')}", file=out)
        for d in t["stats"]:
            _print_stats(d, "  ", out)


def _report(items: list[dict[str, Any]], err: Any) -> None:
    for item in items:
        skipped = item.get("skipped", ())
        for s in skipped.items if isinstance(skipped, jsonfile.Streamed) else skipped:
            print(f"dumpcmp: skipped {s['path']}: {s['reason']}", file=err)
        if item["kind"] == "error":
            print(f"dumpcmp: error: {item['error']}", file=err)


@paused()  # a dict per dump of a tree of 10^6: see dumpcmp.support.gcpause
def run(args: argparse.Namespace) -> int:
    out, err = sys.stdout, sys.stderr
    if args.json:
        # written as it is made, a tree's records a batch of headers at a time; the skipped files are reported
        # once they are all known, after the JSON
        items, ok = gather(list(args.paths), stream=True)
        jsonfile.write_text({"ok": ok, "paths": items}, out.write)
        out.flush()
        _report(items, err)
        return EXIT_OK if ok else EXIT_BAD_INPUT
    items, ok = gather(list(args.paths))
    _report(items, err)
    first = True
    for item in items:
        if item["kind"] == "error":
            continue
        if not first:
            print(file=out)
        first = False
        if item["kind"] == "tree":
            _print_tree(item, out)
        else:
            _print_file(item["file"], "", out)
    return EXIT_OK if ok else EXIT_BAD_INPUT
