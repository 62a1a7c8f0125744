"""Rows of values: one compared tensor each (`Row`), the rows of one run (`ComparisonResult`) with the questions
asked of them (first below a threshold, the worst, the largest drop, what was never dumped), the original tool's
wording for rows it could not compare, and the rows laid out as the original lays them out with a graph JSON.

Rows hold numbers, tuples and None; the texts of the result file are made by `dumpcmp.output.table`.
"""

from __future__ import annotations

import math
import os
import sys
import weakref
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from dumpcmp.comparison.metrics import METRICS, MetricResult
from dumpcmp.graph.graph_json import Graph, Op
from dumpcmp.graph.pairing import TensorPair, quant_pair_members

__all__ = ["Row", "RowStore", "ComparisonResult", "FP16_TINY", "graph_group_name", "weight_inputs", "ops_dumped",
           "finish_row", "no_dump_reason", "no_truth_reason", "count_reason", "dumped_ops", "quant_left_out",
           "metric_notes", "column_note", "metric_texts", "row_status", "is_dead", "is_overflow", "metric_value",
           "cosine_of", "below_fp16", "LetGo", "let_go"]

FP16_TINY = 6.103515625e-05  # float16's smallest normal value


def metric_texts(res: MetricResult, algorithms: Sequence[int]) -> list[str]:
    """The metrics `algorithms` of a result as the original prints them (`MetricResult.format`): one call of the
    core for all of them where it computed exactly those, in that order (a model's worth of rows)."""
    if list(algorithms) == res.metrics:
        return res.formatted()
    return [res.format(i) for i in algorithms]


@dataclass
class Row:
    """One compared tensor (or one side without counterpart), as values: `result` holds the metrics (None when
    nothing was computed), None stands for what a side does not have or was not read. The result file's texts
    (`NaN`, `[1,3,224,224]`, ...) are made from these by `dumpcmp.output.table`."""

    index: int
    op_type: str
    npu_dump: str
    """The device op(s) (`*`: none, as the pairing names a ground-truth-only side)."""
    npu_data_type: str | None
    """The device tensor's NumPy dtype name (None: not read)."""
    npu_address: int | None
    """The device tensor's address (0: the dump records none; None: not read)."""
    ground_truth: str
    ground_truth_data_type: str | None
    ground_truth_address: int | None
    tensor_index: str | None
    """`{op}:output:{i}` / `{op}:input:{i}` (None: no device tensor)."""
    shape: tuple[int, ...] | None
    """The compared shape: the ground truth's the device tensor was converted to, or the flat length (None: not
    read)."""
    result: MetricResult | None = None
    fail_reason: str = ""
    skipped: bool = False
    failed: bool = False
    pair: TensorPair | None = field(default=None, repr=False)
    unmatched: bool = False
    """A graph op with no dump file (the original tool's "There is no dump file for my output operator" row)."""
    not_computed: frozenset[int] = frozenset()
    """Metrics the original does not compute for this row although `result` has them (a bool pair: all but
    cosine similarity)."""
    data_types_unknown: bool = False
    """The original gives no data types for this row (a device tensor without ground truth, or element counts that
    differ), whatever was read."""
    graph_op: str | None = None
    """The graph op of a row without dump file (`unmatched`); other rows have it in `pair`."""
    sources: Callable[[], tuple[Any, Any]] | None = field(default=None, repr=False, compare=False)
    """A row compared from arrays rather than from a pair of files (a SigmaStar dump): gives (device, ground
    truth) as they were compared, for the histograms."""

    @property
    def shown_tensor(self) -> str | None:
        """`tensor_index` as dumpcmp's own texts print it: the op spelt as the graph JSON does when it is known
        (`dumpcmp.graph.pairing.shown_op_name`); the result file's TensorIndex cell keeps `tensor_index`."""
        return self.pair.shown_tensor if self.pair is not None else self.tensor_index

    @property
    def status(self) -> str:
        """'compared', 'failed', 'skipped' or 'unmatched'."""
        return row_status(self.result, self.skipped, self.failed, self.unmatched, self.pair)

    @property
    def cosine(self) -> float:
        return metric_value(self.result, 0)

    def value(self, metric: int) -> float:
        """A metric's value (NaN when not computed); StandardDeviation gives the device side's std."""
        return metric_value(self.result, metric)

    @property
    def dead(self) -> bool:
        """The device side is all zero while the ground truth is not (a layer that stopped producing)."""
        return is_dead(self.result)

    @property
    def overflow(self) -> bool:
        """The device side holds inf or NaN (the fp16 overflow an accelerator run shows)."""
        return is_overflow(self.result)


def metric_value(res: MetricResult | None, metric: int) -> float:
    """`Row.value` of a row's result."""
    if res is None:
        return math.nan
    if metric == 5:
        return float(res.std_x)
    return float(res.value(metric))


def below_fp16(res: MetricResult | None, pair: TensorPair | None, npu_data_type: str | None) -> bool:
    """`ComparisonResult.below_fp16_range` of a row's result, pair and device data type."""
    if res is None or not res.count > 0 or not max(abs(float(res.min_y)), abs(float(res.max_y))) < FP16_TINY:
        return False  # the common case first: the dtype and the pair's relation are asked of tiny ones only
    inserted = pair is not None and str(pair.relation) == "Inserted"  # the output Cast of such a value
    return (npu_data_type or "").lower() == "float16" or inserted


