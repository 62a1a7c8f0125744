"""Which ground-truth tensor each device tensor is compared with: the operator pairing rules.

Pure functions over plain records, so the rules can be tested without any file: the caller lists the device ops it
found (`DeviceOp`, with an opaque `ref` it uses to find the dump again) and the ground-truth files by key
`{op_name}.{output_index}` (newest file already chosen), optionally with the compiler's `Graph` (`-f`, merged with
`-q`). The result is one `TensorPair` row per device tensor, in execution order, plus a row for every ground-truth
tensor no device tensor was paired with, so a report can print `*` on the side that has nothing.

The rules (docs/formats.md#pairing-rules), and the choices made where the format's documentation is silent:

* Output i of a compiled op holds the original tensor `{_datadump_origin_name}.{_datadump_origin_output_index}` of
  its `output_desc[i]`. Without those attributes it falls back to the op's original names and output index i:
  - one original (or none written: the op is its own original): that original;
  - several originals (ops fused into one, OneToMulti): the LAST op of the fused chain, because a fused op's dump
    is the output of the chain's final layer (fused A, B, C, D dump D's output). The chain's order is not reliable
    in the attribute (Caffe BN/Scale names may come first), so when the compiled name is a concatenation ending
    with one original's name (`conv1conv1_relu` from conv1 + conv1_relu) that original is taken; otherwise the
    last name listed (both: docs/formats.md#fused-and-inserted-operators);
  - several compiled ops sharing originals (MultiToOne/MultiToMulti) or one L1-fusion subgraph: only the group's
    last op in execution order holds the original's output; the others get no ground truth (a note says why).
* Input i (counting data inputs only, the way the device dump lists them: control edges and absent optional `""`
  inputs are not dumped) is the output `producer:index` of `input[slot]`, followed back past compiler-inserted
  Cast/TransData ops (present-but-empty `_datadump_original_op_names`, or named `trans_*` without the attribute)
  when they carry no explicit origin, then mapped like an output. The same walk applies to the output of such an
  inserted op that has no explicit origin: a Cast/TransData holds its input's values.
* Without a graph, a device op pairs by name: output i with `{op_name}.{i}`; inputs have no ground truth.
* Names are matched exactly first, then with `.`, `/`, `\\` and spaces replaced by `_`, as the runtime writes them.
* Quantized models: outputs of quantize ops (type AscendQuant or a name with `_quant_layer`) and inputs of
  dequantize ops (AscendDequant) are raw integers and get a `skip_reason`. The rule goes by op, never by dtype: any
  other int8/int4 tensor (an int8 Cast, an int8 weight) is compared as values, as the original does.
* A device op listed twice (several dumps of one op) keeps the one with the greatest order key (the newest). Order
  keys that are tuples (a dump's timestamp, task id, ...) compare part by part as numbers, never as their text.
"""

from __future__ import annotations

import re
from operator import attrgetter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping, Sequence

from dumpcmp.graph.graph_json import Graph, Op, TensorDesc
from dumpcmp.dumps.naming import sanitize
from dumpcmp.support.records import frozen_record

__all__ = [
    "Relation",
    "DeviceOp",
    "TensorPair",
    "shown_op_name",
    "shown_tensor_index",
    "graph_op_of",
    "pair_with_ground_truth",
    "pair_device_to_device",
    "quant_skip_reason",
    "quant_skip_reasons",
    "quant_pair_members",
    "sanitize_name",
    "fused_output_original",
    "relation_of",
    "PASS_THROUGH_TYPES",
    "QUANTIZE_TYPES",
    "DEQUANTIZE_TYPES",
    "QUANTIZING_TYPES",
    "QUANT_DEQUANT_TYPES",
]

PASS_THROUGH_TYPES = frozenset({"Cast", "TransData"})
QUANTIZE_TYPES = frozenset({"AscendQuant"})
DEQUANTIZE_TYPES = frozenset({"AscendDequant"})
#: a quantize op under the device's name or ONNX's (a run may show either)
QUANTIZING_TYPES = QUANTIZE_TYPES | {"QuantizeLinear"}
#: every op that quantizes, dequantizes or requantizes, under the device's names or ONNX's
QUANT_DEQUANT_TYPES = QUANTIZING_TYPES | DEQUANTIZE_TYPES | {"AscendRequant", "AscendAntiQuant", "DequantizeLinear"}
# Ops that are never executed, so never the op holding a fused group's output.
_NOT_EXECUTED_TYPES = frozenset({"Const", "Constant"})
_position = attrgetter("position")


