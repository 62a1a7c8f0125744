"""Ground truth from an ONNX model: run it in onnxruntime with every node output exposed, and write each output as
`{op_name}.{output_index}.{timestamp}.npy`, the NumPy ground-truth naming the comparison reads, plus an index.

Needs the `onnx` extra (`pip install 'dumpcmp[onnx]'`: onnx, onnxruntime).

What is written, and the decisions behind it:
- Names: `.`, `/`, `\\` and spaces in an op name become `_` (the runtime's rule, so the names match the device
  side). A node without a name is named after its first output tensor. Two ops that sanitise to the same name get
  `_1`, `_2`, ... (noted in the index); a file name too long for the file system (255 bytes) is written as a
  digits-only hash with a `{hash},{name}` row in the folder's mapping.csv, as the Ascend tools do, so scans resolve
  it (noted). The index is the mapping table from original names to files.
- Model inputs are written as the output 0 of an "op" named after the input, op type `Input` (ATC turns each
  graph input into a Data op of that name, so a comparison finds them under `{input}.0`). Initializers (weights)
  are not written.
- Order and timestamps: inputs first, then every node in topological order (the graph's own order when it is
  already sorted, which ONNX requires), outputs by index. Timestamps are 16-digit microseconds: the start time plus
  the file's position in that order, and always above every timestamp already in the folder, so "newest wins"
  never mixes two runs.
- The index `golden_index.csv` has one row per output, written or not: order, op_name, file_op_name, op_type,
  output_index, tensor_name, file, shape (JSON list), dtype, note. Outputs that are not plain tensors (sequences,
  maps, optionals), string tensors and optional outputs the node does not produce have an empty `file` and a note.
  `golden_run.json` records the model, the inputs' sources, the seed and the versions.
- Only top-level nodes are dumped; the nodes inside If/Loop/Scan bodies are not graph values onnxruntime can return.
- onnxruntime's graph optimisations are off, so every file is the result of that ONNX node itself (fusions would
  otherwise remove or merge nodes) and the results do not depend on which outputs are exposed. With `check=True`
  a plain run of the unmodified model is made first and every batch's final outputs must equal it bit for bit.

Memory stays bounded: onnxruntime keeps every graph output of a run alive until the run ends, whichever outputs
are fetched, so exposing all node outputs at once would hold all activations. The nodes are cut, in execution
order, into batches whose outputs fit in `batch_bytes` (sizes from ONNX shape inference with the actual input
shapes; where a shape is unknown, the largest tensor seen so far); each batch gets its own session exposing only
its outputs, and each output is written and dropped as it comes. Peak memory: one plain inference + one batch +
the weights, whatever the number of nodes (measured: a chain of 40 or 80 outputs of 16 MB each peaks at 290 MB
in batches of 16 MB, 800 MB when all are exposed at once). The price is one inference (and one session creation)
per batch, so a small `batch_bytes` on a deep model costs time.

Models over 2 GB keep their weights in external data files: the model is read without them
(`load_external_data=False`) and onnxruntime reads them from the model's folder (session option
`session.model_external_initializers_file_folder_path`, onnxruntime >= 1.21; older versions load a temporary copy
of the graph written beside the model).
"""

from __future__ import annotations

import csv
import hashlib
import heapq
import importlib.util
import inspect
import io
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from dumpcmp.dumps import naming
from dumpcmp.dumps.ground_truth import CONSTANT_MARK, INDEX_COLUMNS, INDEX_NAME, GoldenRecord, read_golden_index
from dumpcmp.support.files import atomic_write, atomic_write_text, create_temp_file, discard, file_set
from dumpcmp.support.lazy_numpy import np
from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NotFoundError

RUN_NAME = "golden_run.json"
INPUT_OP_TYPE = "Input"
DEFAULT_BATCH_BYTES = 512 * 1024 * 1024
IMAGE_LIST_SUFFIXES = (".txt", ".list", ".lst")
_TIMESTAMP_RE = re.compile(r"\.\d+\.(\d{16})\.npy$")


sanitize_name = naming.sanitize  # the runtime's rule, one definition in dumpcmp.dumps.naming


def _require_onnx() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ImportError as error:
        raise DumpcmpError(f"ground truth from ONNX needs the onnx extra ({error.name or error} is missing): "
                           "pip install 'dumpcmp[onnx]'") from error
    return onnx, onnxruntime


# -- records ---------------------------------------------------------------------------------------------------
@dataclass
class GoldenRun:
    """The result of `dump_golden`."""

    out_dir: Path
    index_path: Path
    records: list[GoldenRecord]
    outputs: dict[str, np.ndarray]  # the model's own final outputs (the plain run when checked)
    batches: list[list[str]] = field(default_factory=list)  # tensor names exposed per session
    checked: bool = False  # every batch's final outputs equal the plain run's

    @property
    def written(self) -> list[GoldenRecord]:
        return [r for r in self.records if r.file]


# -- the model -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelInput:
    """A graph input that needs data: its name, NumPy dtype and shape (ints, or None/str for a free dim)."""

    name: str
    dtype: np.dtype
    shape: tuple[int | str | None, ...] | None

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.dtype} of any shape"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype} [{dims}]"


def _iter_tensors(graph: Any) -> Iterator[Any]:
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _iter_tensors(attr.g)
            for g in attr.graphs:
                yield from _iter_tensors(g)


def load_model(path: Path) -> Any:
    onnx, _ = _require_onnx()
    if not path.is_file():
        raise NotFoundError(f"{path}: no such model file")
    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception as error:  # protobuf's DecodeError and friends
        raise ConfigError(f"{path}: not a readable ONNX model: {error}") from error


