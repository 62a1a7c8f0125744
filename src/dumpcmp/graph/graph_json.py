"""The model compiler's graph JSON (`atc --mode=1 --om=model.om --json=model.json`) and quantization fusion rules.

The graph tells which original (Caffe / TensorFlow / ONNX) operators each compiled operator stands for, and per
output which original tensor it holds. `load_graph` reads it into a `Graph`; `merge` composes a `-f` graph with a
`-q` quantization fusion rule file (same schema) so that the compiled ops point straight at the non-quantized
originals. The rules of the schema live once, in the core (native/bindings/bind_graph.cpp over the JSON layer of
native/src/graph_json.cpp), which reads every document: tolerant of the quirks real files have (`null` attribute
values, empty lists that carry only `val_type`, integers written as strings, a missing `id` (protobuf's JSON printer
drops zero), absent optional inputs written as `""`), and saying what is wrong with any other, naming the file.
`parse_graph` and `attr_value` read already-decoded values through the same core.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from dumpcmp.errors import ConfigError

__all__ = [
    "ATTR_ORIGINAL_OP_NAMES",
    "ATTR_L1_FUSION_NO",
    "ATTR_IS_MULTIOP",
    "ATTR_ORIGIN_NAME",
    "ATTR_ORIGIN_OUTPUT_INDEX",
    "ATTR_ORIGIN_FORMAT",
    "TensorDesc",
    "InputRef",
    "Op",
    "Graph",
    "NO_ATTRS",
    "attr_value",
    "parse_graph",
    "load_graph",
    "merge",
    "merge_close_fusion",
]

ATTR_ORIGINAL_OP_NAMES = "_datadump_original_op_names"
ATTR_L1_FUSION_NO = "_L1_fusion_sub_graph_no"
ATTR_IS_MULTIOP = "_datadump_is_multiop"
ATTR_ORIGIN_NAME = "_datadump_origin_name"
ATTR_ORIGIN_OUTPUT_INDEX = "_datadump_origin_output_index"
ATTR_ORIGIN_FORMAT = "_datadump_origin_format"


class _NoAttrs(Mapping[str, Any]):
    """An empty, read-only mapping, one for the process: copied, deep-copied and pickled as itself."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "NO_ATTRS"

    def __reduce__(self) -> str:
        return "NO_ATTRS"  # the module's global of that name

    def __copy__(self) -> _NoAttrs:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _NoAttrs:
        return self


#: The `attrs` of every Op and TensorDesc of a graph read with `load_graph(..., attrs=False)`: one shared, empty,
#: read-only mapping (the attribute dicts are 40% of a graph's memory and only `attrs` holds them).
NO_ATTRS: Mapping[str, Any] = _NoAttrs()

def attr_value(value: Any) -> Any:
    """The Python value of one attribute value object (read by the core, as in a graph file).

    `{"s": str}` -> str, `{"i": n}` -> int (also when written as a string), `{"b": ...}` -> bool, `{"f": ...}` ->
    float, `{"list": {...}}` -> list of the carried elements (`[]` for a list with only `val_type`), `null` -> None.
    Any other shape (tensors, sub-graphs, functions) is returned as a dict. Raises ValueError on a malformed value.
    """
    try:
        graph = parse_graph({"graph": {"op": [{"name": "x", "attr": [{"key": "k", "value": value}]}]}})
    except ConfigError as error:
        text = str(error)
        raise ValueError(text[len(_ATTR_PREFIX):] if text.startswith(_ATTR_PREFIX) else text) from None
    return graph.ops[0].attrs["k"]


_ATTR_PREFIX = "<graph JSON>: graph 'graph_0' op 'x': attribute 'k': "