class Relation(str, Enum):
    """How the compiled op behind a row relates to the original model's ops."""

    ONE_TO_ONE = "OneToOne"
    MULTI_TO_ONE = "MultiToOne"
    ONE_TO_MULTI = "OneToMulti"
    MULTI_TO_MULTI = "MultiToMulti"
    L1_FUSION = "L1Fusion"
    INSERTED = "Inserted"
    NO_GRAPH = "NoGraph"
    """Paired by name: no graph was given, or the device op is not in it."""
    SAME_MODEL = "SameModel"
    """Two dumps of the same device model, paired by file-name identity."""
    GROUND_TRUTH_ONLY = "GroundTruthOnly"
    """A ground-truth tensor no device tensor was paired with."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class DeviceOp:
    """One operator found on the device side (one dump file).

    `order` sorts ops in execution order when there is no graph (the timestamp, or task id); `ref` is whatever the
    caller needs to find the dump again (a path, a parsed file name); it is handed back untouched.
    """

    op_name: str
    op_type: str
    n_inputs: int
    n_outputs: int
    order: Any = 0
    ref: Any = None


# the members as plain names: an Enum member looked up on its class costs a descriptor call per row
_ONE_TO_ONE, _MULTI_TO_ONE, _ONE_TO_MULTI, _MULTI_TO_MULTI, _L1_FUSION, _INSERTED, _NO_GRAPH = (
    Relation.ONE_TO_ONE, Relation.MULTI_TO_ONE, Relation.ONE_TO_MULTI, Relation.MULTI_TO_MULTI, Relation.L1_FUSION,
    Relation.INSERTED, Relation.NO_GRAPH)
_SAME_MODEL = Relation.SAME_MODEL


def shown_op_name(npu_op: str | None, graph_op: str | None) -> str | None:
    """The one spelling of a device op name in the texts dumpcmp adds (summaries, locate, report, histogram
    titles, advice, bisect): the graph JSON's own name when the graph is known (`Conv.2BatchNormalization.2`),
    else the dump file's (sanitised: `Conv_2BatchNormalization_2`). The original tool's own CSV cells keep what
    the original prints."""
    return graph_op if graph_op is not None else npu_op


def shown_tensor_index(tensor_index: str | None, npu_op: str | None, graph_op: str | None) -> str | None:
    """A TensorIndex (`{npu_op}:output:0`) with its op spelt by `shown_op_name` (`Conv.2:output:0`)."""
    if tensor_index is None or npu_op is None or not tensor_index.startswith(npu_op + ":"):
        return tensor_index
    return f"{shown_op_name(npu_op, graph_op)}{tensor_index[len(npu_op):]}"


@dataclass(frozen=True)
class TensorPair:
    """One row of the comparison: a device tensor and the ground-truth tensor it is compared with.

    A side that has nothing is None: `npu_op` None for a ground-truth tensor no device tensor maps to, and
    `ground_truth_ref` None when no ground-truth file was found (then `ground_truth_key` still says which key was
    looked for, if any, and `note` why there is none).
    """

    npu_op: str | None
    op_type: str | None
    kind: str
    """'input' or 'output' (ground-truth-only rows: 'output')."""
    index: int | None
    tensor_index: str | None
    """`{npu_op}:output:{i}` / `{npu_op}:input:{i}`; None on a ground-truth-only row."""
    ground_truth_op: str | None
    """The original op whose file is the ground truth (None: none is known)."""
    ground_truth_ops: tuple[str, ...]
    """What the GroundTruth column shows: all the originals the producing compiled op stands for."""
    ground_truth_key: str | None
    """The key `{op_name}.{output_index}` looked up (device vs device: `{op_type}.{op_name}` of the right op)."""
    npu_ref: Any = None
    ground_truth_ref: Any = None
    relation: Relation = Relation.NO_GRAPH
    origin_shape: tuple[int, ...] | None = None
    """The original (ground-truth) shape the graph gives, for layout conversion and cropping; None if unknown."""
    origin_format: str | None = None
    origin_data_type: str | None = None
    graph_op: str | None = None
    """The compiled op's name in the graph, when the device op was found there."""
    skip_reason: str | None = None
    """Set when the pair must not be compared (raw integer tensors of quantized ops)."""
    note: str | None = field(default=None, compare=False)

    @property
    def npu_column(self) -> str:
        return self.npu_op if self.npu_op is not None else "*"

    @property
    def shown_op(self) -> str | None:
        """The device op's name as our own texts print it (see `shown_op_name`)."""
        return shown_op_name(self.npu_op, self.graph_op)

    @property
    def shown_tensor(self) -> str | None:
        """`tensor_index` with the op spelt as `shown_op` (`Conv.2:output:0`, not the file's `Conv_2:output:0`)."""
        return shown_tensor_index(self.tensor_index, self.npu_op, self.graph_op)

    @property
    def ground_truth_column(self) -> str:
        if self.ground_truth_ref is None:
            return "*"
        return ",".join(self.ground_truth_ops) if self.ground_truth_ops else (self.ground_truth_op or "*")

    @property
    def comparable(self) -> bool:
        """Both sides exist and nothing forbids comparing them."""
        return self.npu_ref is not None and self.ground_truth_ref is not None and self.skip_reason is None


sanitize_name = sanitize  # the runtime's rule, one definition in dumpcmp.dumps.naming


def fused_output_original(compiled_name: str, originals: Sequence[str]) -> str | None:
    """Which original op's output a compiled op fused from `originals` holds: the last of the fused chain.

    When the compiled name is a concatenation ending with an original's name, that one (the longest such);
    otherwise the last name listed. None for no originals.
    """
    if not originals:
        return None
    name = sanitize_name(compiled_name)
    best: str | None = None
    for original in originals:
        o = sanitize_name(original)
        # Equal names say nothing about the chain's end (the compiler kept the first op's name).
        if o and len(name) > len(o) and name.endswith(o) and (best is None or len(o) >= len(sanitize_name(best))):
            best = original
    return best if best is not None else originals[-1]