def external_files(model: Any, model_dir: Path, model_path: Path) -> list[str]:
    onnx, _ = _require_onnx()
    locations: list[str] = []
    for tensor in _iter_tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in tensor.external_data}
        location = info.get("location", "")
        if location not in locations:
            if not (model_dir / location).is_file():
                raise NotFoundError(f"{model_path}: weight {tensor.name!r} is stored in {location!r}, which is not "
                                    f"in {model_dir}; keep the external data files beside the model")
            locations.append(location)
    return locations


def model_inputs(model: Any) -> list[ModelInput]:
    """The graph inputs that need data (initializers listed as inputs by old IR versions are left out)."""
    onnx, _ = _require_onnx()
    initializers = {t.name for t in model.graph.initializer}
    result = []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        tt = vi.type
        if not tt.HasField("tensor_type"):
            raise ConfigError(f"model input {vi.name!r} is not a tensor ({tt.WhichOneof('value')}); dumpcmp "
                              "feeds tensors only")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.tensor_type.elem_type))
        shape: tuple[int | str | None, ...] | None = None
        if tt.tensor_type.HasField("shape"):
            dims: list[int | str | None] = []
            for d in tt.tensor_type.shape.dim:
                if d.HasField("dim_value") and d.dim_value >= 0:
                    dims.append(int(d.dim_value))
                elif d.HasField("dim_param") and d.dim_param:
                    dims.append(d.dim_param)
                else:
                    dims.append(None)
            shape = tuple(dims)
        result.append(ModelInput(vi.name, dtype, shape))
    return result


def _subgraph_outer_names(node: Any) -> set[str]:
    """Names a node's subgraphs use from the enclosing scope: implicit inputs for the execution order."""
    used: set[str] = set()

    def walk(graph: Any) -> set[str]:
        defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
        needed: set[str] = set()
        for n in graph.node:
            needed.update(x for x in n.input if x and x not in defined)
            for attr in n.attribute:
                subs = ([attr.g] if attr.HasField("g") else []) + list(attr.graphs)
                for g in subs:
                    needed.update(x for x in walk(g) if x not in defined)
            defined.update(n.output)
        needed.update(o.name for o in graph.output if o.name not in defined)
        return needed

    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            used |= walk(g)
    return used


def subgraph_note(node: Any) -> str:
    """For a node with subgraphs (If/Loop/Scan): which values inside them are not exposed, precisely."""
    parts = []
    for attr in node.attribute:
        for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
            inner = [o for n in g.node for o in n.output if o]
            if inner:
                shown = ", ".join(inner[:8]) + (f", ... ({len(inner)} in all)" if len(inner) > 8 else "")
                parts.append(f"{attr.name}: {shown}")
    if not parts:
        return ""
    return ("outputs inside its subgraphs are not exposed (onnxruntime fetches graph-level values only; the "
            f"{node.op_type}'s own outputs are): " + "; ".join(parts))


CONSTANT_NOTE = f"{CONSTANT_MARK}: not written; --include-constants writes it"


def constant_tensors(graph: Any) -> set[str]:
    """Tensors whose values come from the weights alone: initializers, Constant nodes, and the outputs of nodes
    (without subgraphs) all of whose inputs are such tensors. A compiler folds them; they are no layer's output."""
    const = {t.name for t in graph.initializer}
    for node in execution_order(graph):
        ins = [x for x in node.input if x]
        if node.op_type == "Constant" or (ins and all(x in const for x in ins) and not any(
                attr.HasField("g") or len(attr.graphs) for attr in node.attribute)
                and not node.op_type.startswith("Random")):
            const.update(o for o in node.output if o)
    return const


def execution_order(graph: Any, model_path: Path | str = "model") -> list[Any]:
    """The graph's nodes in topological order; the graph's own order when it already is one (Kahn's algorithm
    always taking the earliest ready node reproduces a sorted order exactly)."""
    nodes = list(graph.node)
    producer = {out: i for i, n in enumerate(nodes) for out in n.output if out}
    deps: list[set[int]] = []
    for i, n in enumerate(nodes):
        names = {x for x in n.input if x} | _subgraph_outer_names(n)
        deps.append({producer[x] for x in names if x in producer and producer[x] != i})
    users: list[list[int]] = [[] for _ in nodes]
    waiting = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        stuck = [nodes[i].name or nodes[i].output[0] for i in range(len(nodes)) if waiting[i] > 0][:5]
        raise ConfigError(f"{model_path}: the graph has a cycle; nodes never ready: {', '.join(stuck)}")
    return [nodes[i] for i in order]


def value_types(model: Any, feeds: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """name -> TypeProto from ONNX shape inference run with the actual input shapes. Large weights are left out
    of the copy that is inferred (shape inference needs their shapes, not their values)."""
    onnx, _ = _require_onnx()
    skeleton = onnx.ModelProto()
    skeleton.ir_version = model.ir_version
    skeleton.opset_import.extend(model.opset_import)
    skeleton.functions.extend(model.functions)
    g = skeleton.graph
    src = model.graph
    g.name = src.name
    g.node.extend(src.node)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    for vi in src.input:
        new = g.input.add()
        new.CopyFrom(vi)
        if vi.name in feeds and new.type.HasField("tensor_type"):
            shape = new.type.tensor_type.shape
            shape.Clear()
            for d in feeds[vi.name].shape:
                shape.dim.add().dim_value = int(d)
    for t in src.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.raw_data) > 65536:
            stub = g.initializer.add()
            stub.name, stub.data_type = t.name, t.data_type
            stub.dims.extend(t.dims)
            stub.data_location = onnx.TensorProto.EXTERNAL
            entry = stub.external_data.add()
            entry.key, entry.value = "location", "dumpcmp-shape-inference-stub"
        else:
            g.initializer.add().CopyFrom(t)
    try:
        inferred = onnx.shape_inference.infer_shapes(skeleton, strict_mode=False, data_prop=True)
    except Exception:  # inference is only an estimate for batching; the run itself is what counts
        return {}
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + list(inferred.graph.input):
        types[vi.name] = vi.type
    return types


