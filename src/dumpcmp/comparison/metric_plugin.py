"""Streaming metric plug-ins: a user's metric run on the engine's float32 windows, never on whole tensors.

A plug-in is a class (docs/compare.md#metric-plug-ins)::

    class SumSquares:
        columns = ("SumSquares",)              # its column(s) in every output; default (Name,)
        def setup(self, options): ...          # optional: the `-a Name:key=value,...` options (str -> str)
        def update(self, device, truth): ...   # two 1-D float32 windows of one length, in the compared order
        def merge(self, other): ...            # fold in another instance (the windows after this one's)
        def result(self): ...                  # a float, or a tuple of floats (one per column)

registered by the entry point group ``dumpcmp.metrics`` (name = the plug-in's name, value ``module:Class``) or as a
file ``DIR/metric/metric_{Name}.py`` defining a class ``Name`` (or ``Metric``) under ``-c DIR`` or ``-custom DIR``;
selected with ``-alg plugin:Name`` (or ``-alg Name``). Each window of `ENGINE_WINDOW` elements (the last one shorter)
gets an instance of its own, `update` once; the instances are merged in window order into a fresh one, whose `result`
is the cell: the same result on any number of threads. The engine decodes the windows on its threads; Python is
called on the comparing thread only, in window order (`core.compare.float32_windows`). A plug-in that fails (a bad
class, an exception, a wrong result) gets ``NaN`` in its cells and the reason in the row's CompareFailReason; it
never stops the run.
"""

from __future__ import annotations

import math
import numbers
import re
import stat
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from dumpcmp.errors import ConfigError
from dumpcmp.support.native import core
from dumpcmp.support.plugins import import_user_file

__all__ = ["ENGINE_WINDOW", "ENTRY_POINT_GROUP", "METRIC_DIR", "PLUGIN_PREFIX", "MetricPlugin", "available_metrics",
           "load_metric", "plugin_name"]

#: the folder under `-c DIR` / `-custom DIR` holding the plug-in files
METRIC_DIR = "metric"
#: the importlib.metadata entry point group of installed plug-ins
ENTRY_POINT_GROUP = "dumpcmp.metrics"
#: `-alg plugin:Name` names a plug-in explicitly
PLUGIN_PREFIX = "plugin:"
#: elements per window: the engine's (dumpcmp.comparison.metrics.DEFAULT_CHUNK_ELEMENTS)
ENGINE_WINDOW = 1 << 16
_FILE = re.compile(r"^metric_([A-Za-z0-9_]+)\.py$")
_NAN = "NaN"


def plugin_name(item: str) -> str | None:
    """The plug-in name an `-alg` item gives explicitly (`plugin:Name`), else None."""
    return item[len(PLUGIN_PREFIX):].strip() if item.startswith(PLUGIN_PREFIX) else None