def quant_skip_reason(
    op_name: str,
    op_type: str,
    kind: str,
    original_names: Iterable[str] = (),
) -> str | None:
    """Why this tensor must not be compared as it is (raw integers of a quantized model), or None.

    `original_names` are the op's original names before any `-q` merge, which may name a `_quant_layer`. The data
    type is not asked: the original skips by op, and compares an int8 tensor of any other op as values
    (docs/formats.md#quantization-rules; tests/oracle's int8 Cast and int8 weight).
    """
    skip_in, skip_out = quant_skip_reasons(op_name, op_type, original_names)
    return skip_out if kind == "output" else skip_in if kind == "input" else None


def quant_skip_reasons(op_name: str, op_type: str, original_names: Iterable[str] = ()) -> tuple[str | None,
                                                                                              str | None]:
    """(`quant_skip_reason` of the op's inputs, of its outputs) in one call."""
    # (joined by a character the marker does not hold, so the marker is found in one name)
    quantize = op_type in QUANTIZE_TYPES or "_quant_layer" in op_name or "_quant_layer" in "\x00".join(original_names)
    return (_DEQUANTIZE_INPUT if op_type in DEQUANTIZE_TYPES else None, _QUANTIZE_OUTPUT if quantize else None)


_QUANTIZE_OUTPUT = "output of a quantize op holds raw integers: compared only after dequantization"
_DEQUANTIZE_INPUT = "input of a dequantize op holds raw integers: compared only after dequantization"


_QUANT_NAME = re.compile(r"_quant_layer|/AscendQuant|/AscendWeightQuant|\.quant|\.weight_quant")
_DEQUANT_NAME = re.compile(r"_dequant_layer|_anti_quant_layer|/AscendDequant|/AntiQuant|\.dequant|\.anti_quant")
#: a text in every alternative of both patterns: a name without it matches neither (tests hold it)
QUANT_NAME_MARK = "uant"
_NORMAL, _MIDDLE, _QUANT, _DEQUANT = 0, 1, 2, 3


def quant_pair_members(graph: Graph) -> set[str]:
    """The ops the original tool leaves out entirely: those inside a quant/dequant pair
    (docs/formats.md#quantization-rules).

    A quant op's name (or its joined original names) matches the quant pattern and its output is DT_INT8; a
    dequant op's matches the dequant pattern with a DT_FLOAT16 output (a name matching both is decided by the
    dtype). Walking in graph order, an op reading an output of a quant op, or of an op already inside a pair, is
    inside a pair; it is left out unless all its outputs are dequant outputs.

    A pair that never closes is not a pair: an op is left out only when a dequant op closing the pair lies
    downstream of it inside the pair. (The original drops everything downstream of a quant-named op whose pair
    never closes, e.g. an int8 weight `conv.weight_quantized` read by a Conv: most of a network, silently.)
    """
    # A Graph never changes after construction: found once, kept on it (a copy to each caller).
    found = getattr(graph, "_quant_pair_members", None)
    if found is None:
        found = frozenset(_quant_pair_members(graph))
        graph._quant_pair_members = found  # type: ignore[attr-defined]
    return set(found)


def _quant_pair_members(graph: Graph) -> set[str]:
    out_types: dict[str, list[int]] = {}
    members: list[Op] = []
    closers: set[str] = set()
    mark = QUANT_NAME_MARK
    opened = False  # whether a quant op's output was seen: before, no op is inside a pair and no output type counts
    for op in graph.ops:
        name = op.name
        joined = "".join(op.original_op_names) if op.original_op_names is not None else name
        if mark in name or mark in joined:
            is_quant = bool(_QUANT_NAME.search(name) or _QUANT_NAME.search(joined))
            is_dequant = bool(_DEQUANT_NAME.search(name) or _DEQUANT_NAME.search(joined))
        else:
            is_quant = is_dequant = False
        if not (opened or is_quant):
            continue
        in_pair = False
        for ref in op.data_inputs:
            types = out_types.get(ref.producer)
            if types is not None and ref.index < len(types) and types[ref.index] in (_QUANT, _MIDDLE):
                in_pair = True
                break
        types = []
        for desc in op.output_desc:
            dtype = (desc.dtype or "").upper()
            kind = _MIDDLE if in_pair else _NORMAL
            if is_quant and dtype == "DT_INT8":
                kind = _QUANT
            elif is_dequant and dtype == "DT_FLOAT16":
                kind = _DEQUANT
            types.append(kind)
            opened = opened or kind == _QUANT
        out_types[op.name] = types
        if in_pair and not (types and all(t == _DEQUANT for t in types)):
            members.append(op)
        elif in_pair:
            closers.add(op.name)
    if not members:
        return set()
    # Closed members, walking back from the dequant ops that close a pair: a member feeding a closer, or a closed
    # member, through an output that is inside the pair.
    feeds: dict[str, set[str]] = {}
    names = {op.name for op in members}
    for op in members + [o for o in graph.ops if o.name in closers]:
        for ref in op.data_inputs:
            types = out_types.get(ref.producer)
            if ref.producer in names and types is not None and ref.index < len(types) and types[ref.index] == _MIDDLE:
                feeds.setdefault(op.name, set()).add(ref.producer)
    closed: set[str] = set()
    todo = [p for c in closers for p in feeds.get(c, ())]
    while todo:
        name = todo.pop()
        if name not in closed:
            closed.add(name)
            todo.extend(feeds.get(name, ()))
    return closed


