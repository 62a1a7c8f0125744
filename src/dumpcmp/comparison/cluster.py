"""Model-level comparison on a Dask distributed cluster: the rows of a run compared by many processes or hosts, with
the same result file as a run on one machine.

    >>> client = connect("tcp://10.0.0.1:8786")            # or connect("local:4"): a LocalCluster of 4 workers
    >>> results = dumpcmp.compare_runs("dump/", "golden/", fusion_json="model.json", client=client.client)

The client scans, pairs and plans as a local run does (`dumpcmp.comparison.runs`); the pairs of a run are cut into
batches of consecutive pairs, sized by the bytes they read, and each batch is one task. A task travels as paths and
plan parameters (the pairs without their opened headers), opens its files on the worker and runs the C++ engine
there, and sends back only its rows: values, reasons and the metric results (`MetricResult` pickles). The client
puts every row back in its place, whatever order the tasks finish in, so the rows and the file are the local run's.

Faults: a task whose worker is lost runs again on another worker (the scheduler reschedules it; `retries` more times
when the task itself fails); a batch that still cannot run, or that no worker takes within `timeout` seconds of the
cluster having none, fails its rows with the reason. A scheduler that does not answer within `CONNECT_TIMEOUT`
seconds is a DumpcmpError; Ctrl-C cancels the run's tasks.

`distributed` is imported only here, and only when a cluster is asked for (`pip install "dumpcmp[cluster]"`).
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import os
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Any, Callable, Iterator, Sequence

from dumpcmp.comparison.rows import Row
from dumpcmp.comparison.runs import PairedRun
from dumpcmp.comparison.sources import DeviceRef
from dumpcmp.errors import DumpcmpError
from dumpcmp.graph.pairing import DeviceOp, TensorPair
from dumpcmp.support.progress import Progress

__all__ = ["CONNECT_TIMEOUT", "INSTALL_HINT", "Cluster", "Placed", "Task", "batches", "cluster_rows", "compare_batch",
           "connect", "packed", "placed_roots", "portable", "quiet_dask_logs", "refuse_custom", "reopened", "rows_back",
           "run_tasks", "scan_on_workers", "scan_root", "threads_by_host", "travelling", "unpacked", "worker_threads"]

#: seconds a scheduler has to answer
CONNECT_TIMEOUT = 5.0
INSTALL_HINT = 'a cluster needs Dask distributed: pip install "dumpcmp[cluster]" (or: pip install distributed)'
# a batch reads about this many bytes (device and ground-truth sides), at most _BATCH_PAIRS pairs: Dask's ~1 ms per
# task is then small beside the batch's reading and comparing
_BATCH_BYTES = 256 << 20
_MIN_BATCH_BYTES = 4 << 20
_BATCH_PAIRS = 4096
_MIN_BATCH_PAIRS = 256
_POLL = 0.5  # seconds between looks at the cluster while waiting for batches
_SUBMIT_LOOK = 0.02  # seconds between looks at the batches back while the next ones are submitted


@contextmanager
def _paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused (if it ran) while a batch's objects are pickled or made: these make
    tens of thousands of objects, and each collection they set off walks every object the process holds (a client's
    pairs and rows): two thirds of pickling and unpickling a batch's pairs on the client otherwise. What they make
    holds no cycle; refcounting frees it as before."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise DumpcmpError(INSTALL_HINT) from None
    return distributed


@dataclass
class Cluster:
    """A connected client, and the LocalCluster it runs on when `connect` started one (closed with it)."""

    client: Any
    local: Any = None
    address: str = ""
    retries: int = 1
    """More runs of a batch whose task failed on a worker (a lost worker's batches are rescheduled anyway)."""
    timeout: float = 60.0
    """Seconds the cluster may have no worker before the batches not back fail their rows."""
    batch_bytes: int | None = None
    """About how many bytes a batch (a task) reads; None: chosen from the run (`batches`)."""

    @property
    def dashboard(self) -> str | None:
        """The dashboard's address (None when the scheduler serves none)."""
        try:
            return self.client.dashboard_link or None
        except Exception:  # no dashboard: bokeh missing on the scheduler
            return None

    def close(self) -> None:
        """Close the client, and the LocalCluster `connect` started."""
        try:
            self.client.close(timeout=CONNECT_TIMEOUT)
        finally:
            if self.local is not None:
                self.local.close(timeout=CONNECT_TIMEOUT)

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(address: str, *, timeout: float = CONNECT_TIMEOUT) -> Cluster:
    """A client of the scheduler at `address` (`tcp://HOST:PORT`, a bare `HOST:PORT`), or of a new LocalCluster of N
    worker processes on this machine (`local:N`, listening on 127.0.0.1 only). DumpcmpError (one line) when
    distributed is missing, the address is not one of these or no scheduler answers within `timeout` seconds."""
    text = address.strip()
    if text.startswith("local:") or text == "local":
        count = text.partition(":")[2] or str(os.cpu_count() or 1)
        most = max(4, 4 * (os.cpu_count() or 1))  # a process each: more than this only thrashes this machine
        if not count.isascii() or not count.isdigit() or not 1 <= int(count) <= most:
            raise DumpcmpError(f"--cluster {address}: local:N needs a number of worker processes N from 1 to {most} "
                               f"(4 per core here)")
        distributed = _distributed()
        workers = int(count)
        local = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                         host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                         silence_logs=logging.ERROR)
        try:
            client = distributed.Client(local, timeout=timeout)
        except BaseException:
            local.close()
            raise
        return Cluster(client, local, local.scheduler_address)
    if not text or any(c.isspace() for c in text):
        raise DumpcmpError(f"--cluster {address!r}: give a scheduler address (tcp://HOST:PORT) or local:N")
    distributed = _distributed()
    target = text if "://" in text else "tcp://" + text
    _probe(address, target, timeout)
    try:
        client = distributed.Client(target, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as error:  # went away since the probe
        raise DumpcmpError(f"--cluster {address}: no Dask scheduler answered at {target} within {timeout:g} s"
                           f"{_why(error)}") from None
    return Cluster(client, None, target)


def refuse_custom(custom_algorithms: Any) -> None:
    """Custom algorithms (`-c DIR -alg`) are Python files of this machine's: not run on a cluster's workers."""
    if custom_algorithms is not None:
        raise DumpcmpError("custom algorithms (-c DIR -alg) run on this machine only: leave out --cluster")


def quiet_dask_logs() -> None:
    """Keep Dask's own log lines (a lost scheduler's traceback, a worker's warnings) out of a command's output: the
    rows and the errors say what happened. For the command line; a Python caller keeps its logging as it set it."""
    for name in ["distributed", "tornado", *logging.root.manager.loggerDict]:
        if name.split(".")[0] in ("distributed", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _why(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return "" if isinstance(error, TimeoutError) else f" ({type(error).__name__}{': ' + text if text else ''})"


def _probe(address: str, target: str, timeout: float) -> None:
    """Connect to `target` and take Dask's handshake within `timeout` seconds, on a loop of our own: a peer that
    accepts and says nothing, says something else or closes is a DumpcmpError (one line), and no half-made Client
    is left to close (Dask's own connect waits for ever on a silent peer's handshake)."""
    import asyncio

    from distributed.comm import connect as comm_connect

    async def shake() -> None:
        comm = await asyncio.wait_for(comm_connect(target, timeout=timeout), timeout)
        await comm.close()

    try:
        asyncio.run(shake())
    except (OSError, TimeoutError, asyncio.TimeoutError) as error:
        raise DumpcmpError(f"--cluster {address}: no Dask scheduler answered at {target} within {timeout:g} s"
                           f"{_why(error)}") from None
    except ValueError as error:  # an address Dask cannot parse
        raise DumpcmpError(f"--cluster {address}: not a scheduler address ({error})") from None
    except Exception as error:  # a peer that is not a Dask scheduler (its bytes read as a huge frame: MemoryError)
        raise DumpcmpError(f"--cluster {address}: {target} is not a Dask scheduler{_why(error)}") from None


# ---- on the worker ------------------------------------------------------------------------------------------------

def portable(ref: Any) -> Any:
    """A pair side without its opened header (a native handle that neither pickles nor means anything elsewhere)."""
    if isinstance(ref, DeviceRef):
        return DeviceRef(ref.entry.with_dump(None), None, ref.error if ref.dump is None else "")
    return ref


def travelling(pair: TensorPair) -> TensorPair:
    return dataclasses.replace(pair, npu_ref=portable(pair.npu_ref), ground_truth_ref=portable(pair.ground_truth_ref))


# A batch's pairs travel as one bytes object pickled here (`packed`), not as a list of objects: Dask then neither
# walks the list looking for futures nor pickles each frozen dataclass through dataclasses' __getstate__ (which
# looks up the fields of every object), and the scheduler no longer unpickles every pair (docs/performance.md,
# Cluster); each object is its fields' values and a function that makes it again (`_made`), a device side without
# its opened header (as `portable` gives it).
_TRAVEL_FIELDS: dict[type, tuple[str, ...]] = {}


def _made(kind: type, values: tuple) -> Any:
    """An object of a travelling pair made again on the worker from its fields' values."""
    made = object.__new__(kind)
    for name, value in zip(_TRAVEL_FIELDS.get(kind) or _fields_of(kind), values):
        object.__setattr__(made, name, value)
    return made


def _fields_of(kind: type) -> tuple[str, ...]:
    names = _TRAVEL_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind)) if dataclasses.is_dataclass(kind) \
        else kind.__slots__  # a scan entry: its folder's path shared (once in the pickle), not a path per entry
    return names


def _reduced(kind: type) -> Callable[[Any], tuple]:
    values = attrgetter(*(_TRAVEL_FIELDS.get(kind) or _fields_of(kind)))  # of two fields or more: a tuple
    return lambda obj: (_made, (kind, values(obj)))


def _reduced_entry(entry: Any) -> tuple:  # without its opened header
    return _made, (type(entry), (entry.head, entry.file_name, entry.name, None))


def _reduced_device(ref: DeviceRef) -> tuple:  # without its opened header, or with why it could not be opened
    return _made, (DeviceRef, (ref.entry, None, ref.error if ref.dump is None else "", ref.slices))


def packed(pairs: Sequence[TensorPair]) -> bytes:
    """A batch's pairs as they travel to a worker (`unpacked` there): without their opened headers."""
    import copyreg
    import io
    import pickle

    from dumpcmp.dumps.naming import DeviceDumpName, FrameworkDumpName
    from dumpcmp.dumps.scan import DumpEntry, GroundTruthEntry

    out = io.BytesIO()
    pickler = pickle.Pickler(out, protocol=pickle.HIGHEST_PROTOCOL)
    table = dict(copyreg.dispatch_table)
    table.update({kind: _reduced(kind) for kind in (TensorPair, DeviceDumpName, GroundTruthEntry, FrameworkDumpName)})
    table.update({DumpEntry: _reduced_entry, DeviceRef: _reduced_device})
    pickler.dispatch_table = table
    with _paused_gc():
        pickler.dump(list(pairs))
    return out.getvalue()


def unpacked(pairs: bytes | list[TensorPair]) -> list[TensorPair]:
    """The pairs `packed` sent (a list given as it is)."""
    import pickle

    if not isinstance(pairs, bytes):
        return pairs
    with _paused_gc():
        return pickle.loads(pairs)


def reopened(pairs: list[TensorPair], own: bool = False) -> list[TensorPair]:
    """The pairs with their device dump headers opened here (on the worker); one that was unreadable on the client
    keeps its reason. `own`: the pairs are this call's to change (just `unpacked`): their sides are opened in place
    rather than copied."""
    from dumpcmp.dumps.dump import open_dumps

    paths = sorted({ref.entry.path for p in pairs for ref in (p.npu_ref, p.ground_truth_ref)
                    if isinstance(ref, DeviceRef) and not ref.error})
    opened = dict(zip(paths, open_dumps(paths)))
    if own:
        for p in pairs:
            for ref in (p.npu_ref, p.ground_truth_ref):
                if isinstance(ref, DeviceRef) and not ref.error and ref.dump is None:  # a side two pairs share: once
                    d = opened[ref.entry.path]
                    if isinstance(d, Exception):
                        ref.error = str(d)
                    else:
                        ref.dump = d
        return pairs

    def side(ref: Any) -> Any:
        if not isinstance(ref, DeviceRef) or ref.error:
            return ref
        d = opened[ref.entry.path]
        return DeviceRef(ref.entry, None, str(d)) if isinstance(d, Exception) else DeviceRef(ref.entry, d)

    return [dataclasses.replace(p, npu_ref=side(p.npu_ref), ground_truth_ref=side(p.ground_truth_ref)) for p in pairs]


def compare_batch(pairs: bytes | list[TensorPair], custom: Any, algos: tuple[int, ...], device_vs_device: bool,
                  threads: int | dict[str, int], precise: bool, max_elements: int = 0,
                  npu_vs_npu: str = "restored") -> tuple[str, bytes]:
    """A task: the rows of a batch of pairs (travelled without their headers, `packed`), compared on the worker that
    runs it, without their pairs (the client has them). Returns (this worker's address, the rows pickled:
    `rows_back` reads them). The rows are pickled here, on the task's thread, not by the worker's event loop when
    the client fetches them: that loop then only sends bytes, and a fetch does not wait for the GIL while the next
    batch is compared."""
    import pickle

    from dumpcmp.comparison.compare import compare_pairs
    from dumpcmp.comparison.sources import Sides

    address = _worker_address()
    batch = reopened(unpacked(pairs), own=isinstance(pairs, bytes))
    # the comparison itself with the collector running: metric plug-ins (-c) run there, and may make cycles
    rows = compare_pairs(batch, Sides(custom), algos, device_vs_device, worker_threads(threads), precise,
                         max_elements, npu_vs_npu)
    for row in rows:
        row.pair = None
    with _paused_gc():  # the rows pickled: no cycle made
        return address, pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL)