def row_status(result: MetricResult | None, skipped: bool, failed: bool, unmatched: bool,
               pair: TensorPair | None) -> str:
    """`Row.status` from a row's fields (the columns give them without building the row)."""
    if result is not None:
        return "compared"
    if skipped:
        return "skipped"
    if failed:
        return "failed"
    if unmatched:
        return "unmatched"
    if pair is not None and not (pair.npu_ref is not None and pair.ground_truth_ref is not None):
        return "unmatched"
    return "failed"


def is_dead(res: MetricResult | None) -> bool:
    """`Row.dead` of a row's result."""
    return res is not None and res.count > 0 and res.min_x == 0 and res.max_x == 0 and \
        not (res.min_y == 0 and res.max_y == 0)


def is_overflow(res: MetricResult | None) -> bool:
    """`Row.overflow` of a row's result."""
    return res is not None and (res.nan_x > 0 or res.inf_x > 0)


def cosine_of(res: MetricResult | None) -> float:
    """`Row.cosine` of a row's result."""
    return metric_value(res, 0)


# RowStore's columns: op_type, npu_dump, npu_data_type, ground_truth, ground_truth_data_type, tensor_index, shape,
# fail_reason, not_computed and graph_op kept as codes into its table of values (each value once), _WIDTH a row; the
# flags skipped 1, failed 2, unmatched 4, data_types_unknown 8, and which address is None
_WIDTH = 10
_NO_NPU_ADDRESS, _NO_TRUTH_ADDRESS = 16, 32
_PAIRS_TENSOR = -1  # tensor_index: the pair's own


class _PairsTensor:
    """The key `_Codes` gives `_PAIRS_TENSOR`: a row's tensor_index that is its pair's own (never a row's value)."""


class _Codes(dict):  # type: ignore[type-arg]
    """Value -> its code in `values` (the table of values of a RowStore), a new value added when first asked for:
    a batch's codes looked up without a call per value."""

    def __init__(self, values: list[Any]) -> None:
        super().__init__({_PairsTensor: _PAIRS_TENSOR})
        self.values = values

    def __missing__(self, value: Any) -> int:
        code = self[value] = len(self.values)
        self.values.append(value)
        return code


