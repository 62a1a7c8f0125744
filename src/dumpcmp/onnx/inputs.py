"""The data a model runs on: `-i` sources and `--preprocess` scripts assigned to the model's inputs (`plan_inputs`),
read one sample at a time (`load_sample`: .npy, raw .bin shaped by the model, images through the user's
`get_image`, random data from a seed), checked against the inputs' dtypes and shapes, and `--shape` sizes for free
dimensions.

In: the model's `ModelInput`s, file and folder paths, scripts, a seed. Out: one dict (input name -> array) per sample.
Shared by `dumpcmp golden` and `dumpcmp simulate`, so both sides run on the same data.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NotFoundError
from dumpcmp.onnx.model import ModelInput, load_model, model_inputs
from dumpcmp.support.lazy_numpy import np

__all__ = ["IMAGE_LIST_SUFFIXES", "InputPlan", "MAX_RANDOM_BYTES", "apply_shapes", "check_input", "free_dims_note",
           "load_array", "load_preprocess", "load_sample", "parse_shapes", "plan_inputs", "preprocess_image",
           "random_input", "sample_feeds", "with_free_dims_hint"]

IMAGE_LIST_SUFFIXES = (".txt", ".list", ".lst")


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


def sample_feeds(inputs: Sequence[ModelInput], sample: Mapping[str, np.ndarray], rng: np.random.Generator | None,
                 where: str, label: str | None = None) -> dict[str, np.ndarray]:
    """One sample's arrays in model input order: those `sample` gives, checked against the input (the data named
    `label`, default the input), random data from `rng` for the others; ConfigError for an input with neither."""
    feeds: dict[str, np.ndarray] = {}
    for mi in inputs:
        if mi.name in sample:
            source = label or f"input {mi.name!r}"
            feeds[mi.name] = check_input(mi, np.require(sample[mi.name], requirements="C"), source)
        elif rng is not None:
            feeds[mi.name] = random_input(mi, rng, where)
        else:
            within = f" in {label}" if label else ""
            raise ConfigError(f"{where}: input {mi.name!r} ({mi.describe()}) has no data{within}; give it, or a seed "
                              "for random data")
    return feeds


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


MAX_RANDOM_BYTES = 1 << 31  # random data for one input; more is a model's hostile or mistaken dims, not a test


def _random_shape(mi: ModelInput, where: str | None = None) -> tuple[int, ...]:
    """The shape of `mi`'s random data (free dims 1); ConfigError naming the input and its size when the data would
    take more than MAX_RANDOM_BYTES (NumPy draws float64 first: twice or more that much memory)."""
    shape = tuple(d if isinstance(d, int) else 1 for d in (mi.shape or ()))
    nbytes = math.prod(shape) * max(mi.dtype.itemsize, 1)
    if nbytes > MAX_RANDOM_BYTES:
        raise ConfigError(f"{where + ': ' if where else ''}input {mi.name!r} ({mi.describe()}) would take {nbytes} "
                          f"bytes of random data, more than dumpcmp generates ({MAX_RANDOM_BYTES}); give its data "
                          "in a file, or --shape for its free dims")
    return shape


def random_input(mi: ModelInput, rng: np.random.Generator, where: str | None = None) -> np.ndarray:
    """Random data for an input: free dims are 1; floats standard normal, integers uniform in [0, 10), booleans
    fair coin flips. ConfigError naming the input (and `where`, the model) and its size past MAX_RANDOM_BYTES,
    before anything is allocated."""
    shape = _random_shape(mi, where)
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


def with_free_dims_hint(error: DumpcmpError, plans: Sequence[InputPlan]) -> DumpcmpError:
    """`error` with a hint to give --shape when a run failed and random inputs had free dimensions set to 1."""
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
            _random_shape(plan.input, where)  # refused before any sample is read
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

