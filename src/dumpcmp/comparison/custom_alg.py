"""The original tool's custom algorithms: `compare -c DIR -alg Name[,0,...] [-a "Name:key=value,...;..."]`.

A plug-in is a file ``DIR/algorithm/alg_{Name}.py`` defining ``compare(my_output, ground_truth, args) -> (str, str)``
(the cell's text and a message, "" for none). It is called once per compared tensor pair with both tensors whole,
flattened, as float32 in the compared order (the device tensor converted to the ground truth's layout and shape,
exactly the values the built-in metrics read); `args` carries the options `-a` gives the algorithm (strings) and
``my_output_dump_file``, ``ground_truth_dump_file`` and ``shape_type`` (`ShapeType.Scalar` when every axis is 1,
else `ShapeType.Tensor`). `args.get()` returns them as a dict.

As the original: `-alg` takes built-in indices (0-9), built-in names and plug-in names, separated by commas, in the
order of the result file's columns; "all" is the ten built-ins; an unknown name is left out with a warning, and
nothing left is an error. A plug-in named as a built-in replaces it. A plug-in that raises, or returns anything but
two strings, gets `NaN` in its cell and "Failed to execute 'compare' in 'Name'. ..." in CompareFailReason; a bool
tensor pair gets `NaN` and "Algorithm Name does not support Boolean types." One plug-in or operator never stops
the run.

Streaming metric plug-ins (`dumpcmp.comparison.metric_plugin`) share these columns: `-alg plugin:Name` (or a name
neither a built-in nor a custom algorithm) adds the plug-in's column(s) where it stands in `-alg`; their cells are
kept as a custom algorithm's, and a failing one writes its reason into CompareFailReason at its first column.
"""

from __future__ import annotations

import enum
import os
import re
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from dumpcmp.comparison.metric_plugin import MetricPlugin, available_metrics, load_metric, plugin_name
from dumpcmp.comparison.metrics import METRICS, METRIC_INDEX
from dumpcmp.comparison.rows import column_note
from dumpcmp.errors import ConfigError
from dumpcmp.support.lazy_numpy import np
from dumpcmp.support.plugins import import_user_file

__all__ = ["AlgorithmParameter", "CustomAlgorithms", "ShapeType", "parse_algorithm_options", "ALGORITHM_DIR"]

#: the folder under `-c DIR` holding the plug-ins (format converters are in DIR/format_convert)
ALGORITHM_DIR = "algorithm"
_FILE = re.compile(r"^alg_([A-Za-z0-9_]+)\.py$")
_INDEX = re.compile(r"^[0-9]$")
#: the built-ins the original computes on a bool pair
_BOOL_OK = ("CosineSimilarity", "RelativeEuclideanDistance")
_NAN = "NaN"


class ShapeType(enum.Enum):
    """`args.shape_type`: the original's values."""

    Scalar = 0
    Vector = 1
    Matrix = 2
    Tensor = 3