def rows_back(rows: bytes | list[Row]) -> list[Row]:
    """The rows a `compare_batch` sent (a list given as it is)."""
    import pickle

    if not isinstance(rows, (bytes, bytearray, memoryview)):
        return rows
    with _paused_gc():
        return pickle.loads(rows)


def scan_root(root: str) -> tuple[str, Any, dict[Any, list[DeviceOp]], dict[str, int]]:
    """A task: scan a dump root as this worker sees it and read its runs' headers; (this worker's address, the index
    and every run's ops without their opened headers, each dump's size). What travels is names, sizes and header
    facts, never data. An index of no run when the root is not there."""
    from dumpcmp.comparison.sources import device_ops
    from dumpcmp.dumps.scan import DumpGroup, DumpIndex, Skipped, scan

    address = _worker_address()
    if not os.path.exists(root):
        return address, DumpIndex(root, skipped=[Skipped(root, "not on this worker")]), {}, {}
    index = scan(root)
    ops = {g.key: [dataclasses.replace(op, ref=portable(op.ref)) for op in device_ops(g)] for g in index.groups}
    index.groups = [DumpGroup(g.key, [e.with_dump(None) for e in g.entries]) for g in index.groups]
    sizes = {}
    for e in index.entries():
        try:
            sizes[e.path] = os.path.getsize(e.path)
        except OSError:
            pass
    return address, index, ops, sizes


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):  # not in a worker (called directly)
        return ""