def tensor_nbytes(type_proto: Any) -> int | None:
    onnx, _ = _require_onnx()
    if type_proto is None or not type_proto.HasField("tensor_type"):
        return None
    tt = type_proto.tensor_type
    if not tt.HasField("shape") or tt.elem_type == 0:
        return None
    n = 1
    for d in tt.shape.dim:
        if not d.HasField("dim_value"):
            return None
        n *= int(d.dim_value)
    try:
        itemsize = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)).itemsize
    except Exception:
        return None
    return n * max(itemsize, 1)


def _not_a_tensor(type_proto: Any) -> str | None:
    if type_proto is None:
        return None
    kind = type_proto.WhichOneof("value")
    if kind in (None, "tensor_type"):
        return None
    return {"sequence_type": "sequence", "map_type": "map", "optional_type": "optional",
            "sparse_tensor_type": "sparse tensor"}.get(kind, kind)


# -- sessions --------------------------------------------------------------------------------------------------
def _ort_version(ort: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", ort.__version__)[:2])


class Runner:
    """Creates onnxruntime sessions for the model with a chosen set of extra graph outputs."""

    def __init__(self, model: Any, model_path: Path, external: bool, strategy: str | None = None) -> None:
        _, ort = _require_onnx()
        self.ort = ort
        self.model = model
        self.model_path = model_path
        self.external = external
        self.original_outputs = [o.name for o in model.graph.output]
        if strategy is None:
            strategy = "option" if _ort_version(ort) >= (1, 21) else "file"
        self.strategy = strategy

    def _options(self) -> Any:
        so = self.ort.SessionOptions()
        # Each file must be that ONNX node's own result, whatever else is exposed: no fusion, no folding.
        so.graph_optimization_level = self.ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        so.log_severity_level = 3
        # One session per batch: without the arena each session's activations go back to the system when it
        # ends (measured: peak 320 MB instead of 480 MB for 40 outputs of 16 MB in batches of 64 MB).
        so.enable_cpu_mem_arena = False
        if self.external and self.strategy == "option":
            so.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                        str(self.model_path.parent.resolve()))
        return so

    def session(self, extra: Sequence[str]) -> Any:
        graph = self.model.graph
        del graph.output[len(self.original_outputs):]
        present = set(self.original_outputs)
        for name in extra:
            if name not in present:
                graph.output.add().name = name
                present.add(name)
        try:
            data = self.model.SerializeToString()
        finally:
            del graph.output[len(self.original_outputs):]
        try:
            if self.external and self.strategy == "file":
                try:
                    fd, tmp = create_temp_file(self.model_path.parent, self.model_path.name)
                    with os.fdopen(fd, "wb") as handle:
                        handle.write(data)
                except OSError as error:
                    raise ConfigError(f"{self.model_path}: onnxruntime {self.ort.__version__} can only find external "
                                      f"weights beside a model file, and {self.model_path.parent} is not writable; "
                                      "upgrade onnxruntime to 1.21 or later") from error
                try:
                    return self.ort.InferenceSession(str(tmp), self._options(), providers=["CPUExecutionProvider"])
                finally:
                    discard(tmp)
            return self.ort.InferenceSession(data, self._options(), providers=["CPUExecutionProvider"])
        except DumpcmpError:
            raise
        except Exception as error:
            raise ConfigError(f"{self.model_path}: onnxruntime cannot load the model: {_short(error)}") from error

    def run(self, session: Any, names: Sequence[str], feeds: Mapping[str, np.ndarray]) -> list[Any]:
        try:
            return list(session.run(list(names), dict(feeds)))
        except Exception as error:
            raise DumpcmpError(f"{self.model_path}: onnxruntime failed to run the model: {_short(error)}") from error


def _short(error: BaseException) -> str:
    text = str(error).strip().replace("\n", " ")
    return text if len(text) < 600 else text[:600] + " ..."


# -- inputs ----------------------------------------------------------------------------------------------------
def check_input(mi: ModelInput, array: np.ndarray, source: str) -> np.ndarray:
    """`array` if its dtype and shape fit the model input; ConfigError naming the input and the source if not."""
    if array.dtype != mi.dtype:
        raise ConfigError(f"{source}: input {mi.name!r} must be {mi.dtype}, the file holds {array.dtype}; "
                          f"convert it (e.g. array.astype(np.{mi.dtype.name}))")
    if mi.shape is not None:
        ok = len(mi.shape) == array.ndim and all(not isinstance(d, int) or d == s
                                                  for d, s in zip(mi.shape, array.shape))
        if not ok:
            raise ConfigError(f"{source}: input {mi.name!r} must have shape {mi.describe().split(' ', 1)[1]}, "
                              f"the data has {list(array.shape)}")
    return array


