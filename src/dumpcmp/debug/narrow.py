"""Narrow: from a statistics compare to the acl.json that dumps full tensors only where the run first diverges.

In: a statistics compare (`dumpcmp.comparison.stats.StatsResult`: rows in execution order with verdicts, the device
side's records with their Data Size and Shape) and, when given, the compiled graph (`dumpcmp.graph.graph_json`).
Out: a `Narrowed` plan (the ops to dump, their bytes, why) and the acl.json that dumps them
(`dumpcmp.device.acljson.new_acl_json`, written by `write_acl_json`: whole or not at all, an existing file kept
without force).

    >>> plan = narrow(result, graph, budget=DEFAULT_BUDGET)
    >>> plan.layers             # the first error's op, then its upstream neighbours, nearest first
    >>> write_narrow_acl_json(plan, "narrow.json", dump_path="/data/dump")

The region: the device op of the first tensor in execution order whose verdict is error (always taken, whatever its
size), then, with a graph, its producers (`Graph.producers`), theirs, and so on, nearest first (breadth first, each
distance in execution order); without a graph, the ops just before it in the statistics' execution order, nearest
first. An op is taken while the bytes of its tensors keep the total within the budget; an op that does not fit is
left out and the search does not go upstream through it (the region stays connected). Ops that produce no dump
(Data, Const, NetOutput, ...: no records and a type the runtime does not dump) are passed through, not listed.

Bytes of an op: the tensors a `dump_mode: all` dump writes for it, inputs and outputs: each tensor's Data Size from
its statistics record, else its Shape times its data type's size, else (with a graph) the output description's
shape and data type, else an input's producer's output; a tensor with none of these counts 0 (noted).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from dumpcmp.errors import ConfigError, DumpcmpError

__all__ = ["DEFAULT_BUDGET", "NO_DUMP_TYPES", "Narrowed", "narrow", "parse_size", "write_narrow_acl_json"]

DEFAULT_BUDGET = 1 << 30
"""1 GiB of tensors: a few hundred activations of a large model (a 4096 x 4096 float16 activation is 32 MiB), under
1% of a full dump of the hundreds of GB such a model writes, small enough to copy off a device and compare in
seconds, large enough to hold the first error's op with its inputs and a few layers above it."""

NO_DUMP_TYPES = frozenset({"Data", "RefData", "Const", "Constant", "Variable", "NetOutput", "AippData"})
"""Op types the runtime writes no dump of (graph inputs, constants, the output collector)."""

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes from `1073741824`, `512M`, `1G`, `1.5GiB`, `300MB` (K, M, G, T: powers of 1024)."""
    m = _SIZE.match(text)
    if m is None:
        raise ConfigError(f"{text!r}: not a size in bytes (like 1073741824, 512M or 1G)")
    value = float(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())
    if not math.isfinite(value) or value < 1:
        raise ConfigError(f"{text!r}: a size must be at least one byte")
    return int(value)


@dataclass
class Narrowed:
    """The region to dump: `layers` (device op names, the first error's op first, then upstream nearest first)."""

    run: str
    model_name: str | None
    first_error: str
    """The first error tensor, as the statistics compare names it (`op:output:0`)."""
    first_op: str
    layers: list[str]
    bytes: dict[str, int]
    """Bytes of each listed op's tensors."""
    budget: int
    left_out: list[str] = field(default_factory=list)
    """Upstream ops that did not fit, nearest first."""
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.bytes.values())

    def summary(self) -> str:
        more = f"; {len(self.left_out)} upstream op{'s' * (len(self.left_out) != 1)} left out (budget)" \
            if self.left_out else ""
        return (f"{self.run}: narrowed to {len(self.layers)} op{'s' * (len(self.layers) != 1)}, "
                f"{_mib(self.total)} of tensors (budget {_mib(self.budget)}): first error {self.first_error}, "
                f"then {', '.join(self.layers[1:]) or 'nothing upstream'}{more}")