class RowStore:
    """The rows of a run kept as compact columns once they are added (`append`, as they leave the reorder buffer
    and the result file has them): index, addresses, flags, each text as a code into a table of the values, the
    pair and the MetricResult; no `Row` is kept. `row(k)` rebuilds one (the same object while someone holds it),
    `each()` all of them one at a time. The list API (iterating, indexing, `index`) is the Python API's: it builds
    the rows once and keeps them (`materialise`), so the consumers that key rows by identity (advice, gates, the
    report) see the same objects; `release` lets them go again (`ComparisonResult.release`). A row the columns
    cannot hold (a value outside their range) makes the store a plain list from then on."""

    def __init__(self) -> None:
        self._index = array("q")
        self._addresses = array("Q")
        self._flags = bytearray()
        self._codes = array("i")
        self._values: list[Any] = []
        self._code_of = _Codes(self._values)  # str, None, a shape tuple, a frozenset: equal only to their own kind
        self._pairs: list[TensorPair | None] = []
        self._results: list[MetricResult | None] = []
        self._sources: dict[int, Callable[[], tuple[Any, Any]]] = {}
        self._count = 0
        self._list: list[Row] | None = None
        self._plain = False  # a row the columns could not hold: the rows are the list alone
        self._alive: weakref.WeakValueDictionary[int, Row] = weakref.WeakValueDictionary()

    def __len__(self) -> int:
        return len(self._list) if self._plain and self._list is not None else self._count

    def __bool__(self) -> bool:
        return len(self) > 0

    def _code(self, value: Any) -> int:
        return self._code_of[value]

    def append(self, row: Row) -> None:
        if self._plain:
            assert self._list is not None
            self._list.append(row)
            return
        try:
            self._encode(row)
        except (OverflowError, TypeError):  # an address or index beyond 64 bits, an unhashable value
            self._list = self.materialise() + [row]
            self._plain = True
            return
        if self._list is not None:
            self._list.append(row)
        self._count += 1

    def extend(self, rows: Sequence[Row]) -> None:
        """`append` of each row, the columns extended once for them all (a batch of rows the reorder buffer lets
        go); a row the columns cannot hold makes them go one by one, as `append` does."""
        if self._plain or self._list is not None or len(rows) < 2:
            for row in rows:
                self.append(row)
            return
        code = self._code_of
        try:  # everything checked before a column changes: a row they cannot hold leaves them as they were
            index = array("q", [row.index for row in rows])
            addresses = array("Q", [a if a is not None else 0 for row in rows
                                    for a in (row.npu_address, row.ground_truth_address)])
            codes = array("i", [code[v] for row in rows for v in (
                row.op_type, row.npu_dump, row.npu_data_type, row.ground_truth, row.ground_truth_data_type,
                _PairsTensor if row.pair is not None and type(row.tensor_index) is str and
                row.tensor_index == row.pair.tensor_index else row.tensor_index,
                row.shape, row.fail_reason, row.not_computed, row.graph_op)])
        except (OverflowError, TypeError):
            for row in rows:
                self.append(row)
            return
        count = self._count
        self._index.extend(index)
        self._addresses.extend(addresses)
        self._codes.extend(codes)
        self._flags.extend([(1 if row.skipped else 0) | (2 if row.failed else 0) | (4 if row.unmatched else 0) |
                            (8 if row.data_types_unknown else 0) |
                            (_NO_NPU_ADDRESS if row.npu_address is None else 0) |
                            (_NO_TRUTH_ADDRESS if row.ground_truth_address is None else 0) for row in rows])
        self._pairs.extend([row.pair for row in rows])
        self._results.extend([row.result for row in rows])
        for k, row in enumerate(rows, count):
            if row.sources is not None:
                self._sources[k] = row.sources
        self._count = count + len(rows)

    def _encode(self, row: Row) -> None:
        code, pair, tensor = self._code, row.pair, row.tensor_index
        npu, truth = row.npu_address, row.ground_truth_address
        codes = (code(row.op_type), code(row.npu_dump), code(row.npu_data_type), code(row.ground_truth),
                 code(row.ground_truth_data_type),
                 _PAIRS_TENSOR if pair is not None and type(tensor) is str and tensor == pair.tensor_index else
                 code(tensor), code(row.shape), code(row.fail_reason), code(row.not_computed), code(row.graph_op))
        try:  # the numbers first: one out of range leaves the columns as they were
            self._addresses.extend((0 if npu is None else npu, 0 if truth is None else truth))
            self._index.append(row.index)
        except (OverflowError, TypeError):
            del self._addresses[2 * self._count:], self._index[self._count:]
            raise
        self._flags.append((1 if row.skipped else 0) | (2 if row.failed else 0) | (4 if row.unmatched else 0) |
                           (8 if row.data_types_unknown else 0) | (_NO_NPU_ADDRESS if npu is None else 0) |
                           (_NO_TRUTH_ADDRESS if truth is None else 0))
        self._codes.extend(codes)
        self._pairs.append(pair)
        self._results.append(row.result)
        if row.sources is not None:
            self._sources[self._count] = row.sources

    def _decode(self, k: int) -> Row:
        values, flags, pair, at = self._values, self._flags[k], self._pairs[k], _WIDTH * k
        codes = self._codes[at:at + _WIDTH]
        op_type, npu_dump, npu_dtype, truth, truth_dtype, tensor, shape, reason, not_computed, graph_op = \
            [values[c] for c in codes]
        if codes[5] == _PAIRS_TENSOR:
            tensor = pair.tensor_index if pair is not None else None
        # positional, in Row's field order
        return Row(self._index[k], op_type, npu_dump, npu_dtype,
                   None if flags & _NO_NPU_ADDRESS else self._addresses[2 * k], truth, truth_dtype,
                   None if flags & _NO_TRUTH_ADDRESS else self._addresses[2 * k + 1], tensor, shape,
                   self._results[k], reason, bool(flags & 1), bool(flags & 2), pair, bool(flags & 4), not_computed,
                   bool(flags & 8), graph_op, self._sources.get(k))

    def row(self, k: int) -> Row:
        """Row `k`, rebuilt from the columns unless someone holds it (then that object)."""
        if self._list is not None:
            return self._list[k]
        if not 0 <= k < self._count:
            raise IndexError(k)
        got = self._alive.get(k)
        if got is None:
            got = self._decode(k)
            self._alive[k] = got
        return got

    def each(self) -> Iterator[Row]:
        """The rows in order, each rebuilt when reached and let go after (unless the list is kept): a row asked for
        again is another object, unless someone holds the one `row` gave."""
        if self._list is not None:
            return iter(self._list)
        alive, decode = self._alive, self._decode
        if not alive:
            return map(decode, range(self._count))
        return ((alive.get(k) or decode(k)) for k in range(self._count))

    def materialise(self) -> list[Row]:
        """Every row, built once and kept (the list API's)."""
        if self._list is None:  # the rows someone holds are those objects; the list holds the others
            alive = self._alive
            self._list = [alive.get(k) or self._decode(k) for k in range(self._count)]
        return self._list

    @property
    def kept(self) -> bool:
        """The rows are built and kept (`materialise`)."""
        return self._list is not None

    def named(self, k: int, row: Row) -> Row:
        """`row` (row `k` as `each` gave it) named to a caller: `row(k)` and the list give that object while someone
        holds it."""
        if self._list is None:
            self._alive[k] = row
        return row

    def release(self) -> None:
        """Let the kept rows go (the columns keep them); a row someone else holds stays that object for `row` and
        the list built next."""
        if self._plain or self._list is None:
            return
        rows, alive, self._list = self._list, self._alive, None
        for k in range(len(rows)):
            r = rows[k]
            if sys.getrefcount(r) > 3:  # the list, `r` and the call's argument: held elsewhere too
                alive[k] = r

    def __iter__(self) -> Iterator[Row]:
        return iter(self.materialise())

    def __getitem__(self, k: Any) -> Any:
        return self.materialise()[k]

    def index(self, row: Row) -> int:
        return self.materialise().index(row)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RowStore, list)):
            return self.materialise() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RowStore({len(self)} rows)"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_list"] = None if not self._plain else self._list
        state["_alive"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._alive = weakref.WeakValueDictionary()

    # ---- read accessors (issue #35): one of Row's fields for every row, read from the columns, no Row built ------

    def column(self, name: str) -> list[Any]:
        """Field `name` of `Row` (`index`, `op_type`, `npu_data_type`, `result`, `pair`, `skipped`, ...) of every row
        in order, as `row(k).name` gives it, without building the rows: the summary, the advice and the verdict ask
        a model's rows this way and build a `Row` only for the few they print. A new list each call."""
        if self._list is not None:  # kept (or plain): the rows are the truth
            return [getattr(r, name) for r in self._list]
        out: list[Any]
        if name in _CODED:
            values, codes = self._values, self._codes[_CODED.index(name)::_WIDTH]
            if name == "tensor_index":
                out = [values[c] if c != _PAIRS_TENSOR else (p.tensor_index if p is not None else None)
                       for c, p in zip(codes, self._pairs)]
            else:
                out = [values[c] for c in codes]
        elif name == "index":
            out = self._index.tolist()
        elif name == "result":
            out = list(self._results)
        elif name == "pair":
            out = list(self._pairs)
        elif name in _FLAG_BITS:
            bit = _FLAG_BITS[name]
            out = [bool(f & bit) for f in self._flags]
        elif name in ("npu_address", "ground_truth_address"):
            side, none = (0, _NO_NPU_ADDRESS) if name == "npu_address" else (1, _NO_TRUTH_ADDRESS)
            out = [None if f & none else a for f, a in zip(self._flags, self._addresses[side::2])]
        elif name == "sources":
            out = [self._sources.get(k) for k in range(self._count)]
        else:
            raise AttributeError(f"Row has no column {name!r}")
        for k, r in list(self._alive.items()):  # a row someone holds is that object (as `row` gives it)
            out[k] = getattr(r, name)
        return out


# RowStore.column's names of the coded columns (in their order within a row's _WIDTH) and of the flags
_CODED = ("op_type", "npu_dump", "npu_data_type", "ground_truth", "ground_truth_data_type", "tensor_index", "shape",
          "fail_reason", "not_computed", "graph_op")
_FLAG_BITS = {"skipped": 1, "failed": 2, "unmatched": 4, "data_types_unknown": 8}


_SAID = ("status", "cosine", "overflow", "dead", "tiny")  # ComparisonResult.column's questions of each row
_WEIGHT_INPUT = "layer inputs read from a Const"
_NEVER_DUMPED = {"Const": "weights and constants (Const)", "Constant": "weights and constants (Const)",
                 "Data": "inputs (Data)", "NetOutput": "graph outputs (NetOutput)"}


@dataclass
class ComparisonResult:
    """The rows of one run (device, model, iteration) in execution order, with how they were produced. `rows` is a
    list, or for a model-level compare a `RowStore` (compact columns: `for row in result` rebuilds each row as it is
    reached; `result.rows` builds them all once, as a list does)."""

    rows: list[Row]
    algorithms: tuple[int, ...]
    left: str
    right: str
    run: str
    npu_has_address: bool = True
    ground_truth_has_address: bool = False
    notes: list[str] = field(default_factory=list)
    """How the ground truth was chosen (sample folder per iteration, several candidates)."""
    constant_files: frozenset[str] = frozenset()
    """Ground-truth files holding weights or constants (golden_index.csv): reported apart, never "first bad"."""
    weight_inputs: frozenset[str] = frozenset()
    """TensorIndex of the input rows a graph's Const op feeds (weights: no dump, no ground truth of their own)."""
    dumped_ops: tuple[str, ...] | None = None
    """The device ops the run dumped, in order (None: not counted)."""
    left_out: tuple[str, ...] = ()
    """Dumped device ops with no row, left out as the original tool leaves out ops inside a quant/dequant pair."""
    graph: Graph | None = field(default=None, repr=False, compare=False)
    """The graph JSON the rows were paired through (None: paired by name): its edges measure `drops`. Read without
    its attribute dicts (every `attrs` is `NO_ATTRS`); `dumpcmp.graph.load_graph(path)` reads them."""
    op_sequence: Mapping[int, int] | None = field(default=None, repr=False, compare=False)
    """The OpSequence column (`-r`/`-s`, dumpcmp.comparison.op_range): id(row) -> its graph op's id."""
    custom_algorithms: Any = field(default=None, repr=False, compare=False)
    """The `-alg` columns when custom algorithms are in play (`dumpcmp.comparison.custom_alg.CustomAlgorithms`)."""
    extra_columns: Mapping[str, Callable[[Row], str]] | None = field(default=None, repr=False, compare=False)
    """Columns the rows carry beyond the original tool's (name -> cell of a row), after them in every table: a
    SigmaStar compare's MSE, RelativeL1, Jump and Note (`dumpcmp.comparison.sigmastar.as_comparison`)."""
    _drops: tuple[Any, list[tuple[int | None, int, float]]] | None = field(default=None, init=False, repr=False,
                                                                           compare=False)
    _columns: tuple[Any, dict[str, list[Any]]] | None = field(default=None, init=False, repr=False, compare=False)

    def below_fp16_range(self, row: Row) -> bool:
        """A float16 device tensor (or a compiler-inserted Cast/TransData of one) whose ground truth lies wholly below
        float16's normal range (|x| < 6.1e-5): it rounds to zero or a few subnormal steps, so its cosine similarity
        says nothing about the layer."""
        return below_fp16(row.result, row.pair, row.npu_data_type)

    def is_constant(self, row: Row) -> bool:
        return self.constant_pair(row.pair)

    def constant_pair(self, pair: TensorPair | None) -> bool:
        """`is_constant` of the row with this pair."""
        if not self.constant_files:
            return False
        ref = pair.ground_truth_ref if pair is not None else None
        return ref is not None and getattr(ref, "path", None) in self.constant_files

    # ---- the rows' columns (issue #35): the questions below read them and build a Row only for what they name ----

    def column(self, name: str) -> list[Any]:
        """Field `name` of every row in order (`RowStore.column`: a model's rows are not built for it), or what Row
        says of it: `status`, `cosine`, `overflow`, `dead` and `tiny` (`below_fp16_range`). Read only: the list may
        be the one the next call gives."""
        rows = self.rows
        cache = None
        if isinstance(rows, RowStore) and not rows.kept:  # kept rows may be changed by their holders: asked anew
            key = (id(rows), len(rows))
            if self._columns is None or self._columns[0] != key:
                self._columns = (key, {})
            cache = self._columns[1]
            got = cache.get(name)
            if got is not None:
                return got
        if name in _SAID:
            got = self._said(name)
        else:
            got = rows.column(name) if isinstance(rows, RowStore) else [getattr(r, name) for r in rows]
        if cache is not None:
            cache[name] = got
        return got

    def _said(self, name: str) -> list[Any]:
        column = self.column
        results = column("result")
        if name == "status":
            return list(map(row_status, results, column("skipped"), column("failed"), column("unmatched"),
                            column("pair")))
        if name == "cosine":
            return list(map(cosine_of, results))
        if name == "overflow":
            return list(map(is_overflow, results))
        if name == "dead":
            return list(map(is_dead, results))
        tiny = [below_fp16(res, None, "float16") for res in results]  # the range first: the others of tiny ones
        if any(tiny):
            pairs, dtypes = column("pair"), column("npu_data_type")
            tiny = [t and below_fp16(results[k], pairs[k], dtypes[k]) for k, t in enumerate(tiny)]
        return tiny

    def row_at(self, k: int) -> Row:
        """Row `k` (from a `RowStore`: rebuilt, the same object while someone holds it)."""
        return self.rows.row(k) if isinstance(self.rows, RowStore) else self.rows[k]

    def statuses(self) -> list[str]:
        """`Row.status` of every row, from the columns."""
        return list(self.column("status"))

    def tiny_positions(self) -> list[int]:
        """The positions of the rows `below_fp16_range` leaves out, from the columns."""
        return [k for k, t in enumerate(self.column("tiny")) if t]

    def drops(self) -> list[tuple[Row | None, Row, float]]:
        """How much each compared output loses along the graph's producer -> consumer edges: (its worst compared
        upstream output, the row, that one's cosine minus the row's). Upstream means the nearest compared outputs
        reached through the op's data inputs (ops whose outputs have no usable row, such as quantize ops, are looked
        through); an op fed only by the model's inputs (or constants) is measured from 1.0 (upstream None).
        Execution order is not a path: two consecutive rows may sit on different branches. Constants, NaN cosines
        and float16 tensors below float16's range are never an end. Empty without the graph JSON (`fusion_json`):
        without it no edge is known."""
        at = self.row_at
        return [(None if u is None else at(u), at(k), d) for u, k, d in self.drop_positions()]

    def drop_positions(self) -> list[tuple[int | None, int, float]]:
        """`drops` as row positions (upstream None: the model's inputs), measured once (the summary, the advice and
        the report each ask) and again only when the rows change. Read only."""
        graph = self.graph
        if graph is None:
            return []
        key = (id(self.rows), len(self.rows), id(graph))
        if isinstance(self.rows, RowStore) and self.rows.kept or not isinstance(self.rows, RowStore):
            key += (tuple(map(id, self.column("result"))),)  # rows someone can change: their results too
        if self._drops is None or self._drops[0] != key:
            self._drops = (key, self._measure_drops(graph))
        return self._drops[1]

    def _measure_drops(self, graph: Graph) -> list[tuple[int | None, int, float]]:
        # (graph op, output) -> (cosine, position) of the first usable row of that output; `ends`: each usable row
        # where it stands among the rows, with its output and cosine (a row that is not the first of its output
        # is no end)
        usable: dict[tuple[str, int], tuple[float, int]] = {}
        ends: list[tuple[int, str, float]] = []
        constants = bool(self.constant_files)
        tiny, cosines, pairs = self.column("tiny"), self.column("cosine"), self.column("pair")
        isnan, setdefault = math.isnan, usable.setdefault
        for k, res in enumerate(self.column("result")):
            if res is None:
                continue
            p = pairs[k]
            if p is not None and p.kind == "output" and p.graph_op is not None and \
                    not (constants and self.constant_pair(p)) and not tiny[k]:
                cosine = cosines[k]
                if not isnan(cosine) and setdefault((p.graph_op, p.index or 0), (cosine, k))[1] == k:
                    ends.append((k, p.graph_op, cosine))
        consts = {"Const", "Constant", "Variable", "ConstPlaceHolder"}
        done: dict[str, tuple[float, int | None] | None] = {}  # op -> the worst of what reaches it (None: constants)
        producers = graph.producers
        for op in graph.ops:  # execution order: producers come first
            worst: tuple[float, int | None] | None = None
            if op.data_inputs:
                for prod in producers(op):
                    if prod is None:
                        continue
                    src, i = prod
                    got: tuple[float, int | None] | None = usable.get((src.name, i))
                    if got is not None:
                        pass
                    elif src.type in consts:
                        got = None
                    elif not src.data_inputs:
                        got = (1.0, None)  # a model input (Data) or an op that reads nothing: exact
                    else:
                        got = done.get(src.name, (1.0, None))  # looked through; not yet seen (a later op): unknown
                    if got is not None and (worst is None or got[0] < worst[0]):
                        worst = got
            done[op.name] = worst
        out = []
        append, exact = out.append, (1.0, None)
        for k, graph_op, cosine in ends:
            start = done.get(graph_op) or exact  # (the names in `done` are the graph's)
            append((start[1], k, start[0] - cosine))
        return out

    def largest_drop_at(self) -> tuple[int | None, int, float] | None:
        """`largest_drop` as positions, with the fall."""
        best = max(self.drop_positions(), key=lambda d: d[2], default=None)
        return best if best is not None and best[2] > 0 else None

    def largest_drop(self) -> tuple[Row | None, Row] | None:
        """(upstream, row) of the largest fall in cosine similarity along a producer -> consumer path (`drops`):
        where the error enters. `upstream` None: measured from the model's inputs (1.0). None without the graph or
        when no cosine falls."""
        best = self.largest_drop_at()
        if best is None:
            return None
        return (None if best[0] is None else self.row_at(best[0]), self.row_at(best[1]))

    def __iter__(self) -> Iterator[Row]:
        """The rows in order; from a `RowStore` each is rebuilt when reached and let go after."""
        return self.rows.each() if isinstance(self.rows, RowStore) else iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def release(self) -> None:
        """Let go the rows `result.rows` built from a `RowStore` (its columns keep them) and the columns read from
        it; nothing for a list."""
        if isinstance(self.rows, RowStore):
            self.rows.release()
            self._columns = None

    def counts(self) -> dict[str, int]:
        out = {"compared": 0, "failed": 0, "skipped": 0, "unmatched": 0}
        for status in self.statuses():
            out[status] += 1
        return out

    def never_dumped(self) -> dict[str, int]:
        """The unmatched rows of ops a device never dumps, counted by kind ("weights and constants (Const)", "inputs
        (Data)", "graph outputs (NetOutput)", "layer inputs read from a Const"): kept apart from layers whose dump
        is missing."""
        out: dict[str, int] = {}
        tensors, op_types = self.column("tensor_index"), self.column("op_type")
        for k, status in enumerate(self.statuses()):
            what = None
            if status == "unmatched":
                what = _WEIGHT_INPUT if tensors[k] in self.weight_inputs else _NEVER_DUMPED.get(op_types[k])
            if what is not None:
                out[what] = out.get(what, 0) + 1
        return out

    def first_below_at(self, threshold: float = 0.99) -> int | None:
        """`first_below`'s position."""
        column = self.column
        tiny, results, pairs, overflow, dead = column("tiny"), column("result"), column("pair"), column("overflow"), \
            column("dead")
        constants = bool(self.constant_files)
        for k, c in enumerate(column("cosine")):
            if c < threshold or (math.isnan(c) and (overflow[k] or dead[k])):  # NaN without a result: not these
                if results[k] is None or tiny[k] or constants and self.constant_pair(pairs[k]):
                    continue
                return k
        return None

    def first_below(self, threshold: float = 0.99) -> Row | None:
        """The first compared row in execution order whose cosine similarity is below `threshold` (or NaN while
        the device side holds NaN/inf)."""
        k = self.first_below_at(threshold)
        return None if k is None else self.row_at(k)

    def worst(self, n: int = 10, *, distinct: bool = False) -> list[Row]:
        """The `n` compared rows with the lowest cosine similarity (rows whose cosine is NaN because a side is all
        zero come last). `distinct`: one row per ground-truth tensor and result, so an op's output and the next
        op's input (the same values, dumped twice) take one place."""
        column = self.column
        cosines, overflow, dead, indexes = column("cosine"), column("overflow"), column("dead"), column("index")

        def rank(k: int) -> tuple[bool, float, int]:
            c = cosines[k]
            broken = math.isnan(c) and (overflow[k] or dead[k])  # NaN because the device overflowed or went all zero
            return (math.isnan(c) and not broken, -math.inf if broken else c, indexes[k])

        # (rank, position), sorted by rank alone as the rows were (stable); rows rebuilt only for the places given
        constants = bool(self.constant_files)
        pairs = column("pair")
        ranked = sorted([(rank(k), k) for k, res in enumerate(column("result"))
                         if res is not None and not (constants and self.constant_pair(pairs[k]))],
                        key=lambda e: e[0])
        at = self.row_at
        if not distinct:
            return [at(k) for _, k in ranked[:n]]
        seen: set[tuple[Any, ...]] = set()
        unique: list[Row] = []
        for _, k in ranked:
            if len(unique) >= n:
                break
            r = at(k)
            key = (r.pair.ground_truth_key if r.pair else r.ground_truth,
                   tuple(metric_texts(r.result, self.algorithms)))
            if key not in seen:
                seen.add(key)
                unique.append(r)
        return unique

    # ---- output: the writers live in dumpcmp.output.table; these methods are the public API's doors to them -------
    # (imported when called: the comparison stage comes before the output stage and never imports it at load time)

    def header(self, *, extra: bool = False, overflow: bool = False) -> list[str]:
        from dumpcmp.output.table import header

        return header(self, extra=extra, overflow=overflow)

    def table(self, *, extra: bool = False, overflow: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> list[list[str]]:
        """Header and rows as the strings the result file holds; `columns` (name -> cell of a row) are added after
        the original tool's (`compare --locate`)."""
        from dumpcmp.output.table import table

        return table(self, extra=extra, overflow=overflow, columns=columns)

    def write(self, path: str | os.PathLike[str], *, csv_format: bool | None = None, extra: bool = False,
              overflow: bool = False, force: bool = False,
              columns: Mapping[str, Callable[[Row], str]] | None = None) -> Path:
        """Write the result file: CSV (the default for a `.csv` name, or with csv_format=True) or an aligned text
        table. The file appears whole or not at all; an existing file is kept unless `force`."""
        from dumpcmp.output.table import write

        return write(self, path, csv_format=csv_format, extra=extra, overflow=overflow, force=force,
                     columns=columns)

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per row with the columns (as the result file prints them) and the raw metric values (floats, not
        strings)."""
        from dumpcmp.output.table import side_texts  # the cell texts, imported when called (see `header`)

        recs = []
        for r in self:
            texts = side_texts(r)
            rec: dict[str, Any] = {
                "Index": r.index, "OpType": r.op_type, "NPUDump": r.npu_dump, "NPUDataType": texts["NPUDataType"],
                "NPUAddress": texts["NPUAddress"], "GroundTruth": r.ground_truth,
                "GroundTruthDataType": texts["GroundTruthDataType"], "TensorIndex": texts["TensorIndex"],
                "Shape": texts["Shape"], "Status": r.status,
            }
            for i in self.algorithms:
                if i == 5:
                    res = r.result
                    rec.update({"MeanNPU": math.nan if res is None else res.mean_x,
                                "StdNPU": math.nan if res is None else res.std_x,
                                "MeanGroundTruth": math.nan if res is None else res.mean_y,
                                "StdGroundTruth": math.nan if res is None else res.std_y})
                else:
                    rec[METRICS[i]] = r.value(i)
            if self.custom_algorithms is not None:  # custom algorithms' texts, metric plug-ins' numbers
                rec.update(self.custom_algorithms.values(r))
            res = r.result
            rec["MeanSquaredError"] = math.nan if res is None else res.mse
            rec["SQNR(dB)"] = math.nan if res is None else res.sqnr_db
            rec["CompareFailReason"] = r.fail_reason
            recs.append(rec)
        return recs

    def to_pandas(self) -> Any:
        import pandas as pd  # optional: only for users who ask for a DataFrame

        return pd.DataFrame.from_records(self.to_records())

    def summary(self, threshold: float = 0.99, worst: int = 10) -> str:
        """What the terminal shows after a run: counts, the first tensor below the threshold, the worst ones."""
        from dumpcmp.output.table import summary  # the output stage, imported when called (see `header`)

        return summary(self, threshold, worst)  # from the columns: rows built only for what it names


@dataclass(frozen=True, slots=True)
class LetGo:
    """A pair's side whose file the run has compared and let go (`compare_runs(keep_refs=False)`): its device
    dump's header, its scan entry and its DeviceRef freed, its path alone kept (`ComparisonResult.constant_pair`
    reads it; "" where no ground-truth file is a constant). Never None, as the side it stands for: a row's status
    reads the same."""

    path: str = ""


_LET_GO = LetGo()


def let_go(pairs: Sequence[TensorPair], constant_files: frozenset[str]) -> None:
    """Each pair's `npu_ref` and `ground_truth_ref` replaced by a `LetGo` once its row is put and no tensor of it
    is read again (the CLI without --html): what they hold (headers, scan entries) goes with the last pair that
    names it, while the run goes on."""
    gone = _LET_GO
    for p in pairs:
        fields = p.__dict__  # a frozen record: changed as `pairing` makes it, through its __dict__
        if fields["npu_ref"] is not None:
            fields["npu_ref"] = gone
        truth = fields["ground_truth_ref"]
        if truth is not None:
            path = getattr(truth, "path", None) if constant_files else None
            fields["ground_truth_ref"] = gone if path is None or path not in constant_files else LetGo(path)


# The original tool's own wording for rows it could not compare (users' scripts match these texts).
def no_dump_reason(op_name: str, op_type: str) -> str:
    return f'[{op_name}] There is no dump file for my output operator "{op_name}". The type is {op_type}.'


def no_truth_reason(op_name: str, tensor_index: str) -> str:
    return f"[{op_name}] There is no the ground truth dump file for {tensor_index}."


def count_reason(op_name: str, left: int, right: int) -> str:
    return (f"[{op_name}] Due to the different shapes on the left and right,the left dump data({left}) can not be "
            f"compared to the right dump data({right}). Please check the batch of the dump data or the shape may be "
            f"changed due to optimization.")


_SCALAR_REASON = "This tensor is scalar."
# What the original says for a bool tensor: only cosine similarity is computed (its RelativeEuclideanDistance
# fails in NumPy's bool subtraction, and the message is kept).
_BOOL_RED = ("Failed to execute 'compare' in 'RelativeEuclideanDistance'. numpy boolean subtract, the `-` operator, "
             "is not supported, use the bitwise_xor, the `^` operator, or the logical_xor function instead.")


def _bool_reason(algos: Sequence[int]) -> str:
    return ",".join(_BOOL_RED if i == 3 else f"Algorithm {METRICS[i]} does not support Boolean types."
                    for i in algos if i != 0)


def _all_zero(lo: float, hi: float) -> bool:
    return lo == 0 and hi == 0


def metric_notes(res: MetricResult, algos: Sequence[int], ctx: tuple[bool, bool, str, str]) -> dict[int | str, str]:
    """The original's notes on a computed row by metric index (bool, an all-zero side), "scalar" for the scalar
    note, in the order `finish_row` joins them."""
    scalar, boolean, left_path, right_path = ctx
    notes: dict[int | str, str] = {}
    if boolean:
        notes.update((i, _bool_reason((i,))) for i in algos if i != 0)
    elif res.count > 0 and 0 in algos:
        zero_x = _all_zero(res.min_x, res.max_x)
        zero_y = _all_zero(res.min_y, res.max_y)
        if zero_x != zero_y:  # both zero: cosine 1.0 and no note
            notes[0] = (f"Cannot compare by Cosine Similarity. All the data is zero in "
                        f"{left_path if zero_x else right_path}.")
    if scalar:
        notes["scalar"] = _SCALAR_REASON
    return notes


def column_note(notes: Mapping[int | str, str], metric: int) -> str:
    """The note a metric's own column gives in the original (its algorithms, one message each, in column order):
    for cosine similarity the scalar note, which it gives instead of any other."""
    return (notes.get("scalar") or notes.get(0, "")) if metric == 0 else notes.get(metric, "")


def finish_row(row: Row, res: MetricResult, algos: Sequence[int], ctx: tuple[bool, bool, str, str]) -> None:
    """The original's notes on a computed row: scalar, bool, an all-zero side."""
    if ctx[1]:
        row.not_computed = frozenset(i for i in algos if i != 0)
    row.fail_reason = ",".join(r for r in metric_notes(res, algos, ctx).values() if r)


def graph_group_name(op: Op) -> str:
    """The original tool's fusion-op key: ops sharing it are one comparison unit with one Index."""
    if op.l1_fusion_no:
        return "l1:" + op.l1_fusion_no
    names = op.original_op_names
    if not names:
        return op.name
    if len(names) == 1:
        return names[0] or op.name
    return "multi:" + "\x00".join(names)


def dumped_ops(rows: Iterable[Row]) -> list[str]:
    """The device ops that have a dump file among the rows, in order, each once."""
    return ops_dumped([r.pair for r in rows])


def ops_dumped(pairs: Iterable[TensorPair | None]) -> list[str]:
    """`dumped_ops` of the rows these pairs give (known before comparing)."""
    seen: dict[str, None] = {}
    for p in pairs:
        if p is not None and p.npu_op is not None and p.npu_ref is not None:
            seen.setdefault(p.npu_op, None)
    return list(seen)


def quant_left_out(pairs: Iterable[TensorPair | None], graph: Graph) -> tuple[str, ...]:
    """The dumped device ops `graph_layout` leaves out as inside a quant/dequant pair (the summary names them)."""
    members = quant_pair_members(graph)
    if not members:
        return ()
    return tuple(dict.fromkeys(p.npu_op for p in pairs if p is not None and p.npu_ref is not None
                               and p.npu_op is not None and p.graph_op in members))


def weight_inputs(pairs: Iterable[TensorPair | None], graph: Graph) -> frozenset[str]:
    """The TensorIndex of every input row (of these pairs) whose producer in the graph is a Const op."""
    found = set()
    for p in pairs:
        if p is None or p.kind != "input" or p.graph_op is None or p.index is None or p.tensor_index is None:
            continue
        op = graph.get(p.graph_op)
        src = graph.producer(op, p.index) if op is not None else None
        if src is not None and src[0].type in ("Const", "Constant"):
            found.add(p.tensor_index)
    return frozenset(found)
