"""Index a dump tree by file names alone: which operators were dumped, per device, model and iteration.

    >>> from dumpcmp.dumps.scan import scan
    >>> index = scan("/home/user/output")
    >>> run = index.select(device_id=0, model_name="ResNet-50", data_index=0)
    >>> [e.op_name for e in run]            # execution order (timestamp)
    >>> index.ground_truth.get("conv1", 0)  # newest {op_name}.{output_index}.*.npy, if the tree has any
    >>> index.skipped                       # every file that could not be used, with the reason

Layouts recognised, from the folder that holds the files (its absolute path, so pointing `scan` at any level of
a tree, even at the files' own folder, gives the same keys):

- ``{dump_path}/{time YYYYMMDDhhmmss}/{device_id}/{model_name}/{model_id}/{data_index}/{files}``: layout ``model``
- ``{dump_path}/{time}/{device_id}/{files}``: layout ``single_op``
- ``{dump_path}/{device_id}/{op_name}/{files}`` (the folder is named like the op of its files): layout ``single_op``,
  every op folder of one device in one run
- anything else: layout ``flat``, one run per folder

Names are parsed with `dumpcmp.dumps.naming`; a digits-only name is resolved through the folder's ``mapping.csv``.
Each folder is listed in C++ (``_core.scan.list_folder``: its device dump and ground-truth names parsed, checked
readable and made entries there, by the C++ name rules `naming.parse_name` calls too); every other name takes the
Python rules here.
No file is opened unless ``read_headers=True``, which reads every dump header in parallel in C++ and moves the
files that do not open to `skipped`. Framework dumps (``.pb``, ``.quant``) and ground-truth ``.npy`` files go to
`DumpIndex.ground_truth` (newest wins per ``{op_name}.{output_index}``), NPU dumps converted to ``.npy`` to
`DumpIndex.converted`. Statistics dumps (``statistic.csv``, what ``"dump_data": "stats"`` makes the runtime write;
`dumpcmp.dumps.stats`) go to `DumpIndex.stats`, each with the run its folder is.
"""

from __future__ import annotations

import errno
import operator
import os
import re
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any, Callable, Container, Iterable, Iterator

from dumpcmp.dumps import naming
from dumpcmp.dumps.ground_truth import open_npy
from dumpcmp.errors import NamingError, NotFoundError
from dumpcmp.dumps.naming import ConvertedName, DeviceDumpName, FftsSuffix, FrameworkDumpName
from dumpcmp.dumps.stats import is_stats_file_name
from dumpcmp.support import jsonfile
from dumpcmp.support.gcpause import paused
from dumpcmp.support.native import core

__all__ = [
    "ConvertedEntry", "DumpEntry", "DumpGroup", "DumpIndex", "GroundTruthEntry", "GroundTruthIndex", "RunKey",
    "Skipped", "SELECT_FLAGS", "StatsEntry", "read_dump_headers", "read_dump_records", "scan", "scan_ground_truth",
    "several_runs_error",
]

MODEL, SINGLE_OP, FLAT = "model", "single_op", "flat"
SELECT_FLAGS = "--iteration, --time, --device, --model or --model-id"
"""The command-line options that pick one run of a dump tree, as every message that asks for one names them."""