@dataclass
class Placed:
    """A left side that lies on the workers' own disks (`-l HOST=PATH,...`), scanned by them: the index and ops
    `paired_runs` pairs, the workers that hold each run (by its description) and each dump's size."""

    index: Any
    by_key: dict[Any, list[DeviceOp]]
    holders: dict[str, list[str]]
    sizes: dict[str, int]
    keys: dict[str, list[str]] = field(default_factory=dict)
    """The `-l` keys (host, IP, name or `*`) whose workers hold each run: a worker restarted by its nanny comes back
    under a new address but answers to the same key, and takes the run's batches over."""

    def ops(self, group: Any) -> list[DeviceOp]:
        return self.by_key[group.key]


def placed_roots(left: str | os.PathLike[str]) -> dict[str, str] | None:
    """`host-a=/data/dump,host-b=/data/dump` -> {key: root} (a key: a worker's host, IP or name; `*`: every
    worker); None for a path (one the client sees, or one without `=`)."""
    text = os.fspath(left)
    if not isinstance(text, str) or "=" not in text or os.path.exists(text):
        return None
    roots: dict[str, str] = {}
    for part in text.split(","):
        key, eq, root = part.partition("=")
        if not eq or not key.strip() or not root.strip():
            raise DumpcmpError(f"-l {text}: give HOST=PATH[,HOST=PATH...] (HOST: a worker's host, IP or name, or *), "
                               f"or a path")
        if not os.path.isabs(root.strip()):
            raise DumpcmpError(f"-l {text}: {root.strip()} is not an absolute path (each worker reads it as it is)")
        roots[key.strip()] = root.strip()
    return roots