class AlgorithmParameter:
    """The `args` a plug-in gets: its options and the pair's files as attributes; `get()` gives them as a dict."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def get(self) -> dict[str, Any]:
        return self.__dict__

    get_dict = get


def _bad_option(text: str) -> ConfigError:
    return ConfigError(f'-a: the algorithm argument ({text!r}) is invalid, just supports '
                       f'"algorithm_name:name1=value1,name2=value2;"')


def parse_algorithm_options(text: str | None) -> dict[str, dict[str, str]]:
    """`-a "Name:key=value,key=value;Other:key=value"` -> {Name: {key: value}}; a built-in index names the built-in.
    Options of one name given twice are merged."""
    out: dict[str, dict[str, str]] = {}
    for part in (text or "").split(";"):
        if not part:
            continue
        head = part.split(":")
        if len(head) != 2 or not head[0].strip():
            raise _bad_option(part)
        name = head[0].strip()
        if _INDEX.match(name):
            name = METRICS[int(name)]
        params: dict[str, str] = {}
        for item in head[1].split(","):
            if not item.strip():
                continue
            kv = item.split("=")
            if len(kv) != 2 or not kv[0].strip() or not kv[1].strip():
                raise _bad_option(part)
            params[kv[0].strip()] = kv[1].strip()
        out.setdefault(name, {}).update(params)
    return out


def _shape_type(shape: Sequence[int] | None) -> ShapeType:
    dims = [int(d) for d in shape or ()]
    return ShapeType.Scalar if sum(dims) == len(dims) else ShapeType.Tensor


class CustomAlgorithms:
    """The result file's metric columns when plug-ins are in play: `plan` holds, in column order, a built-in's
    index or a plug-in's name. `run` computes a compared row's plug-in cells (and its CompareFailReason in the
    original's order); `cells` gives a row's metric cells."""

    def __init__(self, script_dir: str | os.PathLike[str] | None, selection: str | Sequence[Any] | None,
                 options: str | None = None, metric_roots: Sequence[str | os.PathLike[str]] = (),
                 metric_classes: dict[str, type] | None = None) -> None:
        """`script_dir` None: no custom algorithms, only the built-ins and metric plug-ins in `selection`'s order (an
        unknown name is an error then, as nothing could define it). Metric plug-ins come from `script_dir`'s and
        `metric_roots`' metric/ folders, the installed entry points, and `metric_classes` (name -> class)."""
        self.root = Path(script_dir) if script_dir is not None else None
        if self.root is not None and not self.root.is_dir():
            raise ConfigError(f"-c {self.root}: not a folder (it should hold {ALGORITHM_DIR}/alg_{{Name}}.py)")
        self.warnings: list[str] = []
        self.files = self._find() if self.root is not None else {}
        self.options = parse_algorithm_options(options)
        self.metric_roots = [Path(r) for r in ([self.root] if self.root is not None else []) + list(metric_roots)]
        self.metric_classes = dict(metric_classes or {})
        self.plugins: dict[str, MetricPlugin] = {}
        names = self._select(selection)
        self.functions: dict[str, Callable[..., Any]] = {}
        plan: list[int | str] = []
        for name in names:
            if name in self.plugins:
                for column in self.plugins[name].columns:
                    if column in METRIC_INDEX or column in plan or column in self.files:
                        raise ConfigError(f"metric plug-in {name} ({self.plugins[name].origin}): its column "
                                          f"{column!r} is already a column of the result; name it otherwise")
                    plan.append(column)
            elif name in self.files:
                fn = self._load(name)
                if fn is not None:
                    self.functions[name] = fn
                    plan.append(name)
            else:
                plan.append(METRIC_INDEX[name])
        if not plan:
            raise ConfigError(f"-alg: no algorithm of {list(names)} can be used (see the warnings); built-in: "
                              f"{list(METRICS.values())}, in {self.root}/{ALGORITHM_DIR}: {sorted(self.files)}")
        self.plan: tuple[int | str, ...] = tuple(plan)
        self._cells: dict[int, dict[str, str]] = {}

    # ---- loading --------------------------------------------------------------------------------------------
    def _find(self) -> dict[str, Path]:
        assert self.root is not None
        folder = self.root / ALGORITHM_DIR
        if not folder.is_dir():
            self.warnings.append(f"there is no '{ALGORITHM_DIR}' folder in {self.root}: no custom algorithm")
            return {}
        found: dict[str, Path] = {}
        for path in sorted(folder.iterdir()):
            if not path.is_file() or path.suffix == ".pyc" or path.name == "__init__.py":
                continue
            m = _FILE.match(path.name)
            if m is None:
                self.warnings.append(f"{path}: does not match 'alg_{{algorithm_name}}.py', left out")
                continue
            mode = path.stat().st_mode
            if mode & stat.S_IWOTH:
                raise ConfigError(f"{path}: others may write to it; remove that permission (chmod o-w) to use it")
            if mode & stat.S_IWGRP:
                self.warnings.append(f"{path}: the group may write to it")
            found[m.group(1)] = path
        if not found:
            self.warnings.append(f"there is no alg_{{algorithm_name}}.py file in {folder}")
        return found

    def _select(self, selection: str | Sequence[Any] | None) -> list[str]:
        text = "all" if selection is None else (
            selection if isinstance(selection, str) else ",".join(str(s) for s in selection))
        if text.strip().lower() == "all":
            return list(METRICS.values())
        chosen: list[str] = []
        for item in (s.strip() for s in text.split(",")):
            if not item:
                continue
            name = METRICS[int(item)] if _INDEX.match(item) else item
            explicit = plugin_name(item)
            if explicit is not None or (name not in METRIC_INDEX and name not in self.files):
                plugin = self._plugin(explicit if explicit is not None else name, explicit is not None)
                if plugin is not None:
                    if plugin.name not in chosen:
                        chosen.append(plugin.name)
                    continue
                if self.root is None:
                    raise ConfigError(f"-alg: {item!r} is not one of the built-in metrics "
                                      f"({', '.join(f'{i}={n}' for i, n in METRICS.items())}); custom algorithms "
                                      f"need -c DIR")
                self.warnings.append(f"-alg: '{item}' is neither a built-in algorithm nor a file "
                                     f"alg_{item}.py in {self.root}/{ALGORITHM_DIR}: left out")
                continue
            if name not in chosen:
                chosen.append(name)
        if not chosen:
            raise ConfigError(f"-alg {text!r}: no algorithm it names exists; built-in: {list(METRICS.values())} "
                              f"(or 0-9), in {self.root}/{ALGORITHM_DIR}: {sorted(self.files)}")
        return chosen

    def _plugin(self, name: str, explicit: bool) -> MetricPlugin | None:
        """The metric plug-in `name`, loaded once (None: there is none of that name; `explicit` (-alg plugin:Name):
        an error then)."""
        if name not in self.plugins:
            found = load_metric(name, self.metric_roots, self.options.get(name), self.metric_classes.get(name))
            if found is None:
                if explicit:
                    raise ConfigError(f"-alg plugin:{name}: no metric plug-in of that name; available: "
                                      f"{sorted(set(available_metrics(self.metric_roots)) | set(self.metric_classes))}"
                                      f" (files {{DIR}}/metric/metric_{{Name}}.py under -c/-custom DIR, or entry "
                                      f"points of the group dumpcmp.metrics)")
                return None
            self.plugins[name] = found
        return self.plugins[name]

    def _load(self, name: str) -> Callable[..., Any] | None:
        assert self.root is not None
        path = self.files[name]
        added = str(self.root) not in sys.path
        if added:  # as the original: the plug-in may import its neighbours from DIR
            sys.path.append(str(self.root))
        try:
            module = import_user_file(path, "dumpcmp_alg", "custom algorithm")
        finally:
            if added and str(self.root) in sys.path:
                sys.path.remove(str(self.root))
        fn = getattr(module, "compare", None)
        if fn is None:
            self.warnings.append(f"{path}: has no function 'compare', left out")
            return None
        if not callable(fn):
            self.warnings.append(f"{path}: 'compare' is not a function, left out")
            return None
        argc = getattr(getattr(fn, "__code__", None), "co_argcount", None)
        if argc != 3:
            self.warnings.append(f"{path}: compare takes {argc} arguments, not 3 "
                                 f"(my_output, ground_truth, args), left out")
            return None
        return fn

    # ---- columns ----------------------------------------------------------------------------------------------
    @property
    def builtin(self) -> tuple[int, ...]:
        """The built-in metrics the columns show, in index order (the engine computes these)."""
        return tuple(sorted(i for i in self.plan if isinstance(i, int)))

    def names(self) -> list[str]:
        return [METRICS[c] if isinstance(c, int) else c for c in self.plan]

    def cells(self, row: Any, builtin_cell: Callable[[Any, int], str]) -> list[str]:
        mine = self._cells.get(id(row), {})
        return [builtin_cell(row, c) if isinstance(c, int) else mine.get(c, _NAN) for c in self.plan]

    def values(self, row: Any) -> dict[str, Any]:
        """A row's custom columns for `ComparisonResult.to_records`: a custom algorithm's text, a metric plug-in's
        number (NaN where it has none)."""
        mine = self._cells.get(id(row), {})
        plugin_columns = {c for p in self.plugins.values() for c in p.columns}
        out: dict[str, Any] = {}
        for c in self.plan:
            if isinstance(c, str):
                text = mine.get(c, _NAN)
                out[c] = (float(text) if text != _NAN else float("nan")) if c in plugin_columns else text
        return out

    # ---- a compared row ---------------------------------------------------------------------------------------
    def _call(self, name: str, x: Any, y: Any, args: dict[str, Any]) -> tuple[str, str]:
        values = dict(self.options.get(name, {}), **args)
        try:
            with np.errstate(divide="ignore", invalid="ignore"):  # as the original sets NumPy before calling
                value, message = self.functions[name](x, y, AlgorithmParameter(values))
            for v in (value, message):
                if not isinstance(v, str):
                    # the original's own words, ending in the name of the function ('compare')
                    return _NAN, f"Failed to execute 'compare' in '{name}'. compare"
        except (Exception, SystemExit) as error:  # the user's code may raise anything (exit too): its cell says why
            return _NAN, f"Failed to execute 'compare' in '{name}'. {error}"
        return value, message

    def run_row(self, row: Any, x: Any, y: Any, res: Any, algos: Sequence[int], ctx: tuple[bool, bool, str, str],
                threads: int = 0) -> None:
        """`run` on a row the engine compared: `x`, `y` its engine sources, `res` its MetricResult, `ctx` as
        `dumpcmp.comparison.rows.finish_row` takes it."""
        from dumpcmp.comparison.detail import compared_values
        from dumpcmp.comparison.rows import metric_notes

        self.run(row, lambda: compared_values(x, y, [int(x.count)], None, threads), metric_notes(res, algos, ctx),
                 ctx[1], (ctx[2], ctx[3]), (x, y, threads))

    def run(self, row: Any, values: Callable[[], tuple[Any, Any]], notes: dict[int | str, str],
            boolean: bool, paths: tuple[str, str], sources: tuple[Any, Any, int] | None = None) -> None:
        """Call each plug-in on a compared row; `values()` reads both sides (float32, flat); `notes` are the
        built-ins' messages by metric index ("scalar": the scalar note, `dumpcmp.comparison.rows.metric_notes`);
        `sources`: the pair's engine sources and threads, for the metric plug-ins' windows.
        Sets the row's CompareFailReason in column order."""
        cells: dict[str, str] = {}
        messages: dict[str, str] = {}
        for plugin in self.plugins.values():
            found = plugin.compute(*sources) if sources is not None else \
                plugin.failed("the engine's windows of this pair are not available here")
            cells.update(zip(plugin.columns, found[0]))
            messages[plugin.columns[0]] = found[1]
        names = [c for c in self.plan if isinstance(c, str) and c in self.functions]
        if boolean:
            for name in names:
                cells[name], messages[name] = _NAN, f"Algorithm {name} does not support Boolean types."
        elif names:
            try:
                x, y = values()
            except Exception as error:  # reading the pair failed after the engine read it: say so in the cells
                x = y = None
                for name in names:
                    cells[name], messages[name] = _NAN, f"Failed to execute 'compare' in '{name}'. {error}"
            if x is not None:
                args = {"my_output_dump_file": paths[0], "ground_truth_dump_file": paths[1],
                        "shape_type": _shape_type(row.shape)}
                for name in names:
                    cells[name], messages[name] = self._call(name, x, y, args)
        self._cells[id(row)] = cells
        parts = [column_note(notes, c) if isinstance(c, int) else messages.get(c, "") for c in self.plan]
        row.fail_reason = ",".join(p for p in parts if p)