_TIME = re.compile(r"[0-9]{14}\Z")
_NO_SCHEME = ("name fits no naming scheme (not an NPU dump {op_type}.{op_name}.{task_id}[.{stream_id}].{timestamp}, "
              "not {op_name}.{output_index}.{timestamp}.pb|.quant|.npy, not a converted .npy)")


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file or folder a scan could not use, and why."""

    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class RunKey:
    """One run of dumps: a device, model and iteration (``data_index``), or a single-op or flat folder.

    Fields the layout does not have are None. `folder` is where the run's files are (for single-op dumps by op
    name, the device folder above the op folders).
    """

    layout: str
    folder: str
    time: str | None = None
    device_id: int | None = None
    model_name: str | None = None
    model_id: int | None = None
    data_index: int | None = None

    def sort_key(self) -> tuple[Any, ...]:
        return (self.time or "", -1 if self.device_id is None else self.device_id, self.model_name or "",
                -1 if self.model_id is None else self.model_id, -1 if self.data_index is None else self.data_index,
                self.folder)

    def describe(self) -> str:
        """``time 20240101120000 / device 0 / model resnet50 / model_id 1 / iteration 0``, or the folder."""
        parts = []
        if self.time is not None:
            parts.append(f"time {self.time}")
        if self.device_id is not None:
            parts.append(f"device {self.device_id}")
        if self.model_name is not None:
            parts.append(f"model {self.model_name}")
        if self.model_id is not None:
            parts.append(f"model_id {self.model_id}")
        if self.data_index is not None:
            parts.append(f"iteration {self.data_index}")
        if self.layout == SINGLE_OP:
            parts.append("single-op")
        return " / ".join(parts) if self.layout != FLAT else f"folder {self.folder}"

    def to_dict(self) -> dict[str, Any]:
        return {"layout": self.layout, "folder": self.folder, "time": self.time, "device_id": self.device_id,
                "model_name": self.model_name, "model_id": self.model_id, "data_index": self.data_index}


class _InFolder:
    """A file of a folder as the scan holds 10^6 of them: the folder's path (``.../``, one string object shared by
    every entry of the folder) and the file's name, `path` joined on access; frozen, compared, hashed and shown as
    the dataclass of (path, file_name, name) it stands for. `path` is exactly the text given to the constructor."""

    __slots__ = ()

    def _set(self, path: str, file_name: str, name: Any) -> None:
        # the head is path without its file_name; a path not ending in it is kept whole, in a 1-tuple
        cut = len(path) - len(file_name)
        head: Any = path[:cut] if file_name and path.endswith(file_name) else (path,)
        object.__setattr__(self, "head", head)
        object.__setattr__(self, "file_name", file_name)
        object.__setattr__(self, "name", name)

    @property
    def path(self) -> str:
        head = self.head  # type: ignore[attr-defined]
        return head + self.file_name if type(head) is str else head[0]  # type: ignore[attr-defined]

    def __setattr__(self, attr: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {attr!r}")

    def __delattr__(self, attr: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {attr!r}")

    def _key(self) -> tuple[Any, ...]:
        return (self.path, self.file_name, self.name)  # type: ignore[attr-defined]

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        path, file_name, name = self._key()
        return f"{type(self).__name__}(path={path!r}, file_name={file_name!r}, name={name!r})"


class DumpEntry(_InFolder):
    """One NPU dump file. `file_name` is the name on disk (digits if hashed), `name` the parsed (resolved) name.
    `dump` is the opened header when the scan read headers. Compact (issue #35): see `_InFolder`; the scan's C++
    listing makes these without `__init__`."""

    __slots__ = ("head", "file_name", "name", "dump")
    file_name: str
    name: DeviceDumpName
    dump: Any

    def __init__(self, path: str, file_name: str, name: DeviceDumpName, dump: Any = None) -> None:
        self._set(path, file_name, name)
        object.__setattr__(self, "dump", dump)

    def with_dump(self, dump: Any) -> DumpEntry:
        """This entry with `dump` as its opened header (None: without one); its folder's path still shared."""
        out = DumpEntry.__new__(DumpEntry)
        for attr, value in (("head", self.head), ("file_name", self.file_name), ("name", self.name), ("dump", dump)):
            object.__setattr__(out, attr, value)
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        return DumpEntry, (self.path, self.file_name, self.name, self.dump)

    op_type = property(lambda self: self.name.op_type)
    op_name = property(lambda self: self.name.op_name)
    task_id = property(lambda self: self.name.task_id)
    stream_id = property(lambda self: self.name.stream_id)
    timestamp = property(lambda self: self.name.timestamp)
    dump_number = property(lambda self: self.name.dump_number)
    ffts = property(lambda self: self.name.ffts)

    @property
    def hashed(self) -> bool:
        """True if the file has a digits-only name resolved through ``mapping.csv``."""
        return self.file_name != self.name.build()

    def order(self) -> tuple[Any, ...]:
        """Execution order: timestamp, then task, then FFTS+ context and thread, then file name."""
        ffts = self.name.ffts
        return (self.name.timestamp, self.name.task_id, -1 if ffts is None else ffts.context_id,
                -1 if ffts is None else ffts.thread_id, self.file_name)

    def open(self) -> Any:
        """The dump (`dumpcmp.Dump`), from the scan if it read headers, else opened now."""
        if self.dump is not None:
            return self.dump
        from dumpcmp.dumps.dump import open_dump
        return open_dump(self.path)


class GroundTruthEntry(_InFolder):
    """A ``{op_name}.{output_index}.{timestamp}.npy|pb|quant`` file. Compact as `DumpEntry` is."""

    __slots__ = ("head", "file_name", "name")
    file_name: str
    name: FrameworkDumpName

    def __init__(self, path: str, file_name: str, name: FrameworkDumpName) -> None:
        self._set(path, file_name, name)

    def __reduce__(self) -> tuple[Any, ...]:
        return GroundTruthEntry, (self.path, self.file_name, self.name)

    op_name = property(lambda self: self.name.op_name)
    output_index = property(lambda self: self.name.output_index)
    timestamp = property(lambda self: self.name.timestamp)
    key = property(lambda self: self.name.key)

    def open(self) -> Any:
        """The data: a memory-mapped array for ``.npy``, a `dumpcmp.Dump` for ``.pb``/``.quant`` dumps."""
        if self.name.extension == naming.NPY:
            return open_npy(self.path)
        from dumpcmp.dumps.dump import open_dump
        return open_dump(self.path)


@dataclass(frozen=True, slots=True)
class ConvertedEntry:
    """An NPU dump tensor converted to ``.npy`` (``{dump}.output.{i}[.{shape}].npy``)."""

    path: str
    file_name: str
    name: ConvertedName

    def open(self) -> Any:
        """The tensor as a memory-mapped array."""
        return open_npy(self.path)


@dataclass(frozen=True, slots=True)
class StatsEntry:
    """A statistics dump (``statistic.csv``) and the run its folder is (not opened by the scan)."""

    path: str
    file_name: str
    key: RunKey

    def open(self) -> Any:
        """The file read whole (`dumpcmp.dumps.stats.StatsFile`); DumpError naming the file and line if it is bad."""
        from dumpcmp.dumps.stats import read_stats
        return read_stats(self.path)


@dataclass
class DumpGroup:
    """The dumps of one run, in execution order."""

    key: RunKey
    entries: list[DumpEntry] = field(default_factory=list)

    def __iter__(self) -> Iterator[DumpEntry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def by_op(self) -> dict[str, list[DumpEntry]]:
        """op name -> its dumps in execution order (an op run several times has several)."""
        out: dict[str, list[DumpEntry]] = {}
        for e in self.entries:
            out.setdefault(e.name.op_name, []).append(e)
        return out

    def newest(self) -> dict[str, DumpEntry]:
        """op name -> its newest dump (newest timestamp wins; at one timestamp the last in execution order: the
        greatest task id, as a number), in execution order of those dumps."""
        best = naming.newest_by_key(self.entries, key=lambda e: e.name.op_name, timestamp=lambda e: e.name.timestamp,
                                    tie=lambda e: (e.order(), e.path))
        return {e.name.op_name: e for e in _in_order(best.values())}  # type: ignore[arg-type]


def _in_order(entries: Iterable[DumpEntry]) -> list[DumpEntry]:
    """`entries` sorted by `DumpEntry.order`. Without FFTS+ names (whose order keys are then -1 and -1 throughout):
    by file name, then (stable) by timestamp and task as one integer, which sorts a run of 10^6 dumps in half the
    time of the tuples."""
    entries = list(entries)
    if not entries or any(e.name.ffts is not None for e in entries) or \
            max(e.name.task_id for e in entries) >= 1 << 64:
        return sorted(entries, key=DumpEntry.order)
    entries.sort(key=_FILE_NAME)
    entries.sort(key=lambda e: (e.name.timestamp << 64) | e.name.task_id)
    return entries


_FILE_NAME = operator.attrgetter("file_name")


@dataclass
class GroundTruthIndex:
    """Ground truth and framework dumps by ``{op_name}.{output_index}``; newest wins, older ones in `superseded`."""

    files: dict[str, GroundTruthEntry] = field(default_factory=dict)
    superseded: list[GroundTruthEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def get(self, op_name: str, output_index: int = 0) -> GroundTruthEntry | None:
        """The file for an op's output; the op name is sanitised as file names have it."""
        return self.files.get(naming.ground_truth_key(op_name, output_index))

    def __contains__(self, key: object) -> bool:
        return key in self.files

    def __len__(self) -> int:
        return len(self.files)

    def __iter__(self) -> Iterator[GroundTruthEntry]:
        return iter(self.files.values())

    def by_sample(self, root: str) -> dict[int, GroundTruthIndex]:
        """The ground truth of each sample when the tree under `root` keeps samples in `{k}/` folders (what
        `dumpcmp golden` writes for several samples): k -> that folder's index, newest winning inside it only."""
        groups: dict[int, list[GroundTruthEntry]] = {}
        # a file's first folder under `root` is its folder's (os.path.relpath once a folder, not once a file:
        # relpath(folder/name) is relpath(folder)/name, or name alone when the folder is root itself)
        first: dict[str, str | None] = {}
        for e in list(self.files.values()) + self.superseded:
            folder = os.path.dirname(e.path)
            sample = first.get(folder, "")
            if sample == "":
                rel = os.path.relpath(folder or os.curdir, root)
                sample = first[folder] = None if rel == os.curdir else rel.split(os.sep)[0]
            if sample is not None and sample.isdigit() and sample.isascii():
                groups.setdefault(int(sample), []).append(e)
        out = {}
        for k, entries in sorted(groups.items()):
            idx = GroundTruthIndex()
            idx._add_all(entries)
            out[k] = idx
        return out

    def mixed_folders(self) -> int:
        """How many tensors have candidates in more than one folder (the newest wins across them)."""
        folders: dict[str, set[str]] = {}
        for e in list(self.files.values()) + self.superseded:
            folders.setdefault(e.name.key, set()).add(os.path.dirname(e.path))
        return sum(1 for f in folders.values() if len(f) > 1)

    def _add_all(self, entries: Iterable[GroundTruthEntry]) -> None:
        entries = list(entries)
        best: dict[Any, GroundTruthEntry] = dict(zip(map(_GT_KEY, entries), entries))
        if len(best) == len(entries):  # every key once (10^6 ground-truth files): each file is the newest of its own
            self.files = {k: best[k] for k in sorted(best)}
            self.superseded = []
            return
        best = naming.newest_by_key(entries, key=lambda e: e.name.key, timestamp=lambda e: e.name.timestamp,
                                    tie=lambda e: e.path)
        chosen = {id(e) for e in best.values()}
        self.files = {k: best[k] for k in sorted(best)}
        self.superseded = sorted((e for e in entries if id(e) not in chosen), key=lambda e: e.path)


_GT_KEY = operator.attrgetter("name.key")


@dataclass
class DumpIndex:
    """What a scan found. Iterating gives the runs (`DumpGroup`) in key order."""

    root: str
    groups: list[DumpGroup] = field(default_factory=list)
    ground_truth: GroundTruthIndex = field(default_factory=GroundTruthIndex)
    converted: list[ConvertedEntry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    stats: list[StatsEntry] = field(default_factory=list)
    """Statistics dumps, by run key then path."""

    def __iter__(self) -> Iterator[DumpGroup]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    @property
    def dump_count(self) -> int:
        return sum(len(g) for g in self.groups)

    @property
    def file_count(self) -> int:
        """Usable files of every kind: NPU dumps, ground truth (including superseded ones), converted, statistics."""
        return self.dump_count + len(self.ground_truth) + len(self.ground_truth.superseded) + len(self.converted) \
            + len(self.stats)

    def entries(self) -> Iterator[DumpEntry]:
        for g in self.groups:
            yield from g.entries

    def find(self, *, time: str | None = None, device_id: int | None = None, model_name: str | None = None,
             model_id: int | None = None, data_index: int | None = None) -> list[DumpGroup]:
        """The runs matching every given field (None matches anything). `model_name` is compared sanitised,
        as the runtime names the folder."""
        model = None if model_name is None else naming.sanitize(model_name)
        wanted = (("time", time), ("device_id", device_id), ("model_name", model), ("model_id", model_id),
                  ("data_index", data_index))
        return [g for g in self.groups
                if all(v is None or getattr(g.key, k) == v for k, v in wanted)]

    def select(self, *, time: str | None = None, device_id: int | None = None, model_name: str | None = None,
               model_id: int | None = None, data_index: int | None = None) -> DumpGroup:
        """The one run matching the options; NotFoundError listing the runs when none or several match."""
        found = self.find(time=time, device_id=device_id, model_name=model_name, model_id=model_id,
                          data_index=data_index)
        if len(found) == 1:
            return found[0]
        runs = "; ".join(g.key.describe() for g in self.groups[:20]) or "none"
        if len(self.groups) > 20:
            runs += f"; ... ({len(self.groups)} in all)"
        if not found:
            raise NotFoundError(f"{self.root}: no dump run matches the options; runs found: {runs}")
        raise NotFoundError(f"{self.root}: {len(found)} dump runs match; select one with {SELECT_FLAGS}. Runs: {runs}")


def several_runs_error(root: str | os.PathLike[str], runs: list[str]) -> NotFoundError:
    """The error of a command that works on one run given a tree holding several (`runs`: their descriptions)."""
    listed = "\n  ".join(runs[:20]) + (f"\n  ... ({len(runs)} in all)" if len(runs) > 20 else "")
    return NotFoundError(f"{os.fspath(root)} holds {len(runs)} runs; select one with {SELECT_FLAGS}:\n  {listed}")


# --- scanning -----------------------------------------------------------------------------------------------------

def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _run_key(folder: str, op_names: Container[str]) -> RunKey:
    parts = folder.split(os.sep)
    n = len(parts)
    if (n >= 6 and _TIME.match(parts[-5]) and _digits(parts[-4]) and _digits(parts[-2]) and _digits(parts[-1])):
        return RunKey(MODEL, folder, time=parts[-5], device_id=int(parts[-4]), model_name=parts[-3],
                      model_id=int(parts[-2]), data_index=int(parts[-1]))
    if n >= 3 and _TIME.match(parts[-2]) and _digits(parts[-1]):
        return RunKey(SINGLE_OP, folder, time=parts[-2], device_id=int(parts[-1]))
    if n >= 3 and _digits(parts[-2]) and parts[-1] in op_names:
        # {dump_path}/{device_id}/{op_name}/: one run per device, whatever op folder a dump is in
        parent = os.sep.join(parts[:-1])
        time = parts[-3] if n >= 4 and _TIME.match(parts[-3]) else None
        return RunKey(SINGLE_OP, parent, time=time, device_id=int(parts[-2]))
    return RunKey(FLAT, folder)


class _OpNames:
    """The op names of a folder's device dumps, for `_run_key`: looked at only when the folder's name could be one."""

    def __init__(self, device: list[tuple[str, str, DeviceDumpName]], listed: list[DumpEntry]) -> None:
        self.device, self.listed = device, listed

    def __contains__(self, name: object) -> bool:
        return any(d[2].op_name == name for d in self.device) or any(e.name.op_name == name for e in self.listed)


class _Scanner:
    def __init__(self) -> None:
        self.dumps: dict[RunKey, list[DumpEntry]] = {}
        self.framework: list[GroundTruthEntry] = []
        self.converted: list[ConvertedEntry] = []
        self.stats: list[StatsEntry] = []
        self.skipped: list[Skipped] = []
        self.seen_dirs: set[tuple[int, int]] = set()
        self.stop_at_dump = False  # `holds_stats_only`: the first device dump ends the walk
        self.check_dumps = True  # False: the listed device dumps are not checked readable (each is opened after)
        self.in_order: set[RunKey] = set()  # runs whose entries are in execution order already

    def scan_root(self, root: str) -> None:
        """A tree, any folder of it, or one file."""
        if os.path.isdir(root):
            self.walk(root)
        elif os.path.isfile(root):
            folder, name = os.path.dirname(root), os.path.basename(root)
            # a hashed file given alone is resolved through its folder's mapping.csv, as in a walk
            alone = [name, naming.MAPPING_FILE] if naming.is_hashed_name(name) and \
                os.path.isfile(os.path.join(folder, naming.MAPPING_FILE)) else [name]
            self.add_folder(folder, alone)
        else:
            self.skipped.append(Skipped(root, "not a regular file or folder"))

    def walk(self, top: str) -> None:
        stack = [top]
        list_folder = core.scan.list_folder  # the listing, the two bulk name rules and the readability check in C++
        while stack:
            folder = stack.pop()
            try:
                st = os.stat(folder)
                if (st.st_dev, st.st_ino) in self.seen_dirs:
                    continue  # a symbolic link back up the tree
                self.seen_dirs.add((st.st_dev, st.st_ino))
            except OSError as error:
                self.skipped.append(Skipped(folder, f"cannot list the folder: {error.strerror or error}"))
                continue
            # holds_stats_only: a folder with a readable device dump ends the walk, its other files not asked
            error, subdirs, skipped, others, devices, in_order, framework = list_folder(
                folder, DumpEntry, DeviceDumpName, FftsSuffix, GroundTruthEntry, FrameworkDumpName, self.stop_at_dump,
                self.check_dumps)
            if error is not None:
                self.skipped.append(Skipped(folder, f"cannot list the folder: {error}"))
                continue
            prefix = folder if folder.endswith(os.sep) else folder + os.sep
            self.skipped.extend(Skipped(prefix + name, reason) for name, reason in skipped)
            if others or devices:
                self.add_folder(folder, others, devices, in_order)
            self.framework.extend(framework)
            stack.extend(sorted((prefix + name for name in subdirs), reverse=True))

    def add_folder(self, folder: str, files: list[str], listed: list[DumpEntry] | None = None,
                   in_order: bool = False) -> None:
        """`files` by the Python rules; `listed`: the folder's device dumps the C++ listing made (sorted if
        `in_order`)."""
        if listed and self.stop_at_dump:
            raise _DumpFound
        mapping: dict[str, str] | None = None
        if naming.MAPPING_FILE in files:
            problems: list[str] = []
            mapping = naming.read_mapping(os.path.join(folder, naming.MAPPING_FILE), problems)
            self.skipped.extend(Skipped(os.path.join(folder, naming.MAPPING_FILE), p) for p in problems)
        device: list[tuple[str, str, DeviceDumpName]] = []
        readable, parse, bookkeeping = os.access, naming.parse_name, naming.BOOKKEEPING_FILES
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        for file_name in files:
            if file_name in bookkeeping:
                continue
            path = prefix + file_name
            name = file_name
            if is_stats_file_name(file_name):
                if not readable(path, os.R_OK, effective_ids=True):  # the ids open() uses, as the core asks
                    self.skipped.append(Skipped(path, "not readable (permission denied)"))
                else:
                    self.stats.append(StatsEntry(path, file_name, _run_key(folder, set())))
                continue
            if file_name[:1].isdigit() and naming.is_hashed_name(file_name):  # (most names start with a letter)
                if mapping is None:
                    self.skipped.append(Skipped(path, f"hashed (digits-only) name but the folder has no "
                                                      f"{naming.MAPPING_FILE}"))
                    continue
                name = naming.file_name_of(file_name, mapping)
                if name == file_name:
                    self.skipped.append(Skipped(path, f"hashed name with no row in {naming.MAPPING_FILE}"))
                    continue
            try:
                parsed = parse(name)
            except NamingError:
                reason = _NO_SCHEME if name == file_name else \
                    f"{naming.MAPPING_FILE} maps it to {name!r}, which fits no naming scheme"
                self.skipped.append(Skipped(path, reason))
                continue
            if not readable(path, os.R_OK, effective_ids=True):
                self.skipped.append(Skipped(path, "not readable (permission denied)"))
                continue
            if isinstance(parsed, DeviceDumpName):
                if self.stop_at_dump:
                    raise _DumpFound
                device.append((path, file_name, parsed))
            elif isinstance(parsed, FrameworkDumpName):
                self.framework.append(GroundTruthEntry(path, file_name, parsed))
            else:
                self.converted.append(ConvertedEntry(path, file_name, parsed))
        if device or listed:
            key = _run_key(folder, _OpNames(device, listed or []))
            fresh = key not in self.dumps
            bucket = self.dumps.setdefault(key, [])
            bucket.extend(DumpEntry(p, f, n) for p, f, n in device)
            if listed:
                bucket.extend(listed)
            if fresh and in_order and not device:
                self.in_order.add(key)  # one folder's dumps, already in execution order
            else:
                self.in_order.discard(key)

    def read_headers(self, threads: int) -> None:
        for key, entries in self.dumps.items():
            kept = []
            for entry, dump, skipped in read_dump_headers(entries, threads=threads, batch=len(entries)):
                if skipped is not None:
                    self.skipped.append(skipped)
                else:
                    kept.append(entry.with_dump(dump))
            self.dumps[key] = kept

    def index(self, root: str) -> DumpIndex:
        groups = [DumpGroup(k, v if k in self.in_order else _in_order(v)) for k, v in self.dumps.items() if v]
        groups.sort(key=lambda g: g.key.sort_key())
        gt = GroundTruthIndex()
        gt._add_all(self.framework)
        return DumpIndex(root=root, groups=groups, ground_truth=gt,
                         converted=sorted(self.converted, key=lambda c: c.path),
                         stats=sorted(self.stats, key=lambda e: (e.key.sort_key(), e.path)),
                         skipped=sorted(self.skipped, key=lambda s: s.path))


def read_dump_headers(entries: list[DumpEntry], *, threads: int = 0, batch: int = 4096) \
        -> Iterator[tuple[DumpEntry, Any, Skipped | None]]:
    """(entry, its header as a `dumpcmp.Dump`, None), or (entry, None, the Skipped saying why it does not open), for
    each entry in order: headers read in parallel (`threads` 0 = all cores) `batch` files at a time, so that a caller
    going through 10^6 dumps holds one batch of headers at a time."""
    from dumpcmp.dumps.dump import open_dumps
    for start in range(0, len(entries), max(batch, 1)):
        chunk = entries[start:start + max(batch, 1)]
        for entry, result in zip(chunk, open_dumps([e.path for e in chunk], threads=threads)):
            if isinstance(result, Exception):
                yield entry, None, Skipped(entry.path, _without_path(str(result), entry.path))
            else:
                yield entry, result, None


def read_dump_records(entries: list[DumpEntry], *, threads: int = 0, batch: int = 4096,
                      level: Callable[[], int] = lambda: 0) \
        -> Iterator[jsonfile.Rendered | tuple[DumpEntry, Any, Skipped | None]]:
    """`read_dump_headers` for `dumpcmp info --json`, in order: consecutive entries' records as one
    `jsonfile.Rendered`, the JSON text the core writes straight from the headers it reads (`core.scan.read_records`:
    no `Dump` made for them), and (entry, its `dumpcmp.Dump`, None) for a record the core leaves to Python, or
    (entry, None, the Skipped) for a file that does not open. `level()`, asked once a batch just before its records
    are made, is the level (two spaces each) their lines after the first are written at."""
    from dumpcmp.dumps.dump import Dump
    size = max(batch, 1)
    for start in range(0, len(entries), size):
        chunk = entries[start:start + size]
        at = level()
        for first, stop, text, other in core.scan.read_records(chunk, at, threads):
            if text is not None:
                yield jsonfile.Rendered(text, stop - first, at)
            elif isinstance(other, str):
                entry = chunk[first]
                yield entry, None, Skipped(entry.path, _without_path(other, entry.path))
            else:
                yield chunk[first], Dump(other), None


_NOT_READABLE = "not readable (permission denied)"
_OPEN_DENIED = f"cannot open: {os.strerror(errno.EACCES)}"


def _without_path(message: str, path: str) -> str:
    # DumpError messages start with the file's path; a Skipped already carries it. A dump the open was refused is
    # said as the scan says a file it may not read (a scan that leaves the check to the open: `scan(opened=True)`).
    reason = message[len(path) + 2:] if message.startswith(path + ": ") else message
    return _NOT_READABLE if reason == _OPEN_DENIED else reason


def _absolute(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    if not os.path.lexists(text):
        raise NotFoundError(f"{text}: no such file or directory")
    return os.path.abspath(text)


def scan(path: str | os.PathLike[str], *, read_headers: bool = False, threads: int = 0,
         opened: bool = False) -> DumpIndex:
    """Index the dumps under `path` (a dump tree, any folder of it, or one file) by their names.

    Never stops for a bad file: it goes to `DumpIndex.skipped` with the reason. With `read_headers`, every NPU
    dump header is read (in parallel, `threads` 0 = all cores) and files that do not open are skipped too.
    NotFoundError if `path` does not exist. Symbolic links are followed; a link back up the tree is not
    scanned twice. `opened`: the caller reads every device dump's header after (`read_dump_headers`,
    `read_dump_records`), whose open then says which it may not read (the same "not readable" skip), so the
    scan does not ask (issue #35: one system call less a dump); `read_headers` implies it.
    """
    root = _absolute(path)
    scanner = _Scanner()
    scanner.check_dumps = not (opened or read_headers)
    with paused():  # an entry per file of a tree of 10^6: see dumpcmp.support.gcpause
        scanner.scan_root(root)
        if read_headers:
            scanner.read_headers(threads)
        return scanner.index(root)


class _DumpFound(Exception):
    pass


def holds_stats_only(path: str | os.PathLike[str]) -> bool:
    """`scan(path)` holds statistics files and no device dump: what `dumpcmp compare` takes for a statistics dump.
    The walk ends at the first device dump (in the first folder of a tensor dump tree, whatever its size), by the
    rules `scan` follows."""
    scanner = _Scanner()
    scanner.stop_at_dump = True
    try:
        scanner.scan_root(_absolute(path))
    except _DumpFound:
        return False
    return bool(scanner.stats)


def scan_ground_truth(path: str | os.PathLike[str]) -> GroundTruthIndex:
    """Index a folder of ground truth (``{op_name}.{output_index}.{timestamp}.npy``, ``.pb``, ``.quant``; subfolders
    too): newest file per ``{op_name}.{output_index}``. Other files are listed in `skipped`."""
    index = scan(path)
    gt = index.ground_truth
    gt.skipped = list(index.skipped)
    gt.skipped.extend(Skipped(e.path, "an NPU dump, not ground truth") for e in index.entries())
    gt.skipped.extend(Skipped(c.path, "a converted NPU dump, not ground truth") for c in index.converted)
    gt.skipped.sort(key=lambda s: s.path)
    return gt
