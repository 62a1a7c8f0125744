"""onnxruntime for every stage that runs a model: `require_onnx` (the optional extra, with the message saying how to
install it), and `Runner`, which creates sessions of a model with a chosen set of extra graph outputs and runs them.

In: a loaded ModelProto (its path for messages and external weights) and input arrays. Out: the values of the
outputs asked for. Sessions run with every graph optimisation off, so each exposed value is its ONNX node's own
result whatever else is exposed; models with external weights read them from the model's folder
(`session.model_external_initializers_file_folder_path`, onnxruntime >= 1.21; older versions load a temporary copy of
the graph written beside the model).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from dumpcmp.errors import ConfigError, DumpcmpError
from dumpcmp.support.files import create_temp_file, discard, interrupted_by, signals_deferred
from dumpcmp.support.lazy_numpy import np

__all__ = ["Runner", "require_onnx"]


def require_onnx() -> tuple[Any, Any]:
    """The `onnx` and `onnxruntime` modules; DumpcmpError saying how to install them when they are missing."""
    try:
        # a signal's exception raised inside onnx's or onnxruntime's extension initialisation crashes the process
        # (SIGSEGV in onnx_cpp2py_export's module creation, seen 1 in ~60 interrupts of a starting simulate): the
        # first import runs with signals deferred, which then take effect as soon as it is done
        with contextlib.nullcontext() if "onnxruntime" in sys.modules else signals_deferred():
            import onnx
            import onnxruntime
    except ImportError as error:
        if interrupted_by(error) is not None:
            raise  # an import cut by Ctrl-C or SIGTERM: the command's interrupt, not a missing extra
        raise DumpcmpError(f"ground truth from ONNX needs the onnx extra ({error.name or error} is missing): "
                           "pip install 'dumpcmp[onnx]'") from error
    return onnx, onnxruntime


def _ort_version(ort: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", ort.__version__)[:2])


class Runner:
    """Creates onnxruntime sessions for the model with a chosen set of extra graph outputs."""

    def __init__(self, model: Any, model_path: Path, external: bool, strategy: str | None = None) -> None:
        _, ort = require_onnx()
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