@dataclass(frozen=True, slots=True)  # 10^5 of each: no dict of values each
class TensorDesc:
    """One `input_desc`/`output_desc` entry: the device-side description and the original tensor it holds.

    `origin_name`/`origin_output_index` are the explicit `_datadump_origin_*` attributes (None when absent);
    `origin_format` is `_datadump_origin_format`, falling back to `origin_format`; `origin_data_type` is
    `_datadump_origin_data_type`, falling back to `origin_data_type`.
    """

    dtype: str | None = None
    layout: str | None = None
    shape: tuple[int, ...] | None = None
    origin_name: str | None = None
    origin_output_index: int | None = None
    origin_format: str | None = None
    origin_shape: tuple[int, ...] | None = None
    origin_data_type: str | None = None
    attrs: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def has_origin(self) -> bool:
        """True when the compiler said explicitly which original tensor this is."""
        return self.origin_name is not None


@dataclass(frozen=True, slots=True)  # 10^5 of each: no dict of values each
class InputRef:
    """One data input of an op: `input[slot]` reads output `index` of op `producer`.

    `slot` indexes the op's `input` list and `input_desc`; the position of the InputRef in `Op.data_inputs` is the
    input index the device dump uses (absent optional inputs and control edges are not dumped).
    """

    slot: int
    producer: str
    index: int