def load_array(path: str | os.PathLike[str], mi: ModelInput) -> np.ndarray:
    """A `.npy` file, or a raw `.bin` file of the input's dtype shaped by the model (one free dim is inferred)."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"{p}: no such input file (for input {mi.name!r})")
    if p.suffix.lower() == ".npy":
        from dumpcmp.dumps.ground_truth import load_npy

        try:
            array = load_npy(p)  # the header checked against the file size first
        except DumpError as error:
            raise ConfigError(str(error)) from None
        return check_input(mi, np.require(array, requirements="C"), str(p))
    if p.suffix.lower() != ".bin":
        raise ConfigError(f"{p}: input {mi.name!r}: give a .npy or .bin file, or an image with --preprocess "
                          "SCRIPT for this input")
    size = p.stat().st_size
    item = mi.dtype.itemsize
    if mi.shape is None:
        raise ConfigError(f"{p}: the model gives no shape for input {mi.name!r}, so a raw .bin cannot be shaped; "
                          "give a .npy file")
    if size % item:
        raise ConfigError(f"{p}: {size} bytes is not a whole number of {mi.dtype} values ({item} bytes each) "
                          f"for input {mi.name!r}")
    count = size // item
    known = [d if isinstance(d, int) else None for d in mi.shape]
    free = [i for i, d in enumerate(known) if d is None]
    fixed = int(np.prod([d for d in known if d is not None], dtype=np.int64))
    if not free and count != fixed:
        raise ConfigError(f"{p}: {count} {mi.dtype} values, input {mi.name!r} {mi.describe()} needs {fixed}")
    if len(free) > 1 or (free and (fixed == 0 or count % fixed)):
        raise ConfigError(f"{p}: input {mi.name!r} {mi.describe()} has free dims that {count} values do not "
                          "determine; give a .npy file")
    shape = [d if d is not None else count // max(fixed, 1) for d in known]
    return np.fromfile(p, dtype=mi.dtype).reshape(shape)


def random_input(mi: ModelInput, rng: np.random.Generator) -> np.ndarray:
    """Random data for an input: free dims are 1; floats standard normal, integers uniform in [0, 10), booleans
    fair coin flips."""
    shape = tuple(d if isinstance(d, int) else 1 for d in (mi.shape or ()))
    kind = mi.dtype.kind
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind in "iu":
        return rng.integers(0, 10, size=shape).astype(mi.dtype)
    if kind in "fc" or mi.dtype.name in ("bfloat16",):
        return rng.standard_normal(shape).astype(mi.dtype)
    raise ConfigError(f"input {mi.name!r} is {mi.dtype}: no random data for that type; give a file")


def load_preprocess(script: str | os.PathLike[str]) -> Callable[..., Any]:
    """The `get_image` function of a user's preprocessing script (SigmaStar convention)."""
    p = Path(script)
    if not p.is_file():
        raise NotFoundError(f"{p}: no such preprocessing script")
    name = "dumpcmp_preprocess_" + hashlib.sha1(str(p.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{p}: cannot be loaded as a Python script")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        raise ConfigError(f"{p}: the preprocessing script fails on import: {type(error).__name__}: {error}") from error
    fn = getattr(module, "get_image", None)
    if not callable(fn):
        raise ConfigError(f"{p}: the preprocessing script has no get_image(path, ..., nchw=False) function")
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    if params and "nchw" not in params and not any(v.kind == v.VAR_KEYWORD for v in params.values()):
        raise ConfigError(f"{p}: get_image must take an `nchw` argument (it is called with nchw=True so that 4-D "
                          "inputs come out NCHW like the ONNX model's)")
    return fn  # type: ignore[no-any-return]


def preprocess_image(fn: Callable[..., Any], image: Path, mi: ModelInput, script: str) -> np.ndarray:
    """Run get_image(image, nchw=True) (plus resizeH/resizeW/resizeC from a static NCHW input shape when the
    function takes them) and fit the result to the input: same-kind dtype conversions (float64 -> float32) are
    made, anything else is an error."""
    kwargs: dict[str, Any] = {"nchw": True}
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    if mi.shape is not None and len(mi.shape) == 4 and all(isinstance(d, int) for d in mi.shape[1:]):
        for key, value in (("resizeC", mi.shape[1]), ("resizeH", mi.shape[2]), ("resizeW", mi.shape[3])):
            if key in params:
                kwargs[key] = value
    try:
        result = fn(str(image), **kwargs)
    except Exception as error:
        raise ConfigError(f"{script}: get_image({str(image)!r}) failed: {type(error).__name__}: {error}") from error
    try:
        array = np.asarray(result)
    except Exception as error:
        raise ConfigError(f"{script}: get_image({str(image)!r}) returned {type(result).__name__}, not an array") \
            from error
    if array.dtype != mi.dtype:
        same_kind = (array.dtype.kind == "f" and mi.dtype.kind == "f") or (
            array.dtype.kind in "iu" and mi.dtype.kind in "iu" and array.size and
            np.iinfo(mi.dtype).min <= array.min() and array.max() <= np.iinfo(mi.dtype).max)
        if not same_kind:
            raise ConfigError(f"{script}: get_image({str(image)!r}) returned {array.dtype}, input {mi.name!r} "
                              f"needs {mi.dtype}; convert in the script")
        array = array.astype(mi.dtype)
    return check_input(mi, np.require(array, requirements="C"), f"{script}: get_image({str(image)!r})")


@dataclass
class InputPlan:
    """Where one input's data comes from for every sample: files (each through `script` when given), or random."""

    input: ModelInput
    files: list[Path] = field(default_factory=list)
    script: str | None = None
    random: bool = False

    def describe(self, k: int) -> str:
        if self.random:
            return "random"
        f = self.files[k if len(self.files) > 1 else 0]
        return f"{f} via {self.script}" if self.script else str(f)


def _expand_source(text: str, base: Path | None = None) -> list[Path]:
    p = Path(text)
    if base is not None and not p.is_absolute():
        p = base / p
    if p.is_dir():
        files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
        if not files:
            raise NotFoundError(f"{p}: the input folder has no files")
        return files
    if not p.exists():
        raise NotFoundError(f"{p}: no such input file or folder")
    if p.suffix.lower() in IMAGE_LIST_SUFFIXES:
        return [row[0] for row in _list_rows(p, 1)]
    return [p]


def _list_lines(p: Path) -> list[list[str]]:
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{p}: cannot read the list file: {error}") from error
    rows = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            rows.append([c.strip() for c in line.split(",")])
    if not rows:
        raise ConfigError(f"{p}: the list file names no files")
    return rows


def _list_rows(p: Path, columns: int) -> list[list[Path]]:
    rows = []
    for line_no, cols in enumerate(_list_lines(p), start=1):
        if len(cols) != columns:
            raise ConfigError(f"{p}: entry {line_no} has {len(cols)} comma-separated paths, the model has "
                              f"{columns} input{'s' * (columns != 1)}")
        paths = []
        for c in cols:
            q = Path(c)
            if not q.is_absolute():
                q = p.parent / q
            if not q.is_file():
                raise NotFoundError(f"{p}: entry {line_no}: {q} does not exist")
            paths.append(q)
        rows.append(paths)
    return rows


def _split_named(items: Sequence[str], names: Sequence[str], what: str) -> tuple[dict[str, str], list[str]]:
    named: dict[str, str] = {}
    unnamed: list[str] = []
    for item in items:
        key, sep, value = item.partition("=")
        if sep and key in names:
            if key in named:
                raise ConfigError(f"{what}: input {key!r} is given twice")
            named[key] = value
        elif sep and not Path(item).exists():
            raise ConfigError(f"{what} {item!r}: the model has no input {key!r}; its inputs: {', '.join(names)}")
        else:
            unnamed.append(item)
    return named, unnamed


def parse_shapes(items: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """`--shape NAME=D,D,...` values (also `NAME=[D,D]`, `NAME=` or `NAME=[]` for a scalar) -> name -> dims."""
    out: dict[str, tuple[int, ...]] = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        text = dims.strip().strip("[]()").replace(" ", "")
        try:
            shape = tuple(int(d) for d in text.split(",") if d) if sep else None
        except ValueError:
            shape = None
        if not name or shape is None or any(d < 0 for d in shape):
            raise ConfigError(f"--shape {item!r}: write NAME=D,D,... (e.g. x=1,3,224,224)")
        out[name] = shape
    return out


def apply_shapes(inputs: Sequence[ModelInput], shapes: Mapping[str, Sequence[int]], where: str) -> list[ModelInput]:
    """The model inputs with the free dimensions `shapes` fills in; a fixed dimension must match."""
    by_name = {mi.name: mi for mi in inputs}
    unknown = [n for n in shapes if n not in by_name]
    if unknown:
        raise ConfigError(f"{where}: --shape {unknown[0]}=...: the model has no input {unknown[0]!r}; its inputs: "
                          f"{', '.join(by_name) or '(none)'}")
    out = []
    for mi in inputs:
        if mi.name not in shapes:
            out.append(mi)
            continue
        dims = tuple(int(d) for d in shapes[mi.name])
        if mi.shape is not None and (len(mi.shape) != len(dims) or any(
                isinstance(d, int) and d != g for d, g in zip(mi.shape, dims))):
            raise ConfigError(f"{where}: --shape {mi.name}={','.join(map(str, dims))} does not fit the input "
                              f"{mi.name!r} {mi.describe()}")
        out.append(replace(mi, shape=dims))
    return out


def free_dims_note(plans: Sequence[InputPlan]) -> str:
    """The random inputs whose free dimensions were set to 1, for an error message ('' when none)."""
    free = [p.input for p in plans if p.random and p.input.shape is not None
            and any(not isinstance(d, int) for d in p.input.shape)]
    return ", ".join(f"{mi.name} {mi.describe()}" for mi in free)


def _with_free_dims_hint(error: DumpcmpError, plans: Sequence[InputPlan]) -> DumpcmpError:
    free = free_dims_note(plans)
    if not free or "onnxruntime" not in str(error) or "--shape" in str(error):
        return error  # only a failed run can be the free dimensions' fault
    return ConfigError(f"{error}; the random inputs' free dimensions were set to 1 ({free}): give their sizes "
                       "with --shape NAME=D,D,...")


def plan_inputs(model_path: str | os.PathLike[str], sources: Sequence[str] = (), preprocess: Sequence[str] = (),
                seed: int | None = None,
                shapes: Mapping[str, Sequence[int]] | None = None) -> tuple[list[InputPlan], int]:
    """Assign `-i` sources and `--preprocess` scripts to the model's inputs, and count the samples.

    A source is `PATH` or `NAME=PATH`; PATH a `.npy`/`.bin` file, an image (needs a script), a folder (its files,
    sorted) or a list file (`.txt`/`.list`/`.lst`: one sample per line, relative paths from the list's folder).
    Unnamed sources go to the inputs not named, in model order. For a model with several inputs, one unnamed list
    file may give one comma-separated path per input on each line. Scripts are `SCRIPT` or `NAME=SCRIPT`, and
    comma-separated lists are split, SigmaStar-style. Inputs without a source get random data when `seed` is given.
    Every input with several files must have the same number; one file is reused for every sample.
    """
    model = load_model(Path(model_path))
    inputs = apply_shapes(model_inputs(model), shapes or {}, str(model_path))
    names = [mi.name for mi in inputs]
    plans = {mi.name: InputPlan(mi) for mi in inputs}
    where = str(model_path)

    scripts = [s for item in preprocess for s in item.split(",") if s]
    named_scripts, unnamed_scripts = _split_named(scripts, names, "--preprocess")
    named, unnamed = _split_named(sources, names, "-i")
    free = [n for n in names if n not in named]

    if (len(unnamed) == 1 and len(names) > 1 and not named and Path(unnamed[0]).suffix.lower()
            in IMAGE_LIST_SUFFIXES and Path(unnamed[0]).is_file()):
        rows = _list_rows(Path(unnamed[0]), len(names))
        for col, name in enumerate(names):
            plans[name].files = [row[col] for row in rows]
    else:
        if len(unnamed) > len(free):
            raise ConfigError(f"{where}: {len(unnamed)} unnamed -i source{'s' * (len(unnamed) != 1)} for "
                              f"{len(free)} input{'s' * (len(free) != 1)} without one ({', '.join(free) or 'none'}); "
                              "write NAME=PATH")
        for name, src in list(named.items()) + list(zip(free, unnamed)):
            plans[name].files = _expand_source(src)

    free_scripts = [n for n in names if n not in named_scripts]
    if len(unnamed_scripts) > len(free_scripts):
        raise ConfigError(f"{where}: {len(unnamed_scripts)} preprocessing scripts for {len(names)} inputs; write "
                          "NAME=SCRIPT")
    for name, script in list(named_scripts.items()) + list(zip(free_scripts, unnamed_scripts)):
        plans[name].script = script

    for name, plan in plans.items():
        if not plan.files:
            if seed is None:
                raise ConfigError(f"{where}: input {name!r} ({plan.input.describe()}) has no data: give -i "
                                  f"{name}=FILE, or --seed N for random data")
            plan.random = True
            if plan.script:
                raise ConfigError(f"--preprocess for input {name!r}, which has no -i images")
    counts = {len(p.files) for p in plans.values() if len(p.files) > 1}
    if len(counts) > 1:
        detail = ", ".join(f"{n}: {len(p.files)}" for n, p in plans.items() if p.files)
        raise ConfigError(f"{where}: the inputs have different numbers of files ({detail})")
    return list(plans.values()), (counts.pop() if counts else 1)


def load_sample(plans: Sequence[InputPlan], k: int, seed: int | None) -> dict[str, np.ndarray]:
    """The input arrays of sample `k`. Random data of sample k comes from np.random.default_rng([seed, k]),
    drawn in model input order."""
    rng = np.random.default_rng([seed, k]) if seed is not None else None
    feeds: dict[str, np.ndarray] = {}
    cache: dict[str, Callable[..., Any]] = {}
    for plan in plans:
        mi = plan.input
        if plan.random:
            assert rng is not None
            feeds[mi.name] = random_input(mi, rng)
            continue
        path = plan.files[k if len(plan.files) > 1 else 0]
        if plan.script:
            fn = cache.get(plan.script) or load_preprocess(plan.script)
            cache[plan.script] = fn
            feeds[mi.name] = preprocess_image(fn, path, mi, plan.script)
        else:
            feeds[mi.name] = load_array(path, mi)
    return feeds


# -- writing ---------------------------------------------------------------------------------------------------
def _latest_timestamp(out: Path) -> int:
    latest = 0
    if out.is_dir():
        for f in out.iterdir():
            m = _TIMESTAMP_RE.search(f.name)
            if m:
                latest = max(latest, int(m.group(1)))
    return latest


class _Namer:
    """Unique file-safe op names; notes say what was changed."""

    def __init__(self) -> None:
        self.used: dict[str, str] = {}

    def __call__(self, op_name: str) -> tuple[str, str]:
        base = sanitize_name(op_name) or "_"
        note = ""
        name, k = base, 0
        while name in self.used and self.used[name] != op_name:
            k += 1
            name = f"{base}_{k}"
        if k:
            note = (note + "; " if note else "") + f"renamed: {self.used[base]!r} also sanitises to {base!r}"
        self.used[name] = op_name
        return name, note


def _save_npy(path: Path, array: np.ndarray) -> None:
    atomic_write(path, lambda f: np.save(f, array, allow_pickle=False))


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def dump_golden(model_path: str | os.PathLike[str], inputs: Mapping[str, np.ndarray] | None,
                out_dir: str | os.PathLike[str], *, seed: int | None = None,
                batch_bytes: int = DEFAULT_BATCH_BYTES, check: bool = True, force: bool = False,
                sources: Mapping[str, str] | None = None, include_constants: bool = False,
                control_samples: Sequence[Mapping[str, np.ndarray]] | None = None,
                _external_strategy: str | None = None) -> GoldenRun:
    """Run the ONNX model on `inputs` (name -> array; inputs left out get random data when `seed` is given) and
    write every op output to `out_dir` as `{op_name}.{output_index}.{timestamp}.npy`, with `golden_index.csv`.

    `batch_bytes` bounds the outputs held at once (see the module doc). `check`: make a plain run first and
    require every batch's final outputs to equal it. A folder that already has a golden index is refused unless
    `force`. `sources` (name -> description) only goes into golden_run.json. Outputs computed from the weights
    alone (`constant_tensors`) are not written unless `include_constants`: their index rows say so. An If whose
    condition is the same on `control_samples` (default: these inputs) is inlined (`dumpcmp.onnx.controlflow`): the
    nodes of the branch taken are written as layers of their own, as `dumpcmp simulate` dumps them.
    """
    out = Path(out_dir)
    created = not out.exists()
    try:
        return _dump_golden(model_path, inputs, out, seed=seed, batch_bytes=batch_bytes, check=check, force=force,
                            sources=sources, include_constants=include_constants,
                            control_samples=control_samples, _external_strategy=_external_strategy)
    except BaseException:
        if created:  # a failed run leaves no folder behind that it made itself
            shutil.rmtree(out, ignore_errors=True)
        raise


def _dump_golden(model_path: str | os.PathLike[str], inputs: Mapping[str, np.ndarray] | None, out: Path, *,
                 seed: int | None, batch_bytes: int, check: bool, force: bool, sources: Mapping[str, str] | None,
                 include_constants: bool, control_samples: Sequence[Mapping[str, np.ndarray]] | None,
                 _external_strategy: str | None) -> GoldenRun:
    onnx, ort = _require_onnx()
    path = Path(model_path)
    model = load_model(path)
    external = bool(external_files(model, path.parent, path))
    declared = model_inputs(model)
    by_name = {mi.name: mi for mi in declared}
    given = dict(inputs or {})
    unknown = [n for n in given if n not in by_name]
    if unknown:
        raise ConfigError(f"{path}: the model has no input {unknown[0]!r}; its inputs: "
                          f"{', '.join(by_name) or '(none)'}")
    rng = np.random.default_rng([seed, 0]) if seed is not None else None
    feeds: dict[str, np.ndarray] = {}
    source_notes = dict(sources or {})
    for mi in declared:
        if mi.name in given:
            feeds[mi.name] = check_input(mi, np.require(given[mi.name], requirements="C"),
                                         f"input {mi.name!r}")
            source_notes.setdefault(mi.name, "array")
        elif rng is not None:
            feeds[mi.name] = random_input(mi, rng)
            source_notes[mi.name] = f"random (seed {seed})"
        else:
            raise ConfigError(f"{path}: input {mi.name!r} ({mi.describe()}) has no data; give it, or a seed for "
                              "random data")

    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: exists and is not a folder")
    if (out / INDEX_NAME).exists() and not force:
        raise ConfigError(f"{out}: already holds ground truth ({INDEX_NAME}); choose a new folder or use --force "
                          "(force=True in Python; the new files get later timestamps, so they win)")
    out.mkdir(parents=True, exist_ok=True)

    flow = ""
    if any(n.op_type == "If" for n in model.graph.node):
        from dumpcmp.onnx.controlflow import inline_static_ifs

        model, flow_notes = inline_static_ifs(model, list(control_samples or [feeds]))
        flow = "; ".join(flow_notes) or "every If inlined (its condition is the same on every sample)"
    nodes = execution_order(model.graph, path)
    types = value_types(model, feeds)
    runner = Runner(model, path, external, _external_strategy)

    # Everything is built in a private temporary folder inside `out` and moved into place at the end, index
    # last: a run stopped by an error or a signal leaves nothing, not a set without its index.
    with file_set(out, force=force, what="ground truth") as staged:
        return _dump_into(out, staged, path, model, runner, feeds, declared, nodes, types, check, seed,
                          batch_bytes, source_notes, ort, onnx, include_constants, flow)


def _dump_into(out: Path, staged: Any, path: Path, model: Any, runner: Runner, feeds: dict[str, np.ndarray],
               declared: Any, nodes: Any, types: Any, check: bool, seed: int | None, batch_bytes: int,
               source_notes: dict[str, str], ort: Any, onnx: Any, include_constants: bool,
               flow: str) -> GoldenRun:
    plain: dict[str, np.ndarray] = {}
    if check:
        session = runner.session([])
        plain = dict(zip(runner.original_outputs, runner.run(session, runner.original_outputs, feeds)))
        del session

    base = max(int(time.time() * 1_000_000), _latest_timestamp(out) + 1)
    namer = _Namer()
    records: list[GoldenRecord] = []
    for mi in declared:
        name, note = namer(mi.name)
        records.append(GoldenRecord(len(records), mi.name, name, INPUT_OP_TYPE, 0, mi.name, note=note))
    pending: list[tuple[GoldenRecord, int | None]] = []  # exposable outputs with their estimated size
    constants = constant_tensors(model.graph)
    for node in nodes:
        op_name = node.name
        naming_note = ""
        if not op_name:
            op_name = next((o for o in node.output if o), f"{node.op_type}_unnamed")
            naming_note = "node has no name: named after its first output"
        file_name, note = namer(op_name)
        note = "; ".join(n for n in (naming_note, note, subgraph_note(node)) if n)
        for index, tensor in enumerate(node.output):
            rec = GoldenRecord(len(records), op_name, file_name, node.op_type, index, tensor, note=note)
            records.append(rec)
            if not tensor:
                rec.note = _join_note(rec.note, "optional output not produced by this node")
                continue
            if tensor in constants:
                if include_constants:
                    rec.note = _join_note(rec.note, CONSTANT_MARK)
                else:
                    rec.note = _join_note(rec.note, CONSTANT_NOTE)
                    continue
            kind = _not_a_tensor(types.get(tensor))
            if kind:
                rec.note = _join_note(rec.note, f"{kind} output: not a tensor, not written")
                continue
            pending.append((rec, tensor_nbytes(types.get(tensor))))

    # Inputs are written first: they are what the run starts from.
    for rec in records[: len(declared)]:
        _write(out, staged, rec, feeds[rec.tensor_name], base)

    batches: list[list[str]] = []
    largest = max((a.nbytes for a in feeds.values()), default=0)
    final = set(runner.original_outputs)
    outputs_seen: dict[str, np.ndarray] = {}
    i = 0
    while i < len(pending):
        batch: list[GoldenRecord] = []
        total = 0
        while i < len(pending):
            rec, size = pending[i]
            estimate = size if size is not None else largest
            if batch and total + estimate > batch_bytes:
                break
            batch.append(rec)
            total += estimate
            i += 1
        names = [r.tensor_name for r in batch]
        batches.append(names)
        session = runner.session(names)
        fetch = names + [n for n in runner.original_outputs if n not in names]
        values = runner.run(session, fetch, feeds)
        del session
        for n, v in zip(fetch, values):
            if n not in final:
                continue
            if check and not _same(v, plain[n]):
                raise DumpcmpError(f"{path}: exposing intermediate outputs changed the final output {n!r}; "
                                   "onnxruntime does not compute this model deterministically")
            outputs_seen.setdefault(n, v)
        for k, rec in enumerate(batch):
            value = values[k]
            values[k] = None
            if not isinstance(value, np.ndarray):
                rec.note = _join_note(rec.note, f"{type(value).__name__} output: not a tensor, not written")
                continue
            largest = max(largest, value.nbytes)
            if value.dtype.kind in "OSU":
                rec.shape, rec.dtype = tuple(value.shape), "string"
                rec.note = _join_note(rec.note, "string tensor: not written")
                continue
            _write(out, staged, rec, value, base)
        del values
    if not check:
        if not batches:  # a model without nodes: its outputs are inputs or weights
            session = runner.session([])
            outputs_seen.update(zip(runner.original_outputs, runner.run(session, runner.original_outputs, feeds)))
            del session
        plain = {n: outputs_seen[n] for n in runner.original_outputs}

    index_path = out / INDEX_NAME
    text = io.StringIO()
    w = csv.writer(text, lineterminator="\n")
    w.writerow(INDEX_COLUMNS)
    for rec in records:
        w.writerow(rec.row())
    atomic_write_text(staged.path(INDEX_NAME), text.getvalue())
    run_info = {
        "model": str(path.resolve()),
        "inputs": {n: source_notes.get(n, "") for n in feeds},
        "seed": seed,
        "control_flow": flow,
        "timestamp_base": base,
        "batches": len(batches),
        "checked_against_plain_run": check,
        "graph_optimizations": "disabled",
        "onnx": onnx.__version__,
        "onnxruntime": ort.__version__,
    }
    atomic_write_text(staged.path(RUN_NAME), json.dumps(run_info, indent=2) + "\n")
    return GoldenRun(out, index_path, records, plain, batches, check)


def _join_note(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def _write(out: Path, staged: Any, rec: GoldenRecord, array: np.ndarray, base: int) -> None:
    ts = base + rec.order
    # a name too long for the file system becomes a digits-only hash with a mapping.csv row, as the Ascend tools
    # do, so a scan of the folder resolves it back to its {op}.{output_index} key
    rec.file = naming.safe_file_name(f"{rec.file_op_name}.{rec.output_index}.{ts}.npy", out)
    if rec.file.isdigit():
        rec.note = _join_note(rec.note, f"name too long for a file: written as {rec.file}, see mapping.csv")
    rec.shape = tuple(int(d) for d in array.shape)
    rec.dtype = str(array.dtype)
    _save_npy(Path(staged.path(rec.file)), array)


def golden_from_sources(model_path: str | os.PathLike[str], out_dir: str | os.PathLike[str],
                        sources: Sequence[str] = (), preprocess: Sequence[str] = (), *, seed: int | None = None,
                        batch_bytes: int = DEFAULT_BATCH_BYTES, check: bool = True,
                        force: bool = False, include_constants: bool = False,
                        shapes: Mapping[str, Sequence[int]] | None = None) -> list[GoldenRun]:
    """What `dumpcmp golden` does: plan the inputs (see `plan_inputs`) and dump every sample; one sample goes to
    `out_dir`, several to `out_dir/0`, `out_dir/1`, ... (like the device side's data_index folders)."""
    plans, count = plan_inputs(model_path, sources, preprocess, seed, shapes)
    top = Path(out_dir)
    created = not top.exists()
    runs = []
    try:
        samples = [load_sample(plans, k, seed) for k in range(count)]
        for k in range(count):
            target = top if count == 1 else top / str(k)
            described = {p.input.name: p.describe(k) for p in plans}
            runs.append(dump_golden(model_path, samples[k], target, seed=seed, batch_bytes=batch_bytes, check=check,
                                    force=force, sources=described, include_constants=include_constants,
                                    control_samples=samples))
    except DumpcmpError as error:
        if created:
            shutil.rmtree(top, ignore_errors=True)
        raise _with_free_dims_hint(error, plans) from error
    except BaseException:
        if created:  # a failed run leaves no folder behind that it made itself
            shutil.rmtree(top, ignore_errors=True)
        raise
    return runs


__all__ = [
    "DEFAULT_BATCH_BYTES", "GoldenRecord", "GoldenRun", "INDEX_COLUMNS", "INDEX_NAME", "InputPlan", "ModelInput",
    "check_input", "dump_golden", "execution_order", "golden_from_sources", "load_array", "load_preprocess",
    "load_sample", "model_inputs", "plan_inputs", "preprocess_image", "random_input", "read_golden_index",
    "sanitize_name",
]