def _files(roots: Sequence[str | Path]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in roots:
        folder = Path(root) / METRIC_DIR
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            m = _FILE.match(path.name)
            if m is None or not path.is_file():
                continue
            if path.stat().st_mode & stat.S_IWOTH:
                raise ConfigError(f"{path}: others may write to it; remove that permission (chmod o-w) to use it")
            found.setdefault(m.group(1), path)
    return found


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_metrics(roots: Sequence[str | Path] = ()) -> list[str]:
    """The plug-in names `roots`' metric/ folders and the installed entry points give (files first on a clash)."""
    return sorted(set(_files(roots)) | set(_entry_points()))


def load_metric(name: str, roots: Sequence[str | Path] = (), options: Mapping[str, str] | None = None,
                cls: type | None = None) -> MetricPlugin | None:
    """The plug-in `name` (`cls` given: that class), from `roots`' metric/metric_{name}.py or an entry point; None
    when neither has it. A file or entry point that cannot be imported: ConfigError naming it."""
    if cls is not None:
        return MetricPlugin(name, cls, options, f"class {getattr(cls, '__qualname__', cls)!s}")
    path = _files(roots).get(name)
    if path is not None:
        added = [str(r) for r in roots if str(r) not in sys.path]
        sys.path.extend(added)  # as the custom algorithms: the file may import its neighbours from DIR
        try:
            module = import_user_file(path, "dumpcmp_metric", "metric plug-in")
        finally:
            for r in added:
                if r in sys.path:
                    sys.path.remove(r)
        found = getattr(module, name, None)
        if found is None:
            found = getattr(module, "Metric", None)
        return MetricPlugin(name, found, options, str(path))
    ep = _entry_points().get(name)
    if ep is None:
        return None
    try:
        found = ep.load()
    except Exception as error:  # the installed package may raise anything while importing
        raise ConfigError(f"entry point {ENTRY_POINT_GROUP}:{name} ({ep.value}): cannot import the metric plug-in: "
                          f"{type(error).__name__}: {error}") from error
    return MetricPlugin(name, found, options, f"entry point {ENTRY_POINT_GROUP}:{name} ({ep.value})")


class _Stop(BaseException):
    """Raised out of a window's callback once the plug-in failed: the engine stops reading windows (a BaseException,
    so no `except Exception` of the plug-in's own can be what catches it)."""


class MetricPlugin:
    """One plug-in, checked: `columns` its column names; `compute(x, y, threads)` its cells on a pair of engine
    sources. A class that does not follow the contract still has its column(s) (`problem` says why they are NaN)."""

    def __init__(self, name: str, cls: Any, options: Mapping[str, str] | None, origin: str) -> None:
        self.name, self.cls, self.origin = name, cls, origin
        self.options = dict(options or {})
        self.problem = ""
        columns = getattr(cls, "columns", (name,)) if cls is not None else (name,)
        if isinstance(columns, str):
            columns = (columns,)
        if not isinstance(columns, (tuple, list)) or not columns or \
                not all(isinstance(c, str) and c.strip() and c.isprintable() and not set(c) & set(',"')
                        for c in columns):
            self.problem = f"'columns' of {name} is not a tuple of column names ({columns!r})"
            columns = (name,)
        self.columns: tuple[str, ...] = tuple(c.strip() for c in columns)
        if len(set(self.columns)) != len(self.columns):
            raise ConfigError(f"metric plug-in {name} ({origin}): its columns {list(self.columns)} repeat a name")
        if cls is None:
            self.problem = f"{origin} defines no class '{name}' (nor 'Metric')"
        elif not isinstance(cls, type):
            self.problem = f"{name} is not a class"
        else:
            missing = [m for m in ("update", "merge", "result") if not callable(getattr(cls, m, None))]
            if missing:
                self.problem = f"{name} has no method {', '.join(missing)}"

    def failed(self, reason: str) -> tuple[list[str], str]:
        """NaN in every column, and the reason for CompareFailReason."""
        return [_NAN] * len(self.columns), f"Metric plug-in {self.name}: {' '.join(reason.split())}"

    def _new(self) -> Any:
        instance = self.cls()
        setup = getattr(instance, "setup", None)
        if setup is not None:
            setup(dict(self.options))
        return instance

    def _cells(self, value: Any) -> list[str]:
        values = value if isinstance(value, tuple) else (value,)
        if len(values) != len(self.columns):
            raise TypeError(f"result() gave {len(values)} value(s) for {len(self.columns)} column(s)")
        cells = []
        for v in values:
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"result() gave {type(v).__name__} {v!r}, not a float")
            f = float(v)
            cells.append(_NAN if math.isnan(f) else ("inf" if f == math.inf else "-inf" if f == -math.inf else
                                                      f"{f:.6f}"))
        return cells

    def compute(self, x: Any, y: Any, threads: int = 0) -> tuple[list[str], str]:
        """The plug-in on two engine sources (`core.compare.TensorSource`, the compared order): its cells (one per
        column) and a message ("" when it ran)."""
        if self.problem:
            return self.failed(self.problem)
        try:
            total = self._new()
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM (files.Terminated): the run ends
            raise
        except BaseException as error:  # the user's code may raise anything
            return self.failed(f"{type(error).__name__}: {error}")
        state: dict[str, Any] = {"next": 0, "error": None}

        def window(k: int, dev: Any, truth: Any) -> None:
            if k != state["next"]:  # the engine hands the windows over in order: a wrong one is its bug
                raise AssertionError(f"window {k} handed over after {state['next'] - 1}")
            try:
                instance = self._new()
                instance.update(dev, truth)
                total.merge(instance)
            except KeyboardInterrupt:  # Ctrl-C, SIGTERM (files.Terminated): the run ends
                raise
            except BaseException as error:  # the user's code may raise anything: its cells say why
                state["error"] = error
                raise _Stop from None
            state["next"] = k + 1

        try:  # Ctrl-C (KeyboardInterrupt, files.Terminated) passes through the engine as it is
            core.compare.float32_windows(x, y, window, threads, ENGINE_WINDOW)
        except _Stop:
            error = state["error"]
            return self.failed(f"{type(error).__name__}: {error}")
        except (RuntimeError, ValueError, OSError) as error:  # the engine's own: a side it could not read
            return self.failed(str(error))
        try:
            return self._cells(total.result()), ""
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM (files.Terminated): the run ends
            raise
        except BaseException as error:
            return self.failed(f"{type(error).__name__}: {error}")
