"""Two `.npy` files compared whole, as the original tool's `msaccucmp file_compare -m MY -g GOLDEN -out DIR` does:
eight of its metrics (no KullbackLeiblerDivergence, no StandardDeviation), the arrays flattened and compared as
float32 (two bool arrays as bool: cosine similarity only), its messages, and its result file
``file_result_{YYYYmmddHHMMSS}.txt`` of ``Name: value`` lines.

    >>> r = compare_files("my.npy", "golden.npy")
    >>> r.values, r.messages, r.text()
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from dumpcmp.comparison.metrics import METRICS, compare_arrays
from dumpcmp.comparison.rows import column_note, metric_notes
from dumpcmp.errors import ConfigError, DumpError
from dumpcmp.support.lazy_numpy import np

__all__ = ["FILE_METRICS", "FileCompareResult", "compare_files", "result_file_name"]

#: the metrics file_compare computes, in its order
FILE_METRICS = (0, 1, 2, 3, 6, 7, 8, 9)


@dataclass(frozen=True)
class FileCompareResult:
    my_output: str
    ground_truth: str
    names: tuple[str, ...]
    values: tuple[str, ...]
    """The cell texts, as the original prints them."""
    messages: tuple[str, ...]

    def text(self) -> str:
        """The result file: one `Name: value` line per metric."""
        return "".join(f"{n}: {v}\n" for n, v in zip(self.names, self.values))

    def console(self) -> list[str]:
        """What the original prints: the names and the values aligned under them, and its messages (a Python
        list) when there are any."""
        title = line = ""
        for name, value in zip(self.names, self.values):
            width = max(len(title), len(line))
            title, line = title.ljust(width) + name + " ", line.ljust(width) + value + " "
        return [title, line] + ([str(list(self.messages))] if self.messages else [])


def result_file_name(when: float | None = None) -> str:
    import time

    return "file_result_%s.txt" % time.strftime("%Y%m%d%H%M%S", time.localtime(when))


def _load(path: str) -> np.ndarray:
    from dumpcmp.dumps.ground_truth import load_npy

    if not path.endswith(".npy"):
        raise ConfigError(f"[file_compare] The file {path!r} is invalid. Only .npy files are supported.")
    if not os.path.isfile(path):
        raise DumpError(f"{path}: no such file")
    return load_npy(path)


def compare_files(my_output: str | os.PathLike[str], ground_truth: str | os.PathLike[str], *,
                  threads: int = 0) -> FileCompareResult:
    """Compare two .npy files of the same shape; DumpError/ConfigError naming the file when one cannot be."""
    mine_path, truth_path = os.path.realpath(my_output), os.path.realpath(ground_truth)
    x, y = _load(os.fspath(my_output)), _load(os.fspath(ground_truth))
    if x.shape != y.shape:
        raise DumpError(f"My output shape {x.shape} in {mine_path!r} does not match the ground truth shape "
                        f"{y.shape} in {truth_path!r}.")
    for path, a in ((mine_path, x), (truth_path, y)):
        if a.dtype.kind not in "biuf" and a.dtype.name != "bfloat16":
            raise DumpError(f"{path}: {a.dtype} values cannot be compared")
    dims = [int(d) for d in x.shape]
    scalar = sum(dims) == len(dims)  # every axis 1: the original's "scalar"
    boolean = x.dtype == np.bool_ and y.dtype == np.bool_
    res = compare_arrays(np.ascontiguousarray(x).reshape(-1), np.ascontiguousarray(y).reshape(-1),
                         metrics=FILE_METRICS, threads=threads, scalar=scalar)
    notes = metric_notes(res, FILE_METRICS, (scalar, boolean, mine_path, truth_path))
    values = tuple("NaN" if boolean and i != 0 else res.format(i) for i in FILE_METRICS)
    messages = tuple(m for m in (column_note(notes, i) for i in FILE_METRICS) if m)
    return FileCompareResult(mine_path, truth_path, tuple(METRICS[i] for i in FILE_METRICS), values, messages)