def _matches(key: str, address: str, info: dict) -> bool:
    if key == "*" or key == str(info.get("name", "")) or key == _host(address):
        return True
    try:
        import socket

        return socket.gethostbyname(key) == _host(address)
    except OSError:
        return False


def scan_on_workers(client: Any, left: str | os.PathLike[str]) -> Placed | None:
    """The left side scanned by the workers that hold it (`placed_roots`), merged: a run every holder sees alike;
    None when `left` is a path the client reads itself. DumpcmpError when a key matches no worker, no worker finds
    a dump, or one run differs between workers."""
    roots = placed_roots(left)
    if roots is None:
        return None
    timeout = client.timeout if isinstance(client, Cluster) else 60.0
    client = client.client if isinstance(client, Cluster) else client
    workers = client.scheduler_info().get("workers", {})
    jobs: list[tuple[str, str]] = []
    key_of: dict[tuple[str, str], set[str]] = {}  # (worker, root) -> the -l keys that chose it
    for key, root in roots.items():
        chosen = [a for a, info in workers.items() if _matches(key, a, info)]
        if not chosen:
            named = ", ".join(f"{a} ({info.get('name')})" for a, info in workers.items()) or "none"
            raise DumpcmpError(f"-l {os.fspath(left)}: no worker of the cluster is {key} (workers: {named})")
        jobs += [(a, root) for a in chosen if (a, root) not in key_of]
        for a in chosen:
            key_of.setdefault((a, root), set()).add(key)
    futures = {client.submit(scan_root, root, workers=[a], allow_other_workers=False, pure=False,
                             key=f"dumpcmp-scan-{uuid.uuid4().hex[:8]}-{n}"): (a, root)
               for n, (a, root) in enumerate(jobs)}
    waiting = _Waiting({f: n for n, f in enumerate(futures)}, {n: [futures[f][0]] for n, f in enumerate(futures)})
    found: list[tuple[str, str, Any, dict, dict]] = []
    try:
        while waiting.futures:
            for future in _next_done(waiting):
                del waiting.futures[future]
                a, root = futures[future]
                try:
                    address, index, ops, sizes = future.result()
                except Exception as error:
                    raise DumpcmpError(f"{a} could not scan {root}: {type(error).__name__}: {error}") from None
                found.append((a, root, index, ops, sizes))
            if waiting.futures and _stalled(client, waiting, timeout):
                raise DumpcmpError(f"-l {os.fspath(left)}: the workers did not scan within {timeout:g} s")
    except BaseException:
        client.cancel(list(waiting.futures))
        raise
    placed = _merged(os.fspath(left), found)
    keys: dict[str, set[str]] = {}
    for address, root, index, _, _ in found:
        for g in index.groups:
            keys.setdefault(g.key.describe(), set()).update(key_of[(address, root)])
    placed.keys = {run: sorted(k) for run, k in keys.items()}
    return placed