@dataclass(frozen=True, slots=True)  # 10^5 of each: no dict of values each
class Op:
    """One compiled operator of the graph."""

    name: str
    type: str
    id: int
    graph: str
    position: int
    """Place in execution order over the whole file (0-based), fixed when the Graph is built."""
    inputs: tuple[str, ...] = ()
    """The raw `input` strings, control edges and "" included."""
    data_inputs: tuple[InputRef, ...] = ()
    control_inputs: tuple[str, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    input_desc: tuple[TensorDesc, ...] = field(default=(), repr=False)
    output_desc: tuple[TensorDesc, ...] = field(default=(), repr=False)
    original_op_names: tuple[str, ...] | None = None
    """`_datadump_original_op_names`: None when absent (the op is its own original), () when present but empty
    (the compiler inserted the op)."""
    l1_fusion_no: str | None = None
    is_multiop: bool = False
    unmerged_original_op_names: tuple[str, ...] | None = None
    """After `merge`: the original names as the `-f` file wrote them (names in the quantized model); else the
    same as `original_op_names`."""

    @property
    def is_inserted(self) -> bool:
        """The compiler inserted this op: it carries an empty `_datadump_original_op_names`."""
        return self.original_op_names == ()

    def output(self, index: int) -> TensorDesc | None:
        return self.output_desc[index] if 0 <= index < len(self.output_desc) else None


def _placed(op: Op, position: int) -> Op:
    """`op` at `position`: a parsed op not yet placed (-1) gets its place in itself (a copy of each of 10^5 ops
    costs as much as parsing them); an op already placed elsewhere is copied."""
    if op.position == position:
        return op
    if op.position == -1:
        object.__setattr__(op, "position", position)
        return op
    return replace(op, position=position)


class Graph:
    """The compiled graph(s) of one file: ops by name, in execution order, and who produces each input.

    Execution order is by graph (in file order), then `id`, then place in the file. When two graphs hold an op of
    the same name, lookups by name return the first in execution order, but producers resolve inside the op's own
    graph first.
    """

    def __init__(self, ops: list[Op], graph_names: tuple[str, ...], path: str | None = None, name: str = "", *,
                 in_order: bool = False, by_name: dict[str, Op] | None = None) -> None:
        """`in_order`: `ops` are already in execution order, each at its place (`position`), as the graph JSON
        reader gives them for a file whose ops are in order; not sorted again. `by_name`: with `in_order`, {name:
        op} of those ops in that order, given by a caller that made it while no name repeated."""
        if in_order:
            self._ops: tuple[Op, ...] = tuple(ops)
        else:
            graph_rank = {g: n for n, g in enumerate(graph_names)}
            indexed = sorted(enumerate(ops),
                             key=lambda t: (graph_rank.get(t[1].graph, len(graph_rank)), t[1].id, t[0]))
            self._ops = tuple(_placed(op, pos) for pos, (_, op) in enumerate(indexed))
        self.graph_names = graph_names
        self.path = path
        self.name = name
        self.duplicate_names: list[str] = []
        # the first op of each name (in execution order), overall and per graph: built in C where no name repeats
        if by_name is None or not in_order:
            by_name = dict(zip([op.name for op in self._ops], self._ops))
        graphs = set(graph_names) if in_order and len(graph_names) == 1 and self._ops \
            else {op.graph for op in self._ops}
        if len(by_name) == len(self._ops) and len(graphs) <= 1:
            self._by_name: dict[str, Op] = by_name
            # the one graph's lookup is the overall one (neither is changed once built): not a copy of 10^5 names
            self._by_graph: dict[str, dict[str, Op]] = {g: by_name for g in graphs}
        else:
            self._by_name = {}
            self._by_graph = {}
            for op in self._ops:
                if op.name in self._by_name:
                    self.duplicate_names.append(op.name)
                else:
                    self._by_name[op.name] = op
                self._by_graph.setdefault(op.graph, {}).setdefault(op.name, op)
        self._consumers_of: dict[str, list[tuple[Op, int]]] | None = None  # made at the first `consumers` call

    @property
    def _consumers(self) -> dict[str, list[tuple[Op, int]]]:
        if self._consumers_of is None:
            consumers: dict[str, list[tuple[Op, int]]] = {}
            for op in self._ops:
                for n, ref in enumerate(op.data_inputs):
                    consumers.setdefault(ref.producer, []).append((op, n))
            self._consumers_of = consumers
        return self._consumers_of

    # --- lookups -------------------------------------------------------------------------------------------------
    @property
    def ops(self) -> tuple[Op, ...]:
        """All ops in execution order."""
        return self._ops

    @property
    def ops_by_name(self) -> Mapping[str, Op]:
        return self._by_name

    def __len__(self) -> int:
        return len(self._ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self._ops)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Op:
        return self._by_name[name]

    def get(self, name: str) -> Op | None:
        return self._by_name.get(name)

    def producer(self, op: Op | str, input_index: int) -> tuple[Op, int] | None:
        """(producer op, its output index) for data input `input_index` of `op` (counting data inputs only);
        None when the input does not exist or its producer is not in the graph."""
        op = self._by_name[op] if isinstance(op, str) else op
        data_inputs = op.data_inputs
        if not 0 <= input_index < len(data_inputs):
            return None
        ref = data_inputs[input_index]
        local = self._by_graph.get(op.graph)  # the op's own graph first, then any
        name = ref.producer
        producer = (local.get(name) if local is not None else None) or self._by_name.get(name)
        return None if producer is None else (producer, ref.index)

    def producers(self, op: Op | str) -> list[tuple[Op, int] | None]:
        """`producer(op, i)` for every data input i."""
        op = self._by_name[op] if isinstance(op, str) else op
        return [self.producer(op, i) for i in range(len(op.data_inputs))]

    def consumers(self, op: Op | str) -> list[tuple[Op, int]]:
        """(consumer op, data input index) pairs reading any output of `op`."""
        name = op if isinstance(op, str) else op.name
        return list(self._consumers.get(name, []))

    def original_names(self, op: Op | str) -> tuple[str, ...]:
        """The original ops `op` stands for: its `_datadump_original_op_names`; the op's own name when the
        attribute is absent; () for an op the compiler inserted."""
        op = self._by_name[op] if isinstance(op, str) else op
        return (op.name,) if op.original_op_names is None else op.original_op_names


def parse_graph(document: Any, path: str | None = None, *, consume: bool = False) -> Graph:
    """A Graph from an already-decoded JSON document, read as the same document in a file would be (written as
    JSON and read by the core). Raises ConfigError naming `path` and the problem.

    `consume`: each op's JSON object is dropped from the document once read (a document nothing else holds)."""
    label = path if path is not None else "<graph JSON>"
    try:
        data = json.dumps(document).encode("ascii")
    except (TypeError, ValueError, RecursionError) as error:
        raise ConfigError(f"{label}: not a graph file: {error}") from None
    graph = _graph_of(data, label, path)
    if consume:
        graphs = document.get("graph") if isinstance(document, dict) else None
        for raw_graph in [graphs] if isinstance(graphs, dict) else graphs if isinstance(graphs, list) else []:
            ops = raw_graph.get("op") if isinstance(raw_graph, dict) else None
            if isinstance(ops, list):
                ops[:] = [None] * len(ops)
    return graph


def _graph_of(data: bytes, label: str, path: str | None, attrs: bool = True) -> Graph:
    """The Graph of a graph JSON text's bytes, read by the core (native/bindings/bind_graph.cpp): the records, or
    the ConfigError naming `label`. JSON that is not JSON as jsonfile reads it is worded by jsonfile. `attrs`: as
    `load_graph`'s."""
    from dumpcmp.support import jsonfile
    from dumpcmp.support.native import core

    read = core.graph.read_graph_json(data, Op, TensorDesc, InputRef, None if attrs else NO_ATTRS)
    if read is None:
        jsonfile.load_bytes(data, label)  # raises the ConfigError saying what is wrong with the text
        raise ConfigError(f"{label}: not a JSON file dumpcmp reads")
    del data
    if type(read) is str:
        raise ConfigError(f"{label}: {read}")
    ops, names, model, in_order, by_name = read
    in_order = in_order and len(set(names)) == len(names)  # two graphs of one name share a rank: Graph's sort
    if not in_order:  # the reader placed each op where it is in the file: Graph sorts and places them
        for op in ops:
            object.__setattr__(op, "position", -1)
    return Graph(ops, names, path=path, name=model, in_order=in_order, by_name=by_name)


def _read_graph(path: str | os.PathLike[str], attrs: bool = True) -> Graph:
    """The Graph of a graph JSON file, read by the core in one pass over its bytes (no tree of JSON objects)."""
    from dumpcmp.support import jsonfile

    name = os.fspath(path)
    return _graph_of(jsonfile.read_bytes(name, "graph file"), name, name, attrs)


def load_graph(path: str | os.PathLike[str], quant_fusion: str | os.PathLike[str] | None = None, *,
               attrs: bool = True) -> Graph:
    """Read a compiler graph JSON (`-f`), optionally merged with a quantization fusion rule file (`-q`).

    With only a quantization fusion rule file at hand (quantized Caffe dumps against non-quantized ones), load it
    alone: `load_graph(q_path)`. Raises ConfigError naming the file and what is wrong with it.

    `attrs=False`: every `Op.attrs` and `TensorDesc.attrs` is `NO_ATTRS` (empty) instead of the attributes the file
    wrote; every other field, and every error, is the same (the attributes are still read and checked). For a
    reader that needs only the fields (a comparison): the attribute dicts are 40% of a graph's memory.
    """
    from dumpcmp.support.gcpause import paused

    with paused():  # the JSON's objects and the ops: see dumpcmp.support.gcpause
        graph = _read_graph(path, attrs)
        if quant_fusion is None:
            return graph
        return merge(graph, _read_graph(quant_fusion, attrs))


def merge(fusion: Graph, quant: Graph) -> Graph:
    """Compose a compiled graph (`-f`, built from the quantized model) with the quantization fusion rules (`-q`).

    The `-f` graph's original names are ops of the quantized model; the `-q` file says which non-quantized ops
    each of those stands for (and inserts quant layers with no counterpart). So every original name that is an op
    of `quant` is replaced by that op's own originals (dropped when the quant op was inserted), and every explicit
    `_datadump_origin_name` that is an op of `quant` is followed to that op's origin for the same output. Names
    the `-q` file does not know are kept: they were not changed by quantization. The names as the `-f` file wrote
    them stay in `Op.unmerged_original_op_names` (they tell quant layers apart).
    """

    def resolve_names(names: tuple[str, ...]) -> tuple[str, ...]:
        out: list[str] = []
        for name in names:
            q_op = quant.get(name)
            for resolved in (name,) if q_op is None else quant.original_names(q_op):
                if resolved not in out:
                    out.append(resolved)
        return tuple(out)

    def resolve_desc(desc: TensorDesc) -> TensorDesc:
        if desc.origin_name is None:
            return desc
        q_op = quant.get(desc.origin_name)
        if q_op is None:
            return desc
        index = desc.origin_output_index or 0
        q_desc = q_op.output(index)
        if q_desc is not None and q_desc.origin_name is not None:
            name, q_index = q_desc.origin_name, q_desc.origin_output_index
            index = index if q_index is None else q_index
        else:
            originals = quant.original_names(q_op)
            if not originals:
                # The quant layer has no non-quantized counterpart: this tensor has none either.
                return replace(desc, origin_name=None, origin_output_index=None)
            name = originals[-1]
        return replace(desc, origin_name=name, origin_output_index=index)

    merged: list[Op] = []
    for op in fusion.ops:
        own = fusion.original_names(op)
        resolved = resolve_names(own)
        if op.original_op_names is None and resolved == (op.name,):
            originals: tuple[str, ...] | None = None
        else:
            originals = resolved
        merged.append(
            replace(
                op,
                original_op_names=originals,
                output_desc=tuple(resolve_desc(d) for d in op.output_desc),
                unmerged_original_op_names=op.original_op_names,
            )
        )
    return Graph(merged, fusion.graph_names, path=fusion.path, name=fusion.name)


def merge_close_fusion(fusion: Graph, close: Graph) -> tuple[Graph, list[str]]:
    """Compose a fused model's graph (`-f`) with the graph of the same model compiled without fusion (`-cf`), to
    compare the fused model's device dump with the unfused one's (the original's `-cf`); returns the graph and
    warnings.

    Every original name a fused op stands for becomes the unfused op standing for it (in the unfused graph's
    order, a later op claiming a name), names the unfused graph does not know dropped with a warning (an op left
    with none shows `*`). Every explicit origin (`_datadump_origin_name`, index) becomes that unfused op and the
    place among its outputs of the one holding the same original tensor. The unfused op's outputs are then the
    ground truth: `{unfused op}.{output}`.
    """
    owner: dict[str, Op] = {}
    for op in close.ops:
        for name in close.original_names(op):
            owner[name] = op
    warnings: list[str] = []

    def place(close_op: Op, name: str, index: int) -> int | None:
        for i, d in enumerate(close_op.output_desc):
            origin = d.origin_name if d.origin_name is not None else \
                (close_op.name if close_op.original_op_names is None else None)
            if origin == name and (i if d.origin_output_index is None else d.origin_output_index) == index:
                return i
        return None

    merged: list[Op] = []
    for op in fusion.ops:
        originals: list[str] = []
        for name in fusion.original_names(op):
            target = owner.get(name)
            if target is None:
                warnings.append(f"{op.name}: the unfused graph has no op standing for the original {name!r}")
            elif target.name not in originals:
                originals.append(target.name)
        descs = []
        for n, d in enumerate(op.output_desc):
            target = owner.get(d.origin_name) if d.origin_name is not None else None
            if target is None:
                descs.append(d)
                continue
            index = place(target, d.origin_name, n if d.origin_output_index is None else d.origin_output_index)
            if index is None:
                warnings.append(f"{op.name}: output {n}: no output of {target.name} holds {d.origin_name}:"
                                f"{d.origin_output_index}")
            descs.append(replace(d, origin_name=target.name,
                                 origin_output_index=d.origin_output_index if index is None else index))
        merged.append(replace(op, original_op_names=tuple(originals) if op.original_op_names != () else (),
                              output_desc=tuple(descs), unmerged_original_op_names=op.original_op_names))
    return Graph(merged, fusion.graph_names, path=fusion.path, name=fusion.name), warnings