def _mib(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def _itemsize(data_type: str | None) -> int | None:
    if not data_type:
        return None
    from dumpcmp.dumps.dump import numpy_dtype
    from dumpcmp.support.lazy_numpy import np

    name = data_type.strip()
    for candidate in (name.upper().removeprefix("DT_"), name):
        try:
            return int(numpy_dtype(candidate).itemsize)
        except DumpcmpError:
            pass
        try:
            return int(np.dtype(candidate.lower()).itemsize)
        except TypeError:
            pass
    return None


def _bytes_of(size: int | None, shape: Sequence[int] | None, data_type: str | None) -> int | None:
    if size is not None:
        return size
    item = _itemsize(data_type)
    if shape is None or item is None:
        return None
    return math.prod(int(d) for d in shape) * item


class _Sizes:
    """Bytes of each op's tensors (module doc)."""

    def __init__(self, records: Mapping[str, Sequence[Any]], graph: Any) -> None:
        self.records = records
        self.graph = graph
        self.unknown: list[str] = []

    def output(self, op: str, index: int) -> int | None:
        for r in self.records.get(op, ()):
            if r.kind == "output" and r.slot == index:
                got = _bytes_of(r.data_size, r.shape, r.data_type)
                if got is not None:
                    return got
        g = self.graph.get(op) if self.graph is not None else None
        desc = g.output(index) if g is not None else None
        return None if desc is None else _bytes_of(None, desc.shape, desc.dtype)

    def of(self, op: str) -> int:
        recs = self.records.get(op, ())
        known: dict[tuple[str, int], int | None] = {(r.kind, r.slot): _bytes_of(r.data_size, r.shape, r.data_type)
                                                    for r in recs}
        g = self.graph.get(op) if self.graph is not None else None
        if g is not None:
            for i in range(len(g.output_desc)):
                if known.get(("output", i)) is None:
                    known[("output", i)] = self.output(op, i)
            for i, prod in enumerate(self.graph.producers(g)):
                if known.get(("input", i)) is None and prod is not None:
                    known[("input", i)] = self.output(prod[0].name, prod[1])
        missing = [f"{op}:{k}:{i}" for (k, i), v in known.items() if v is None]
        self.unknown.extend(missing)
        return sum(v for v in known.values() if v is not None)


def _dumped(op: str, records: Mapping[str, Any], graph: Any) -> bool:
    if op in records:
        return True
    g = graph.get(op) if graph is not None else None
    return g is not None and g.type not in NO_DUMP_TYPES


def _producers_of(names: Sequence[str], graph: Any, seen: set[str]) -> list[str]:
    """The producers of `names`' inputs not seen yet, latest in execution order first (the nearest)."""
    out = []
    for name in names:
        op = graph.get(name)
        for prod in graph.producers(op) if op is not None else ():
            if prod is not None and prod[0].name not in seen:
                seen.add(prod[0].name)
                out.append(prod[0])
    return [op.name for op in sorted(out, key=lambda op: op.position, reverse=True)]


def narrow(result: Any, graph: Any = None, *, budget: int = DEFAULT_BUDGET) -> Narrowed | None:
    """The region of `result` (a `StatsResult`) to dump in full, or None when no tensor is an error (module doc)."""
    first = result.first_error()
    if first is None:
        return None
    records = result.records_by_op()
    first_op = first.pair.npu_op
    sizes = _Sizes(records, graph)
    if graph is not None and graph.get(first_op) is None:
        graph = None  # the graph does not know the op: fall back to the execution order
        notes = [f"{first_op} is not an op of the graph: the ops before it in execution order are taken"]
    else:
        notes = []
    order = list(records)
    layers = [first_op]
    taken = {first_op: sizes.of(first_op)}
    total = taken[first_op]
    if total > budget:
        notes.append(f"{first_op} alone holds {_mib(total)} of tensors, more than the budget {_mib(budget)}: "
                     "it is dumped alone")
    left_out: list[str] = []

    def fits(op: str) -> bool:
        nonlocal total
        size = sizes.of(op)
        if total + size > budget:
            left_out.append(op)
            return False
        layers.append(op)
        taken[op] = size
        total += size
        return True

    if graph is None:
        at = order.index(first_op)
        for op in reversed(order[:at]):  # the ops just before it, nearest first, until one does not fit
            if _dumped(op, records, graph) and not fits(op):
                break
    else:
        seen = {first_op}
        frontier = [first_op]
        while frontier:  # breadth first: each distance upstream, nearest in execution order first
            # an op that does not fit is not gone through; one that is not dumped is passed through, not listed
            frontier = [op for op in _producers_of(frontier, graph, seen)
                        if not _dumped(op, records, graph) or fits(op)]
    if sizes.unknown:
        shown = ", ".join(sizes.unknown[:5]) + (", ..." if len(sizes.unknown) > 5 else "")
        notes.append(f"size unknown (counted 0): {shown}")
    return Narrowed(result.run, result.model_name, first.shown_tensor, first_op, layers, taken, budget, left_out,
                    notes)


def write_narrow_acl_json(plan: Narrowed, path: str | Path, *, dump_path: str, model_name: str | None = None,
                          force: bool = False) -> Path:
    """The acl.json that dumps `plan.layers` (inputs and outputs: dump_mode all, dump_data tensor) of the model,
    written whole or not at all; an existing file is replaced only with `force`."""
    from dumpcmp.device.acljson import ModelDump, new_acl_json, write_acl_json

    name = model_name or plan.model_name
    if not name:
        raise ConfigError(f"{plan.run}: the run has no model name (its statistics file is not in a "
                          "{time}/{device}/{model}/{model_id}/{data_index} folder): the acl.json cannot name the model")
    config = new_acl_json([ModelDump(name, list(plan.layers))], dump_path=dump_path, dump_mode="all",
                          dump_data="tensor")
    return write_acl_json(config, path, force=force)
