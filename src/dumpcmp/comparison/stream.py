"""Rows in their final order as they are finished, not after the whole run (issue #35).

The order of a run's rows depends on its pairs and graph only, never on what the comparison measured, so it is
computed before comparing (`graph_layout`): every graph op in order, grouped into its fusion units, ops without a
dump file included. Rows then arrive as batches finish, in any order (the engine's batches locally, a cluster's
workers), and a `ReorderBuffer` hands each one on as soon as every row before it has been handed on: it holds only
the rows that arrived early, never the whole table. The local run and the cluster go through the same buffer.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

from dumpcmp.graph.graph_json import Graph, Op
from dumpcmp.graph.pairing import TensorPair, quant_pair_members
from dumpcmp.comparison.rows import Row, graph_group_name, no_dump_reason

__all__ = ["Slot", "RowLayout", "graph_layout", "pair_layout", "ReorderBuffer", "graph_rows"]


class Slot(NamedTuple):
    """One row of the final order: the pair it comes from (`number`, -1 for a graph op without dump file, whose row
    `op` stands for), and, with a graph, the Index, NPUDump and GroundTruth cells of its fusion unit (None: the row
    keeps its own)."""

    number: int
    index: int | None = None
    npu_dump: str | None = None
    ground_truth: str | None = None
    op: Op | None = None


class RowLayout:
    """The final order of a run's rows: `slots` in order, and for each pair number its place among them (-1: the
    pair has no row, as the original leaves it out)."""

    def __init__(self, slots: list[Slot] | None, count: int) -> None:
        self.slots = slots
        self.count = count
        self._place: list[int] | None = None
        if slots is not None:
            self._place = [-1] * count
            for k, slot in enumerate(slots):
                if slot.number >= 0:
                    self._place[slot.number] = k

    def __len__(self) -> int:
        return self.count if self.slots is None else len(self.slots)

    def place(self, number: int) -> int:
        """Where pair `number`'s row goes (-1: nowhere)."""
        return number if self._place is None else self._place[number]

    def kept(self) -> list[int]:
        """The pair numbers that have a row, in pair order."""
        if self._place is None:
            return list(range(self.count))
        return [n for n, k in enumerate(self._place) if k >= 0]


def pair_layout(count: int) -> RowLayout:
    """Rows in pair order, one per pair (no graph JSON)."""
    return RowLayout(None, count)


def graph_layout(pairs: Sequence[TensorPair | None], graph: Graph, quant_pairs_left_out: bool = True) -> RowLayout:
    """The rows as the original lays them out with a graph JSON: every graph op in order, grouped into its fusion
    units (`Index` counts the units), ops without a dump file included; ground truth nothing maps to is left out,
    and so are, as the original's quantization rules say, ops inside a closed quant/dequant pair (the summary names
    them: `quant_left_out`; kept with `quant_pairs_left_out` False, as the original's -map keeps them) and the
    raw-integer tensors of quant (outputs) and dequant (inputs) ops. `pairs[n]` None: that row has no place (a pair
    skipped by the pairing)."""
    left_out = quant_pair_members(graph) if quant_pairs_left_out else set()
    # each fusion unit's ops, the units numbered in order of their first op
    numbers: dict[str, int] = {}
    members: list[list[Op]] = []
    for op in graph.ops:
        name = graph_group_name(op)
        n = numbers.get(name)
        if n is None:
            numbers[name] = len(members)
            members.append([op])
        elif op not in members[n]:
            members[n].append(op)
    by_op: dict[str, list[int]] = {}
    outside: list[int] = []
    for number, p in enumerate(pairs):
        if p is None or p.npu_op is None:
            continue
        graph_op = p.graph_op
        if graph_op is None:
            outside.append(number)
        else:
            mine = by_op.get(graph_op)
            if mine is None:
                by_op[graph_op] = [number]
            else:
                mine.append(number)
    slots: list[Slot] = []
    append, slot, pop = slots.append, tuple.__new__, by_op.pop  # a Slot made without its __new__
    for n, ops in enumerate(members):
        npu = ops[0].name if len(ops) == 1 else ",".join([o.name for o in ops])
        for op in ops:
            name = op.name
            mine = pop(name, None)
            if name in left_out:
                continue
            # "*" for an op the compiler inserted, else its `graph.original_names` joined (inline: once per op)
            originals = op.original_op_names
            truth = name if originals is None else ",".join(originals) if originals else "*"
            if not mine:
                append(slot(Slot, (-1, n, npu, truth, op)))
            else:
                for number in mine:
                    append(slot(Slot, (number, n, npu, truth, None)))
    last = len(members)
    slots += [Slot(number, last) for number in outside + [k for rest in by_op.values() for k in rest]]
    return RowLayout(slots, len(pairs))