def graph_op_of(graph: Graph, device_name: str) -> Op | None:
    """The graph's op behind a device op name as the graph spells it or as a dump file does (sanitised:
    `Conv_2BatchNormalization_2` finds `Conv.2BatchNormalization.2`); None when the graph has none."""
    return _index_of(graph).find(device_name)


def relation_of(graph: Graph, op: Op) -> Relation:
    """The relation of a compiled op to the original ops (see the module docstring)."""
    return _index_of(graph).relation(op)


class _GraphIndex:
    """What the rules need from a graph beyond lookups: fused groups and which op ends each group.

    Built once per graph in one pass over the ops; what most ops need nothing for is not stored (an op alone in its
    group is its own group's last op, `last_of`), and where ground truth shows up in execution order is computed
    only when a ground-truth file has no device tensor (`original_position`)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        ops = graph.ops
        by_name = graph.ops_by_name
        # `graph.get` bound once: `find` runs for each device op; the sanitised names only once a name is not found
        # as it is (most device names are the graph's)
        self._by_name_get = by_name.get
        self._by_sanitized: dict[str, Op] | None = None
        # Union-find over ops that share an original name, or an L1 fusion subgraph number; only the ops that were
        # ever united are in `parent`.
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            root = x
            while root in parent:
                root = parent[root]
            while x != root:
                parent[x], x = root, parent[x]
            return root

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        # The first op standing for each original name, and the names more than one op stands for.
        self.owner: dict[str, Op] = {}
        self.shared_names: set[str] = set()
        owner, shared = self.owner, self.shared_names
        first_l1: dict[tuple[str, str], str] = {}  # (graph, L1 fusion number): a name may hold any character
        self.duplicates = frozenset(graph.duplicate_names)
        self._pass_through_ends: dict[tuple[str, int], tuple[Op, int, bool]] = {}
        for op in ops:
            name = op.name
            if by_name.get(name) is not op:
                continue  # a later op of a name already seen
            originals = op.original_op_names
            for n in (name,) if originals is None else originals:
                first = owner.setdefault(n, op)
                if first is not op:
                    shared.add(n)
                    union(first.name, name)
            if op.l1_fusion_no is not None:
                first_name = first_l1.setdefault((op.graph, op.l1_fusion_no), name)
                if first_name != name:
                    union(first_name, name)
        self.group_last: dict[str, Op] = {}
        groups: dict[str, list[Op]] = {}
        for n in set(parent) | set(parent.values()):
            groups.setdefault(find(n), []).append(by_name[n])
        for group in groups.values():
            executed = [op for op in group if op.type not in _NOT_EXECUTED_TYPES] or group
            last = max(executed, key=_position)
            for op in group:
                self.group_last[op.name] = last
        self._original_position: dict[str, int] | None = None

    @property
    def original_position(self) -> dict[str, int]:
        """Where a ground-truth op shows up in execution order: after the last compiled op standing for it (by
        sanitised name)."""
        if self._original_position is None:
            position: dict[str, int] = {}
            original_names = self.graph.original_names
            for op in self.graph.ops:
                names = list(original_names(op)) + [d.origin_name for d in op.output_desc if d.origin_name]
                for n in map(sanitize_name, names):
                    position[n] = max(position.get(n, -1), op.position)
            self._original_position = position
        return self._original_position

    def last_of(self, op: Op) -> Op:
        """The op of `op`'s fused group that holds the group's original output: the last executed one."""
        last = self.group_last.get(op.name)
        return last if last is not None else self.graph.get(op.name) or op

    @property
    def by_sanitized(self) -> dict[str, Op]:
        """Sanitised name -> the first op (in execution order) of that sanitised name."""
        if self._by_sanitized is None:
            # The first op of a sanitised name wins: reversed, the first is written last.
            self._by_sanitized = {sanitize_name(op.name): op for op in reversed(self.graph.ops)}
        return self._by_sanitized

    def find(self, device_name: str) -> Op | None:
        found = self._by_name_get(device_name)
        if found is None:
            # A dump file's name is sanitised already: found as it is (a name holding `.`, `/`, `\` or a space is
            # no sanitised name, so it finds nothing as it is and is sanitised first)
            by_sanitized = self.by_sanitized
            found = by_sanitized.get(device_name)
            if found is None:
                found = by_sanitized.get(sanitize_name(device_name))
        return found

    def relation(self, op: Op) -> Relation:
        if op.l1_fusion_no is not None:
            return _L1_FUSION
        originals = op.original_op_names  # `graph.original_names`, inline: it runs for each device op
        if originals is None:
            originals = (op.name,)
        if not originals:  # op.is_inserted
            return _INSERTED
        owner, shared_names = self.owner, self.shared_names
        if len(originals) == 1:
            n = originals[0]
            if n in shared_names or owner.get(n, op) is not op or op.is_multiop:
                return _MULTI_TO_ONE
            return _ONE_TO_ONE
        shared = any(n in shared_names or owner.get(n, op) is not op for n in originals)
        return _MULTI_TO_MULTI if shared else _ONE_TO_MULTI

    def is_pass_through(self, op: Op) -> bool:
        return op.type in PASS_THROUGH_TYPES and bool(op.data_inputs)

    def pass_through_end(self, op: Op, out: int) -> tuple[Op, int, bool]:
        """(op, output, no_producer) where the walk back from output `out` of `op` past Cast/TransData ops stops:
        the first op that is not one of them (or one seen already), else the one whose input has no producer.

        Walks that pass only single-input ops of unique names are remembered for every step on them (where such
        a walk goes depends on the op alone, so no later walk can meet a step twice): a chain of n inserted Casts
        costs n steps in all, not n * n / 2."""
        graph = self.graph
        ends = self._pass_through_ends
        seen: set[str] = set()
        steps: list[tuple[str, int]] = []
        cur, k = op, out
        simple = True
        while True:
            simple = simple and cur.name not in self.duplicates
            if simple and (cur.name, k) in ends:
                end = ends[(cur.name, k)]
                break
            if self.is_pass_through(cur) and cur.name not in seen:
                seen.add(cur.name)
                steps.append((cur.name, k))
                simple = simple and len(cur.data_inputs) == 1
                upstream = graph.producer(cur, k if k < len(cur.data_inputs) else 0)
                if upstream is None:
                    end = (cur, k, True)
                    break
                cur, k = upstream
                continue
            simple = simple and cur.name not in seen  # else a loop: where the walk stops depends on where it began
            end = (cur, k, False)
            break
        if simple:
            for step in steps:
                ends[step] = end
        return end


def _index_of(graph: Graph) -> _GraphIndex:
    # A Graph never changes after construction, so its index is built once and kept on it.
    index = getattr(graph, "_pairing_index", None)
    if index is None:
        index = _GraphIndex(graph)
        graph._pairing_index = index  # type: ignore[attr-defined]
    return index


def _resolve_output(index: _GraphIndex, op: Op, out: int) -> tuple[str | None, int | None, TensorDesc | None, Op,
                                                                  str | None, bool]:
    """The original tensor that output `out` of `op` holds (see the module docstring): (original name, output index,
    desc, the op whose output it is, why there is none, whether the desc named it explicitly)."""
    descs = op.output_desc
    start_desc = descs[out] if 0 <= out < len(descs) else None
    if index.is_pass_through(op):
        # A Cast or TransData holds its input's values, whatever origin it names (the original tool walks back past
        # every op of these types, input k standing for output k).
        cur, k, no_producer = index.pass_through_end(op, out)
        descs = cur.output_desc
        desc = descs[k] if 0 <= k < len(descs) else None
    else:  # where the walk stops at once
        cur, k, no_producer, desc = op, out, False, start_desc
    if no_producer:
        return (None, None, desc or start_desc, cur, f"{cur.name} was inserted by the compiler and its input has no "
                "producer in the graph", False)
    if desc is not None and desc.origin_name is not None:
        return (desc.origin_name, k if desc.origin_output_index is None else desc.origin_output_index, desc, cur,
                None, True)
    originals = index.graph.original_names(cur)
    if not originals:
        return (None, None, desc or start_desc, cur, f"{cur.name} was inserted by the compiler and has no original "
                "counterpart", False)
    last = index.last_of(cur)
    if last is not cur:
        return (None, None, desc or start_desc, cur,
                f"{cur.name} is not the last op of its fused group; {last.name} holds the original output", False)
    # one original: that one (what fused_output_original gives it, without the name comparisons)
    original = originals[0] if len(originals) == 1 else fused_output_original(cur.name, originals)
    return (original, k, desc or start_desc, cur, None, False)


#: TensorPair's fields in order: a row is made from its values without the frozen dataclass's __init__
#: (`support.records.frozen_record`'s way, by pairs so that rows share the class's key table)
_PAIR_FIELDS = tuple(TensorPair.__dataclass_fields__)
_new = object.__new__


#: outputs an `_InGraph` keeps resolved: a consumer mostly runs soon after its producer, and a table of every
#: output (10^5 ops) costs more to grow and hold (tuples of 55 MB at 300,000 ops) than resolving a far one again
_RECENT_OUTPUTS = 4096


class _InGraph:
    """One pairing through a graph: each op output resolved and looked up once (once while among the last
    `_RECENT_OUTPUTS` resolved), however many device tensors (its own output, its consumers' inputs) hold it; an
    op's two quantization reasons found in one call."""

    def __init__(self, index: _GraphIndex, gt: _GroundTruth, remember: bool = True) -> None:
        self.index = index
        self.graph = index.graph
        self.gt = gt
        self.outputs: dict[tuple[int, int], tuple[Any, ...]] = {}
        self.remember = remember

    def output(self, op: Op, out: int) -> tuple[Any, ...]:
        """(original name, desc, producer, note, ground-truth key, ground-truth ref, the originals shown) of output
        `out` of `op`."""
        got = self.outputs.get((id(op), out))
        if got is None:
            descs = op.output_desc
            desc = descs[out] if 0 <= out < len(descs) else None
            if desc is not None and desc.origin_name is not None and not (op.type in PASS_THROUGH_TYPES
                                                                          and op.data_inputs):
                # where _resolve_output stops at once, with the origin the desc names (most outputs)
                name, producer, note, explicit = desc.origin_name, op, None, True
                idx = out if desc.origin_output_index is None else desc.origin_output_index
            else:
                name, idx, desc, producer, note, explicit = _resolve_output(self.index, op, out)
            key = ref = None
            if name is not None and idx is not None:
                key, ref = self.gt.lookup(name, idx)
                if ref is None:
                    note = f"no ground-truth file for {key}"
            if name is None:
                shown: tuple[str, ...] = ()
            else:
                shown = (name,) if explicit else self.graph.original_names(producer)
            got = (name, desc, producer, note, key, ref, shown)
            if self.remember:
                if len(self.outputs) >= _RECENT_OUTPUTS:
                    self.outputs.clear()
                self.outputs[(id(op), out)] = got
        return got

    def op_pairs(self, dev: DeviceOp, op: Op, rows: list[TensorPair]) -> None:
        """The rows of `dev`'s tensors, found in the graph as `op`, added to `rows`: its inputs, then its outputs."""
        relation = self.index.relation(op)
        skip_in, skip_out = quant_skip_reasons(op.name, op.type, op.unmerged_original_op_names or ())
        npu_op, op_type, npu_ref, graph_op = dev.op_name, dev.op_type, dev.ref, op.name
        fields, new, pair, output = _PAIR_FIELDS, _new, TensorPair, self.output
        tensors: list[tuple[Any, ...]] = []  # (kind, index, original, desc, note, key, ref, originals shown, skip)
        if dev.n_inputs > 0:
            data_inputs = op.data_inputs
            input_desc = op.input_desc
            producer_of = self.graph.producer
            for i in range(dev.n_inputs):
                slot_desc = None
                if i < len(data_inputs):
                    slot = data_inputs[i].slot
                    slot_desc = input_desc[slot] if slot < len(input_desc) else None
                upstream = producer_of(op, i)
                skip = skip_in
                if upstream is None:
                    name = key = ref = None
                    shown: tuple[str, ...] = ()
                    desc = slot_desc
                    note = (f"{op.name} has only {len(data_inputs)} data inputs in the graph" if i >= len(data_inputs)
                            else f"producer {data_inputs[i].producer!r} of input {i} is not in the graph")
                else:
                    name, desc, producer, note, key, ref, shown = output(*upstream)
                    if desc is None or desc.origin_shape is None:
                        desc = slot_desc if slot_desc is not None else desc
                    if skip is None and producer is not op:
                        # the tensor a quantize op wrote is raw integers wherever it is read
                        skip = quant_skip_reasons(producer.name, producer.type,
                                                  producer.unmerged_original_op_names or ())[1]
                tensors.append(("input", i, name, desc, note, key, ref, shown, skip))
        for i in range(dev.n_outputs):
            name, desc, _, note, key, ref, shown = output(op, i)
            tensors.append(("output", i, name, desc, note, key, ref, shown, skip_out))
        for kind, i, name, desc, note, key, ref, shown, skip in tensors:
            row = new(pair)
            row.__dict__.update(zip(fields, (
                npu_op, op_type, kind, i, f"{npu_op}:{kind}:{i}", name, shown, key, npu_ref, ref, relation,
                desc.origin_shape if desc is not None else None,
                desc.origin_format if desc is not None else None,
                desc.origin_data_type if desc is not None else None,
                graph_op, skip, note)))
            rows.append(row)


_ABSENT = object()


class _GroundTruth:
    """Ground-truth keys looked up exactly, then with runtime-style sanitized names (those made on the first key
    not found as it is)."""

    def __init__(self, mapping: Mapping[str, Any]) -> None:
        self.mapping = mapping
        self._normalized: dict[str, str] | None = None
        self.used: set[str] = set()

    @property
    def normalized(self) -> dict[str, str]:
        """Sanitised key -> the key, for the sanitised keys only one key has."""
        if self._normalized is None:
            normalized: dict[str, str] = {}
            ambiguous: set[str] = set()
            for key in self.mapping:
                name, sep, idx = key.rpartition(".")  # _split_key, inline
                norm = f"{sanitize_name(name)}.{int(idx)}" if sep and idx.isdigit() else sanitize_name(key)
                if normalized.setdefault(norm, key) != key:
                    ambiguous.add(norm)  # two names, one sanitised name (`a/b`, `a_b`): only exact names pair
            for norm in ambiguous:
                del normalized[norm]
            self._normalized = normalized
        return self._normalized

    def lookup(self, name: str, idx: int) -> tuple[str, Any]:
        """(key, ref): the key actually present (else the canonical key) and its ref (None if absent)."""
        key = f"{name}.{idx}"
        mapping = self.mapping
        ref = mapping.get(key, _ABSENT)
        if ref is _ABSENT:
            normalized = self._normalized if self._normalized is not None else self.normalized
            key = normalized.get(f"{sanitize_name(name)}.{idx}", key)
            ref = mapping.get(key, _ABSENT)
            if ref is _ABSENT:
                return key, None
        self.used.add(key)
        return key, ref


def _split_key(key: str) -> tuple[str, int | None]:
    name, sep, idx = key.rpartition(".")
    if sep and idx.isdigit():
        return name, int(idx)
    return key, None


def _newest(ops: Iterable[DeviceOp], key: Any) -> list[DeviceOp]:
    """One op per identity (the greatest order key wins), in execution order."""
    chosen: dict[Any, DeviceOp] = {}
    for op in ops:
        k = key(op)
        old = chosen.get(k)
        if old is None or _order_key(op) > _order_key(old):
            chosen[k] = op
    values = list(chosen.values())
    orders = [op.order for op in values]
    types = set(map(type, orders))
    if types <= {int, float} or types == {tuple}:
        # numbers: (0, order) for every op, the orders compare as their keys do; tuples (a dump's timestamp, task,
        # ...): (1, parts), which compare natively as their keys do unless two parts of different types meet
        try:
            return [values[n] for n in sorted(range(len(values)), key=orders.__getitem__)]
        except TypeError:
            pass
    if not any(t is type(None) or t is tuple or issubclass(t, (int, float)) for t in types):
        keys: list[Any] = list(map(str, orders))  # (2, str(order)) for every op
    else:
        keys = [_order_key(op) for op in values]
    return [values[n] for n in sorted(range(len(values)), key=keys.__getitem__)]


def _order_key(op: DeviceOp) -> tuple[int, Any]:
    """Numbers by value, then tuples part by part (numbers by value before text, None last), then other values by
    their text, None last: a dump's (timestamp, task id, ...) compares as numbers, task 9 before task 10."""
    order = op.order
    if order is None:
        return (3, "")
    if isinstance(order, (int, float)):
        return (0, order)
    if isinstance(order, tuple):
        return (1, tuple(_part_key(p) for p in order))
    return (2, str(order))


def _part_key(part: Any) -> tuple[int, Any]:
    if part is None:
        return (2, "")
    if isinstance(part, (int, float)):
        return (0, part)
    return (1, part if isinstance(part, str) else str(part))


def _tensor_index(op_name: str, kind: str, i: int) -> str:
    return f"{op_name}:{kind}:{i}"


def pair_with_ground_truth(
    device_ops: Iterable[DeviceOp],
    ground_truth: Mapping[str, Any],
    graph: Graph | None = None,
) -> list[TensorPair]:
    """Pair every device tensor with its ground truth; rows in execution order, then unpaired ground truth.

    `ground_truth` maps `{op_name}.{output_index}` to the caller's ref for the chosen (newest) file. With a `graph`
    the compiler's mapping decides (module docstring); without one, names do.
    """
    gt = _GroundTruth(ground_truth)
    ops = _newest(device_ops, key=attrgetter("op_name"))
    index = _index_of(graph) if graph is not None else None
    # an output's resolution is kept for the inputs that read it only when some device op has inputs
    in_graph = _InGraph(index, gt, any(d.n_inputs > 0 for d in ops)) if index is not None else None
    # The rows of each device op and each unpaired ground-truth tensor in turn, `starts[n]` where those of the n-th
    # begin, `keys[n]` its sort key. A device op's rows come in order (inputs, then outputs, by index) and its key
    # (position, 0 or 1, rank) is unique and differs from a ground-truth key in its first two items, so sorting the
    # ops sorts their tensors as keys of (position, 0 or 1, rank, kind, index) would.
    rows: list[TensorPair] = []
    keys: list[tuple[Any, ...]] = []
    starts: list[int] = []
    last_position = -1
    find = index.find if index is not None else lambda name: None
    exact = index._by_name_get if index is not None else lambda name: None  # `find`'s first step, inline
    op_pairs = in_graph.op_pairs if in_graph is not None else None
    for rank, dev in enumerate(ops):
        g_op = exact(dev.op_name)
        if g_op is None:
            g_op = find(dev.op_name)
        starts.append(len(rows))
        if g_op is not None:
            last_position = g_op.position
            keys.append((last_position, 0, rank))
            op_pairs(dev, g_op, rows)
        else:
            # Not in the graph: keep it right after the device op that ran before it.
            keys.append((last_position, 1, rank))
            rows.extend(_pair_by_name(gt, dev, kind, i, graph is not None)
                        for kind, count in (("input", dev.n_inputs), ("output", dev.n_outputs))
                        for i in range(max(count, 0)))

    used = gt.used
    original_position = index.original_position if index is not None and len(used) < len(ground_truth) else {}
    for key in ground_truth:
        if key in used:
            continue
        name, idx = _split_key(key)
        pos = original_position.get(sanitize_name(name)) if index is not None else None
        sub = idx if idx is not None else -1
        # After the last compiled op standing for it; unknown to the graph (or no graph): at the end, by name.
        keys.append((pos, 2, 0, 0, sub) if pos is not None else (float("inf"), 3, name, 0, sub))
        starts.append(len(rows))
        rows.append(frozen_record(TensorPair, {
            "npu_op": None, "op_type": None, "kind": "output", "index": idx, "tensor_index": None,
            "ground_truth_op": name, "ground_truth_ops": (name,), "ground_truth_key": key,
            "npu_ref": None, "ground_truth_ref": ground_truth[key],
            "relation": Relation.GROUND_TRUTH_ONLY,
            "origin_shape": None, "origin_format": None, "origin_data_type": None, "graph_op": None,
            "skip_reason": None, "note": "no device tensor maps to this ground truth",
        }))
    starts.append(len(rows))
    # A name only stands in the keys of ground truth the graph does not know, (inf, 3, name, 0, sub), so a name is
    # only ever compared with a name: the keys sort as they are (and equal keys keep their order).
    order = sorted(range(len(keys)), key=keys.__getitem__)
    if order == list(range(len(keys))):
        return rows
    out: list[TensorPair] = []
    for n in order:
        start, end = starts[n], starts[n + 1]
        if end == start + 1:
            out.append(rows[start])
        else:
            out.extend(rows[start:end])
    return out


def _pair_by_name(gt: _GroundTruth, dev: DeviceOp, kind: str, i: int, had_graph: bool) -> TensorPair:
    skip = quant_skip_reason(dev.op_name, dev.op_type, kind)
    if kind == "input":
        why = "the op is not in the graph" if had_graph else "no graph (-f) given"
        op = key = ref = None
        shown: tuple[str, ...] = ()
        note: str | None = f"inputs are paired through their producer, unknown here: {why}"
    else:
        key, ref = gt.lookup(dev.op_name, i)
        op, shown = dev.op_name, (dev.op_name,)
        note = None if ref is not None else f"no ground-truth file for {key}"
    row = _new(TensorPair)  # the fields in their order, as `_InGraph.op_pairs` makes its rows
    row.__dict__.update(zip(_PAIR_FIELDS, (
        dev.op_name, dev.op_type, kind, i, _tensor_index(dev.op_name, kind, i), op, shown, key, dev.ref, ref,
        _NO_GRAPH, None, None, None, None, skip, note)))
    return row


def pair_device_to_device(left_ops: Iterable[DeviceOp], right_ops: Iterable[DeviceOp]) -> list[TensorPair]:
    """Pair two dumps of the same device model ("NPU vs NPU") by file-name identity: op type and op name.

    Task, stream and timestamp are ignored. Tensors pair by kind and index; an op whose input or output count
    differs between the sides pairs the common indices and leaves the rest one-sided, with a note. Right-side ops
    with no left counterpart get rows with `npu_op` None, placed after the op that preceded them on the right.
    """
    def identity(d: DeviceOp) -> tuple[str, str]:
        return (d.op_type, sanitize_name(d.op_name))

    left = _newest(left_ops, key=identity)
    right = _newest(right_ops, key=identity)
    right_by_id = {identity(d): d for d in right}
    left_rank = {identity(d): n for n, d in enumerate(left)}
    rows: list[tuple[tuple[Any, ...], TensorPair]] = []

    def op_rows(base: tuple[Any, ...], lop: DeviceOp | None, rop: DeviceOp | None) -> None:
        some = lop if lop is not None else rop
        assert some is not None
        for kind, lcount, rcount in (
            ("input", lop.n_inputs if lop else 0, rop.n_inputs if rop else 0),
            ("output", lop.n_outputs if lop else 0, rop.n_outputs if rop else 0),
        ):
            note = None
            if lop is not None and rop is not None and lcount != rcount:
                note = f"{kind} count differs: {lcount} on the left, {rcount} on the right"
            elif rop is None:
                note = "no counterpart in the right dump"
            elif lop is None:
                note = "no counterpart in the left dump"
            for i in range(max(lcount, rcount)):
                has_l, has_r = lop is not None and i < lcount, rop is not None and i < rcount
                row = _new(TensorPair)  # the fields in their order, as `_InGraph.op_pairs` makes its rows
                row.__dict__.update(zip(_PAIR_FIELDS, (
                    lop.op_name if has_l else None, some.op_type, kind, i,
                    _tensor_index(lop.op_name, kind, i) if has_l else None,
                    rop.op_name if has_r else None, (rop.op_name,) if has_r else (),
                    f"{rop.op_type}.{rop.op_name}" if has_r else None,
                    lop.ref if has_l else None, rop.ref if has_r else None,
                    _SAME_MODEL, None, None, None, None, None, note)))
                rows.append((base + (0 if kind == "input" else 1, i), row))

    for n, lop in enumerate(left):
        op_rows((n, 0, 0), lop, right_by_id.get(identity(lop)))
    previous = -1
    for m, rop in enumerate(right):
        rank = left_rank.get(identity(rop))
        if rank is not None:
            previous = rank
            continue
        op_rows((previous, 1, m), None, rop)
    rows.sort(key=lambda r: r[0])
    return [pair for _, pair in rows]