def _merged(left: str, found: list[tuple[str, str, Any, dict, dict]]) -> Placed:
    from dumpcmp.dumps.scan import DumpIndex
    from dumpcmp.errors import NotFoundError

    groups: dict[Any, Any] = {}
    holders: dict[Any, list[str]] = {}
    by_key: dict[Any, list[DeviceOp]] = {}
    sizes: dict[str, int] = {}
    skipped = []
    for address, root, index, ops, got in sorted(found, key=lambda f: (f[1], f[0])):
        sizes.update(got)
        skipped += [s for s in index.skipped if s.reason != "not on this worker"]
        for g in index.groups:
            if g.key in groups:
                if [e.path for e in groups[g.key].entries] != [e.path for e in g.entries]:
                    raise DumpcmpError(f"{root}: {g.key.describe()} holds other files on {address} than on "
                                       f"{holders[g.key][0]}: give each host's root once")
            else:
                groups[g.key], by_key[g.key] = g, ops[g.key]
            holders.setdefault(g.key, []).append(address)
    described: dict[str, Any] = {}
    for key in groups:
        other = described.setdefault(key.describe(), key)
        if other != key:
            raise DumpcmpError(f"-l {left}: {key.describe()} is found in two places ({other.folder} on "
                               f"{holders[other][0]}, {key.folder} on {holders[key][0]})")
    if not groups:
        raise NotFoundError(f"-l {left}: no worker found device dump files there (scanned by {len(found)} worker(s))")
    index = DumpIndex(left, groups=sorted(groups.values(), key=lambda g: g.key.sort_key()), skipped=skipped)
    return Placed(index, by_key, {k.describe(): v for k, v in holders.items()}, sizes)


# ---- on the client ------------------------------------------------------------------------------------------------

def _host(address: str) -> str:
    rest = address.partition("://")[2] or address
    return rest.rpartition(":")[0] or rest


def _pair_bytes(pair: TensorPair, sizes: dict[str, int]) -> int:
    """What comparing a pair reads, about (0 for one that is not compared); `sizes`: dump sizes a worker measured
    (a dump the client does not see)."""
    if not pair.comparable:
        return 0
    size = 0
    for ref in (pair.npu_ref, pair.ground_truth_ref):
        if isinstance(ref, DeviceRef):
            tensors = [] if ref.dump is None else ref.dump.inputs if pair.kind == "input" else ref.dump.outputs
            if pair.index is not None and pair.index < len(tensors):
                size += int(tensors[pair.index].size)
            elif ref.dump is None:
                size += sizes.get(ref.entry.path, 0)
        else:
            try:
                size += os.path.getsize(ref.path)
            except (OSError, AttributeError, TypeError):
                pass
    return size + 4096  # a header and a file to open even for a tiny tensor