def _unmatched(slot: Slot) -> Row:
    op = slot.op
    assert op is not None and slot.index is not None
    return Row(index=slot.index, op_type=op.type, npu_dump=slot.npu_dump or "", npu_data_type=None, npu_address=None,
               ground_truth=slot.ground_truth or "", ground_truth_data_type=None, ground_truth_address=None,
               tensor_index=None, shape=None, unmatched=True, fail_reason=no_dump_reason(op.name, op.type),
               graph_op=op.name)


class ReorderBuffer:
    """Rows put in any order (`put(number, row)`, number: the row's pair; `put_many(first, rows)`: rows of pairs
    `first`, `first + 1`, ...), handed to `sink` in `layout`'s order as soon as every row before them has been: only
    the rows that came early are held. A row with no place in the layout is dropped; with a graph, the row takes its
    fusion unit's Index, NPUDump and GroundTruth. The rows a put lets go are handed on together where a sink takes
    several at once (`many`, e.g. a list's `extend`; a sink with a `many` attribute given to `tee`), else one by one."""

    def __init__(self, layout: RowLayout, sink: Callable[[Row], object],
                 many: Callable[[list[Row]], object] | None = None) -> None:
        self.layout = layout
        self._sinks: list[tuple[Callable[[Row], object], Callable[[list[Row]], object] | None]] = [(sink, many)]
        self._held: dict[int, Row] = {}
        self._next = 0
        self.most_held = 0
        """The most rows held at once (how far ahead of the order rows came)."""

    def tee(self, more: Callable[[Row], object]) -> None:
        """Hand each row to `more` as well, after the sink (before any row is put); `more.many(rows)`, where it has
        one, takes the rows a put lets go together."""
        self._sinks.append((more, getattr(more, "many", None)))

    def _hand_on(self, rows: list[Row]) -> None:
        for one, many in self._sinks:
            if many is not None:
                many(rows)
            else:
                for row in rows:
                    one(row)

    def put(self, number: int, row: Row) -> None:
        self.put_many(number, (row,))

    def putter(self) -> Callable[[int, Row], None]:
        """`put`, with `put_many` as its `many` (what the compare loop hands a batch's rows to)."""
        return _Putter(self)

    def put_many(self, first: int, rows: Sequence[Row]) -> None:
        """The rows of pairs `first`, `first + 1`, ...: `put` of each, the rows they let go handed on together."""
        out: list[Row] = []
        slots, place_of, held = self.layout.slots, self.layout.place, self._held
        for number, row in enumerate(rows, first):
            place = place_of(number)
            if place < 0 or place < self._next or place in held:
                continue
            if slots is not None:
                slot = slots[place]
                if slot.index is not None:
                    row.index = slot.index
                if slot.npu_dump is not None:
                    row.npu_dump, row.ground_truth = slot.npu_dump, slot.ground_truth or ""
            if place != self._next:
                held[place] = row
                self.most_held = max(self.most_held, len(held))
                continue
            out.append(row)
            self._next += 1
            self._release(out)
        if out:
            self._hand_on(out)

    def _release(self, out: list[Row]) -> None:
        slots, held, end = self.layout.slots, self._held, len(self.layout)
        while self._next < end:
            if slots is not None and slots[self._next].number < 0:
                row = _unmatched(slots[self._next])
            else:
                got = held.pop(self._next, None)
                if got is None:
                    return
                row = got
            out.append(row)
            self._next += 1

    def start(self) -> None:
        """Hand on the rows that need no pair at the head of the order (graph ops without dump file)."""
        out: list[Row] = []
        self._release(out)
        if out:
            self._hand_on(out)

    @property
    def complete(self) -> bool:
        return self._next >= len(self.layout)

    def missing(self) -> list[int]:
        """The pair numbers whose rows were never put (empty once complete)."""
        slots = self.layout.slots
        if slots is None:
            return [n for n in range(self._next, self.layout.count) if n not in self._held]
        return [s.number for k, s in enumerate(slots[self._next:], self._next)
                if s.number >= 0 and k not in self._held]


class _Putter:
    def __init__(self, buffer: ReorderBuffer) -> None:
        self.many = buffer.put_many
        self._put = buffer.put

    def __call__(self, number: int, row: Row) -> None:
        self._put(number, row)


def graph_rows(rows: list[Row], graph: Graph, quant_pairs_left_out: bool = True) -> list[Row]:
    """`rows` (one per pair, in pair order) laid out by `graph_layout`; a row skipped by the pairing has no place."""
    pairs = [None if r.pair is None or (r.skipped and r.pair.skip_reason is not None) else r.pair for r in rows]
    out: list[Row] = []
    buffer = ReorderBuffer(graph_layout(pairs, graph, quant_pairs_left_out), out.append)
    buffer.start()
    for number, r in enumerate(rows):
        buffer.put(number, r)
    return out