def batches(pairs: Sequence[TensorPair], workers: int, dump_sizes: dict[str, int] | None = None,
            target: int | None = None) -> list[range]:
    """Consecutive ranges of pairs, each reading about `target` bytes (default _BATCH_BYTES, less when the run is
    small, so that every worker gets several), at most _BATCH_PAIRS pairs. Towards the end they shrink (a share of
    what is left over twice the workers, not below _MIN_BATCH_BYTES and _MIN_BATCH_PAIRS): the last batches
    end at about the same time on every worker, none idle while another finishes a whole large batch."""
    sizes = [_pair_bytes(p, dump_sizes or {}) for p in pairs]
    total = sum(sizes)
    if target is None:
        target = min(_BATCH_BYTES, max(_MIN_BATCH_BYTES, total // max(1, 4 * workers)))
    share = 2 * max(1, workers)
    out, start, held, left = [], 0, 0, total
    most_bytes, most_pairs = target, _BATCH_PAIRS
    for i, size in enumerate(sizes):
        held += size
        if held >= most_bytes or i + 1 - start >= most_pairs:
            out.append(range(start, i + 1))
            left -= held
            start, held = i + 1, 0
            most_bytes = min(target, max(_MIN_BATCH_BYTES, left // share))
            most_pairs = min(_BATCH_PAIRS, max(_MIN_BATCH_PAIRS, (len(sizes) - start) // share))
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


@dataclass
class _Waiting:
    """The futures not yet back, by batch number, the workers each may run on (none listed: any), and since when
    none of those has been there."""

    futures: dict[Any, int] = field(default_factory=dict)
    allowed: dict[int, list[str]] = field(default_factory=dict)
    since: dict[int, float] = field(default_factory=dict)


def threads_by_host(client: Any) -> dict[str, int]:
    """{host: threads of the cluster's workers on it}: what `worker_threads` shares a host's cores among."""
    found: dict[str, int] = {}
    for address, info in client.scheduler_info().get("workers", {}).items():
        host = _host(address)
        found[host] = found.get(host, 0) + int(info.get("nthreads", 1) or 1)
    return found


def worker_threads(threads: int | dict[str, int]) -> int:
    """On a worker: the threads a task may use, `threads` itself, or, given `threads_by_host`, this host's cores
    shared among the worker threads on it."""
    if not isinstance(threads, dict):
        return threads
    return max(1, (os.cpu_count() or 1) // max(1, threads.get(_host(_worker_address()), 1)))


def _reason(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else ""
    return f"the cluster could not run its batch ({type(error).__name__}{': ' + text if text else ''})"


@dataclass
class Task:
    """One batch for `run_tasks`: the function's arguments, the workers that hold its files (None: any), the `-l`
    keys a holder answers to (a holder restarted under a new address takes it back) and its weight on the progress
    bar."""

    args: tuple
    holders: list[str] | None = None
    keys: Sequence[str] = ()
    weight: int = 1
    make: Callable[[], tuple] | None = None
    """The arguments made when the task is submitted (each time it is), instead of `args`: the first task runs
    while the next ones are made, and no task's arguments wait in memory for the others."""


def run_tasks(client: Any, function: Any, tasks: Sequence[Task], label: str, quiet: bool,
              name: str = "dumpcmp",
              on_done: Callable[[int, bool, Any], None] | None = None) -> list[tuple[bool, Any]]:
    """Each task run as `function(*task.args)` on the cluster, in task order: (True, its value) or (False, why it did
    not run: a lost worker's task runs again elsewhere, `retries` more times when it failed itself; a task no worker
    that may run it takes within `timeout` seconds fails). Ctrl-C, SIGTERM or an error cancels the tasks not back.
    `client`: a distributed Client, or a `Cluster` (its `retries` and `timeout`). `on_done(number, ok, value)`: each
    task's outcome handed on as it comes back, in any order, and not kept (its place in the list is (ok, None)).
    The tasks are submitted one by one (each made then, `Task.make`), the outcomes back meanwhile handed on between
    two: the client does not pack every batch before it takes in the first rows."""
    _distributed()
    retries, timeout = (client.retries, client.timeout) if isinstance(client, Cluster) else (1, 60.0)
    client = client.client if isinstance(client, Cluster) else client
    token = uuid.uuid4().hex[:8]
    out: list[tuple[bool, Any] | None] = [None] * len(tasks)
    waiting = _Waiting()

    def settle(number: int, ok: bool, value: Any) -> None:
        if on_done is None:
            out[number] = (ok, value)
        else:
            out[number] = (ok, None)
            on_done(number, ok, value)

    attempts: dict[int, int] = {}

    def submit(number: int, holders: list[str] | None) -> None:
        attempts[number] = attempts.get(number, -1) + 1
        task = tasks[number]
        args = task.args if task.make is None else task.make()
        future = client.submit(function, *args, key=f"{name}-{token}-{number}-{attempts[number]}",
                               pure=False, retries=retries,
                               **({"workers": holders, "allow_other_workers": False} if holders else {}))
        waiting.futures[future] = number
        if holders:
            waiting.allowed[number] = holders
            waiting.since.pop(number, None)

    try:
        look_again, looked, left = time.monotonic() + 4 * _POLL, 0.0, 0  # no look (a round trip) before the first
        ahead = 2 * max(1, len(_alive(client)))  # tasks out before the rows back are taken in: none waits for work
        with Progress(sum(t.weight for t in tasks), label, quiet=quiet) as progress:
            while waiting.futures or left < len(tasks):
                if left < len(tasks):  # one more task made and submitted, or the rows back meanwhile taken in
                    done = []
                    if time.monotonic() - looked >= _SUBMIT_LOOK:
                        looked = time.monotonic()
                        done = [f for f in waiting.futures if f.done()]
                    if not done or len(waiting.futures) - len(done) < ahead:
                        submit(left, tasks[left].holders)
                        left += 1
                else:
                    done = _next_done(waiting)
                for future in done:
                    number = waiting.futures.pop(future)
                    try:
                        value = future.result()
                    except Exception as error:  # KilledWorker, CancelledError, a worker's error: rows say why
                        settle(number, False, _reason(error))
                    else:
                        settle(number, True, value)
                    progress.advance(tasks[number].weight)
                stalled = []
                if (not done and left == len(tasks)) or time.monotonic() >= look_again:  # else every _POLL * 4 s
                    look_again = time.monotonic() + 4 * _POLL
                    alive = _alive(client)
                    for future, holders in _restarted(waiting, alive, [t.keys for t in tasks]):
                        client.cancel([future])
                        submit(waiting.futures.pop(future), holders)
                    stalled = _stalled(client, waiting, timeout, alive)
                for future in stalled:
                    number = waiting.futures.pop(future)
                    whom = "no worker that holds its files" if number in waiting.allowed else "no worker"
                    settle(number, False, f"{whom} was left for {timeout:g} s (lost, or the client lost the "
                                          f"scheduler)")
                    progress.advance(tasks[number].weight)
                if stalled:
                    client.cancel(stalled)
    except BaseException:  # Ctrl-C, SIGTERM, an error of ours: the run's tasks do not outlive it
        if waiting.futures:
            try:
                client.cancel(list(waiting.futures))
            except Exception:
                pass
        raise
    for number, r in enumerate(out):
        if r is None:
            settle(number, False, "its batch did not come back from the cluster")
    return [r for r in out if r is not None]


def cluster_rows(client: Any, runs: Sequence[PairedRun], custom: Any, algos: tuple[int, ...], threads: int,
                 quiet: bool, precise: bool = False, placed: Placed | None = None,
                 max_elements: int = 0, npu_vs_npu: str = "restored",
                 puts: Sequence[Callable[[int, Row], None]] | None = None) -> list[list[Row]] | None:
    """The rows of every run's pairs, in pair order (the rows `dumpcmp.comparison.compare` makes on one machine),
    compared in batches on the cluster `client` is connected to: every run's batches are submitted at once, so the
    workers share all of them. `client`: a distributed Client, or a `Cluster` (its `retries` and `timeout`);
    `threads`: engine threads per task (0: the worker's host's cores shared by the worker threads on it); `placed`:
    the left side as the workers scanned it (each run's batches go to the workers that hold it). Each run's
    notes say which workers compared it. `puts`: for each run, where its rows go as their batches come back, in any
    order (pair number, row; a `dumpcmp.comparison.stream.ReorderBuffer`'s `put`): then none is kept (None is
    returned)."""
    _distributed()
    target = client.batch_bytes if isinstance(client, Cluster) else None
    bare = client.client if isinstance(client, Cluster) else client
    workers = max(1, len(bare.scheduler_info().get("workers", {})))
    engine_threads: int | dict[str, int] = threads if threads > 0 else threads_by_host(bare)
    plan = [(k, span) for k, run in enumerate(runs)
            for span in batches(run.pairs, workers, placed.sizes if placed else None, target)]

    def made(k: int, span: range) -> tuple:
        return (packed(runs[k].pairs[span.start:span.stop]), custom, algos, runs[k].device_vs_device, engine_threads,
                precise, max_elements, npu_vs_npu)

    tasks = [Task((), placed.holders.get(runs[k].run) if placed else None,
                  placed.keys.get(runs[k].run, ()) if placed else (),
                  sum(1 for i in span if runs[k].pairs[i].comparable), partial(made, k, span)) for k, span in plan]
    label = runs[0].run if len(runs) == 1 else f"{len(runs)} runs"
    collected: list[list[Row | None]] | None = None
    if puts is None:  # kept, in pair order
        collected = [[None] * len(run.pairs) for run in runs]
        puts = [partial(_store, rows) for rows in collected]
    given = [bytearray(len(run.pairs)) for run in runs]
    seen: list[set[str]] = [set() for _ in runs]

    def done(number: int, ok: bool, value: Any) -> None:  # a batch back, in any order: its rows go on at once
        k, span = plan[number]
        pairs, put = runs[k].pairs, puts[k]
        if ok:
            address, got = value
            got = rows_back(got)
            seen[k].add(address)
            for i, row in zip(span, got):
                given[k][i] = 1
                put(i, _placed(row, i, pairs[i]))
        for i in span:
            if not given[k][i]:
                given[k][i] = 1
                put(i, _failed_row(i, pairs[i], "" if ok else "not compared: " + value))

    run_tasks(client, compare_batch, tasks, f"comparing {label}", quiet, name="dumpcmp-compare", on_done=done)
    for run, hosts in zip(runs, seen):
        if hosts - {""}:
            run.notes.append(f"compared on {len(hosts - {''})} worker(s): {', '.join(sorted(hosts - {''}))}")
    if collected is None:
        return None
    return [[row for row in rows if row is not None] for rows in collected]


def _store(rows: list[Row | None], number: int, row: Row) -> None:
    rows[number] = row


def _next_done(waiting: _Waiting) -> list[Any]:
    """The futures back within a short wait (none: nothing came back meanwhile). Looked at by polling, which needs
    no default client (a caller's client may not be one) and leaves Ctrl-C free to come at any time."""
    deadline = time.monotonic() + _POLL
    while True:
        done = [f for f in waiting.futures if f.done()]
        if done or time.monotonic() >= deadline:
            return done
        time.sleep(0.02)


def _alive(client: Any) -> dict[str, dict]:
    """The cluster's workers now, {address: info} (none when the client has lost its scheduler)."""
    try:
        return dict(client.scheduler_info().get("workers", {})) if client.status == "running" else {}
    except Exception:
        return {}


def _restarted(waiting: _Waiting, alive: dict[str, dict], keys: Sequence[Sequence[str]]) -> list[tuple[Any, list[str]]]:
    """(future, new holders) for each task whose holders are all gone while a worker on one of their hosts answers to
    the task's `-l` keys: a holder restarted by its nanny (same host and name, new address), which reads the same
    disk."""
    out = []
    for future, number in waiting.futures.items():
        allowed = waiting.allowed.get(number)
        if allowed is None or not keys[number] or set(allowed) & set(alive):
            continue
        hosts = {_host(a) for a in allowed}
        now = sorted(a for a, info in alive.items()
                     if _host(a) in hosts and any(_matches(key, a, info) for key in keys[number]))
        if now:
            out.append((future, now))
    return out


def _stalled(client: Any, waiting: _Waiting, timeout: float, alive: dict[str, dict] | None = None) -> list[Any]:
    """The futures none of whose workers (any, for one not restricted) has been there for `timeout` seconds, or
    whose client has lost its scheduler that long; `alive`: the workers, when just looked at."""
    alive = set(_alive(client) if alive is None else alive)
    now, out = time.monotonic(), []
    for future, number in waiting.futures.items():
        allowed = waiting.allowed.get(number)
        if alive and (allowed is None or alive.intersection(allowed)):
            waiting.since.pop(number, None)
        elif now - waiting.since.setdefault(number, now) >= timeout:
            out.append(future)
    return out


def _placed(row: Row, number: int, pair: TensorPair) -> Row:
    row.index, row.pair = number, pair
    return row


def _failed_row(number: int, pair: TensorPair, reason: str) -> Row:
    """The row of a pair whose batch never came back: as the pairing gives it, failed with the reason."""
    row = Row(index=number, op_type=pair.op_type or "", npu_dump=pair.npu_column, npu_data_type=None,
              npu_address=None, ground_truth=pair.ground_truth_column, ground_truth_data_type=None,
              ground_truth_address=None, tensor_index=pair.tensor_index, shape=None, pair=pair)
    if pair.skip_reason is not None:
        row.skipped, row.fail_reason = True, pair.skip_reason
    else:
        row.failed, row.fail_reason = True, reason or "not compared: its batch did not come back from the cluster"
    return row
