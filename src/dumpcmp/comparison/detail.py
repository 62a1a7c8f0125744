"""Single-operator detail: every element of one compared tensor pair, as the original tool's CSV files or .npy columns.

`export_detail` takes the two resolved sides (TensorSources in the compared order: the plain NCHW/NCDHW order, a
device layout decoded through the source's plan) and writes, in `out_dir`, for the tensor ``{op}_{kind}_{index}``:

- ``{op}_{kind}_{index}_{file_index}.csv`` from file index 0, at most `max_lines` data rows each, header
  ``Index,N C H W,NPUDump,GroundTruth,AbsoluteError,RelativeError``: the flat index in the compared order, the
  coordinates space-separated (padded to 4-D with trailing 1s, so the padded axes read 0; a shape of more than 4
  axes gets one coordinate per axis and a header naming them, ``N C D H W`` for NCDHW, else ``D0 D1 ...``), the
  float32 values both sides were decoded to, |x - y| and |x - y| / |y| (``-`` where the ground truth is 0, NaN or
  inf). Numbers print like ``%.6f``; NaN as ``NaN`` and infinities as ``inf``/``-inf``, as the metrics do. Both
  errors are evaluated in double from the float32 values.
- ``{op}_{kind}_{index}_summary.txt`` with exactly the spec's eight lines. Min/max absolute error are over all
  elements, min/max relative error over the elements where it is defined; both NaN-propagating like ``np.max``
  (one NaN error makes them ``NaN``), ``NaN`` when there is no element to take them over.
- ``{op}_{kind}_{index}_top.csv`` (when `top_n` > 0): the `top_n` largest absolute errors, then the `top_n`
  largest relative errors, with columns ``TopBy,Rank,Index,<coordinates>,NPUDump,GroundTruth,AbsoluteError,
  RelativeError``. NaN ranks above every number (an element that became NaN is the worst error); equal errors go
  to the lower flat index. Only elements with a defined relative error enter the relative list.
- with ``fmt="npy"``, instead of the CSV files, one .npy file per column, all of n rows:
  ``_index.npy`` int64, ``_coordinates.npy`` int32 (n, axes) (int64 if an axis exceeds 2**31 - 1; axes padded to 4
  as in CSV), ``_npu.npy``, ``_ground_truth.npy``, ``_abs_error.npy``, ``_rel_error.npy`` float32, the relative
  error NaN where undefined.

Op names have ``/`` replaced by ``_``; a file name of 255 characters (or UTF-8 bytes) or more becomes a digits-only
hash plus its extension, with a ``{hash},{original file name}`` row in the folder's mapping.csv (dumpcmp.dumps.naming).
Existing files are not replaced unless ``force=True``. Files are written under temporary names and renamed when all
are complete: an error or Ctrl-C leaves none behind. The C++ core formats the rows, several blocks in parallel,
a block of rows per thread in memory at a time.

    >>> x = core.compare.source_from_dump(dump._file, "output", 0, dst_format="NCHW", dst_shape=shape)
    >>> result = export_detail(x, y, shape, "out", op_name="conv1", ground_truth_name="conv1")
    >>> print(format_top_table(result))
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dumpcmp.support import files as _io
from dumpcmp.dumps import naming
from dumpcmp.support.files import atomic_write, atomic_write_text, exists_error
from dumpcmp.support.native import core
from dumpcmp.errors import ConfigError, DumpcmpError

__all__ = [
    "DEFAULT_MAX_LINES", "DEFAULT_TOP_N", "NPY_COLUMNS", "DetailResult", "TopError", "coordinate_header",
    "detail_prefix", "export_detail", "format_top_table", "padded_shape", "compared_values",
]

#: Data rows per CSV file, as the original tool writes them.
DEFAULT_MAX_LINES = 1_000_000
#: Entries of each top list.
DEFAULT_TOP_N = 20
#: Elements up to which the original tool's top-N files and device-tensor .npy are written: they need both tensors
#: and their errors in memory (about 40 bytes an element), where the detail CSV streams.
ORIGINAL_EXTRAS_LIMIT = 1 << 24
#: The .npy columns, in file-name form, in the order the core writes them.
NPY_COLUMNS = ("index", "coordinates", "npu", "ground_truth", "abs_error", "rel_error")
_KINDS = ("input", "output")


@dataclass(frozen=True)
class TopError:
    """One element of a top list."""

    index: int                      # flat index in the compared order
    coordinates: tuple[int, ...]    # over the padded shape, as in the detail files
    npu: float
    ground_truth: float
    abs_error: float
    rel_error: float | None         # None where undefined (ground truth 0, NaN or inf)


@dataclass(frozen=True)
class DetailResult:
    """What `export_detail` found and wrote."""

    total_count: int
    min_abs_error: float
    max_abs_error: float
    min_rel_error: float
    max_rel_error: float
    rel_count: int                  # elements with a defined relative error
    top_abs: tuple[TopError, ...]
    top_rel: tuple[TopError, ...]
    detail_files: tuple[str, ...]   # CSV files in row order, or the .npy columns in NPY_COLUMNS order
    summary_path: str
    top_path: str | None
    coordinate_header: str
    format: str
    notes: tuple[str, ...] = ()     # what was left out, and why

    @property
    def files(self) -> tuple[str, ...]:
        """Every file written."""
        return self.detail_files + (self.summary_path,) + ((self.top_path,) if self.top_path else ())


def detail_prefix(op_name: str, kind: str = "output", index: int = 0) -> str:
    """``{op}_{input|output}_{index}`` with ``/`` in the op name replaced by ``_`` (the spec's file-name rule)."""
    if kind not in _KINDS:
        raise ConfigError(f"a detail tensor is an input or an output, not {kind!r}")
    if "\0" in op_name or op_name == "":
        raise ConfigError(f"op name {op_name!r} cannot name a file")
    if int(index) < 0:
        raise ConfigError(f"tensor index {index} is negative")
    return f"{op_name.replace('/', '_')}_{kind}_{int(index)}"


def padded_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """The shape the coordinates run over: padded with trailing 1s to 4 axes."""
    dims = tuple(int(d) for d in shape)
    return dims + (1,) * (4 - len(dims)) if len(dims) < 4 else dims


def coordinate_header(shape: Sequence[int], layout_name: str = "NCHW") -> str:
    """The coordinate column's title: ``N C H W`` up to 4 axes; beyond, the layout's letters when it names one per
    axis (``N C D H W``), else ``D0 D1 ...``."""
    rank = len(shape)
    if rank <= 4:
        return "N C H W"
    if len(layout_name) == rank and layout_name.isalpha() and len(set(layout_name)) == rank:
        return " ".join(layout_name)
    return " ".join(f"D{a}" for a in range(rank))


def _planned_names(prefix: str, count: int, max_lines: int, fmt: str, top_n: int) -> tuple[list[str], str, str | None]:
    """Original (unhashed) names: detail files, summary, top list."""
    if fmt == "csv":
        files = int(core.detail.file_count(count, max_lines))
        detail = [f"{prefix}_{k}.csv" for k in range(files)]
    else:
        detail = [f"{prefix}_{column}.npy" for column in NPY_COLUMNS]
    return detail, f"{prefix}_summary.txt", (f"{prefix}_top.csv" if top_n > 0 else None)


def _ext(name: str) -> str:
    return os.path.splitext(name)[1]


def export_detail(
    x: core.compare.TensorSource,
    y: core.compare.TensorSource,
    shape: Sequence[int],
    out_dir: str | os.PathLike[str],
    *,
    op_name: str,
    ground_truth_name: str | Sequence[str],
    kind: str = "output",
    index: int = 0,
    layout_name: str = "NCHW",
    max_lines: int = DEFAULT_MAX_LINES,
    top_n: int = DEFAULT_TOP_N,
    fmt: str = "csv",
    threads: int = 0,
    force: bool = False,
    npu_dtype: Any = None,
    format_line: str | None = None,
    npu_summary_name: str | None = None,
    bool_pair: bool = False,
    details: bool = True,
) -> DetailResult:
    """Write the detail of x (NPU dump) against y (ground truth) for op `op_name`'s `kind` tensor `index`.

    `shape` is the compared shape (the coordinates' axes; its product is both sides' element count), `layout_name`
    the summary's Format line; `format_line`, when given, is that line and the coordinate column's title instead
    (the original's `N C H W`, `ID`). `ground_truth_name`: the op name(s) on the ground-truth side, joined by ``,``;
    `npu_summary_name` the summary's NPUDump line (default `op_name`). With `npu_dtype` (the device tensor's NumPy
    dtype) the original tool's other files are written too: the two top-N files and ``{prefix}.npy`` (see
    `write_original_extras`); `bool_pair` writes two bool tensors as the original does. Without `details` (the
    original's `--ignore_single_op_result`) the element-by-element files are left out, the rest is written.
    Raises ConfigError for bad options, an unusable folder or files that exist (without `force`), DumpcmpError for
    a write failure, ValueError for sides that do not match `shape`; nothing is left behind in any of those cases.
    """
    if fmt not in ("csv", "npy"):
        raise ConfigError(f"detail format is 'csv' or 'npy', not {fmt!r}")
    if int(max_lines) < 1:
        raise ConfigError(f"--max-lines must be at least 1, not {max_lines}")
    if int(top_n) < 0:
        raise ConfigError(f"--top-n must be 0 or more, not {top_n}")
    dims = [int(d) for d in shape]
    if x.count != y.count:
        raise ValueError(f"{op_name} {kind} {index}: the NPU dump has {x.count} elements, the ground truth {y.count}")
    if math.prod(dims) != x.count:
        raise ValueError(f"{op_name} {kind} {index}: shape {dims} has {math.prod(dims)} elements, "
                         f"the tensors {x.count}")
    prefix = detail_prefix(op_name, kind, index)
    gt_name = ground_truth_name if isinstance(ground_truth_name, str) else ",".join(ground_truth_name)
    header = coordinate_header(dims, layout_name) if format_line is None else format_line

    folder = os.fspath(out_dir)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise ConfigError(f"output folder {folder} is not a folder")
    created: list[str] = []  # filled as each folder is made, so a signal at any point leaves none behind
    try:
        try:
            _io.make_folder(folder, created)
        except OSError as e:
            raise ConfigError(f"cannot create the output folder {folder}: {e.strerror or e}") from None
        return _export_into(x, y, dims, folder, created, op_name=op_name, kind=kind, index=index, prefix=prefix,
                            gt_name=gt_name, header=header, layout_name=layout_name, max_lines=max_lines,
                            top_n=top_n, fmt=fmt, threads=threads, force=force, npu_dtype=npu_dtype,
                            format_line=format_line, npu_summary_name=npu_summary_name, bool_pair=bool_pair,
                            details=details)
    finally:
        _io.remove_empty(created)  # a folder this export made and left empty (an error, a signal) is removed


def _export_into(x: core.compare.TensorSource, y: core.compare.TensorSource, dims: list[int], folder: str,
                 created: list[str], *,
                 op_name: str, kind: str, index: int, prefix: str, gt_name: str, header: str, layout_name: str,
                 max_lines: int, top_n: int, fmt: str, threads: int, force: bool, npu_dtype: Any,
                 format_line: str | None, npu_summary_name: str | None, bool_pair: bool,
                 details: bool = True) -> DetailResult:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"output folder {folder} is not writable")

    detail_names, summary_name, top_name = _planned_names(prefix, x.count, int(max_lines), fmt, int(top_n))
    originals = detail_names + [summary_name] + ([top_name] if top_name else [])
    on_disk = [naming.planned_file_name(name, _ext(name)) for name in originals]
    paths = [os.path.join(folder, name) for name in on_disk]
    extras = [] if npu_dtype is None or fmt != "csv" else [
        os.path.join(folder, naming.planned_file_name(n, _ext(n))) for n in
        (f"{prefix}_absolute_error_topn.csv", f"{prefix}_relative_error_topn.csv", f"{prefix}.npy")]
    kept = paths if details else paths[len(detail_names):]  # the files this export publishes
    if not force:
        existing = [p for p in kept + extras if os.path.lexists(p)]
        if existing:
            raise exists_error(existing, "detail files")

    n_detail = len(detail_names)
    # The set is written in a private temporary folder and moved into place together: all files or none, never
    # through a planted symlink, and of two exports into one folder the second waits, then finds the names taken.
    with _io.file_set(folder, force=force, what="detail files") as staged:
        tmp = [os.fsencode(staged.path(name)) for name in on_disk]  # bytes: names that are not UTF-8 too
        text = lambda s: s.encode("utf-8", "surrogateescape")  # noqa: E731 - written as the bytes they came from
        try:
            raw = core.detail.export_detail(
                x, y, shape=dims, format=fmt,
                csv_paths=tmp[:n_detail] if fmt == "csv" else [],
                npy_paths=tmp[:n_detail] if fmt == "npy" else None,
                max_rows=int(max_lines), coordinate_header=header,
                summary_path=tmp[n_detail], top_path=tmp[n_detail + 1] if top_name else "",
                top_n=int(top_n), npu_name=text(op_name if npu_summary_name is None else npu_summary_name),
                ground_truth_name=text(gt_name),
                layout_name=text(layout_name if format_line is None else format_line),
                threads=int(threads))
        except core.detail.OutputError as e:
            message = str(e).replace(staged.private, folder)
            raise DumpcmpError(f"detail of {op_name} {kind} {index}: {message}") from None

        notes: list[str] = []
        if npu_dtype is not None and fmt == "csv" and x.count > ORIGINAL_EXTRAS_LIMIT:
            notes.append(f"{x.count} elements: the top-N files and {prefix}.npy are written up to "
                         f"{ORIGINAL_EXTRAS_LIMIT} elements (they hold the tensors in memory); the top lists are in "
                         f"{prefix}_top.csv")
        elif npu_dtype is not None and fmt == "csv":
            # the original tool's other files are part of the set too: published with it, or not at all
            for path in extras:
                staged.path(os.path.basename(path))
            xs, ys = compared_values(x, y, dims, staged.private, int(threads))
            if bool_pair:
                _write_bool_detail(xs, ys, dims, [os.fsdecode(t) for t in tmp[:n_detail]], os.fsdecode(tmp[n_detail]),
                                   header, int(max_lines))
            write_original_extras(xs, ys, dims, staged.private, prefix, header, int(top_n), npu_dtype,
                                  bool_pair=bool_pair)
        if not details:  # computed with the rest (the summary reads the same pass), not published
            for t in tmp[:n_detail]:
                if os.path.lexists(t):
                    os.unlink(t)
        if force and fmt == "csv":
            for name in _stale(folder, prefix, n_detail if details else 0):
                staged.drop(name)

    for original, name in zip(originals, on_disk):
        if name != original:
            naming.safe_file_name(original, folder, suffix=_ext(original))

    padded = padded_shape(dims)

    def entries(rows: list[tuple[int, float, float, float, float | None]]) -> tuple[TopError, ...]:
        return tuple(TopError(i, _unravel(i, padded), npu, gt, ae, re) for i, npu, gt, ae, re in rows)

    return DetailResult(
        total_count=raw["total_count"], min_abs_error=raw["min_abs_error"], max_abs_error=raw["max_abs_error"],
        min_rel_error=raw["min_rel_error"], max_rel_error=raw["max_rel_error"], rel_count=raw["rel_count"],
        top_abs=entries(raw["top_abs"]), top_rel=entries(raw["top_rel"]),
        detail_files=tuple(paths[:n_detail]) if details else (), summary_path=paths[n_detail],
        top_path=paths[n_detail + 1] if top_name else None, coordinate_header=header, format=fmt,
        notes=tuple(notes))


def _stale(folder: str, prefix: str, first_unused: int) -> list[str]:
    """Detail files of an earlier, longer export of the same tensor (removed when the new set is published, so that
    the folder holds one consistent set)."""
    names = []
    k = first_unused
    while True:
        name = naming.planned_file_name(f"{prefix}_{k}.csv", ".csv")
        if not os.path.isfile(os.path.join(folder, name)):
            return names
        names.append(name)
        k += 1


def _unravel(flat: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    coords = []
    for d in reversed(dims):
        flat, c = divmod(flat, d) if d else (0, 0)
        coords.append(c)
    return tuple(reversed(coords))


def format_top_table(result: DetailResult, n: int | None = None) -> str:
    """The top lists as plain aligned text tables for the terminal (at most `n` rows each; None = all)."""
    columns = ("Rank", "Index", result.coordinate_header, "NPUDump", "GroundTruth", "AbsoluteError", "RelativeError")
    blocks = []
    for title, entries in (("absolute", result.top_abs), ("relative", result.top_rel)):
        shown = entries if n is None else entries[:n]
        rows = [columns] + [
            (str(rank), str(e.index), " ".join(map(str, e.coordinates)), core.detail.format_fixed6(e.npu),
             core.detail.format_fixed6(e.ground_truth), core.detail.format_fixed6(e.abs_error),
             "-" if e.rel_error is None else core.detail.format_fixed6(e.rel_error))
            for rank, e in enumerate(shown, 1)]
        widths = [max(len(row[c]) for row in rows) for c in range(len(columns))]
        lines = [f"Top {len(shown)} {title} errors"]
        for r, row in enumerate(rows):
            lines.append("  ".join(cell.rjust(w) for cell, w in zip(row, widths)).rstrip())
            if r == 0:
                lines.append("  ".join("-" * w for w in widths))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


# ---- the original tool's other single-op files ------------------------------------------------------------------

def _python_row(index: int, coords: str, x: Any, y: Any, ae: Any, re: Any) -> str:
    # the original formats the row, then turns every 'nan' and 'inf' into '-' ('-inf' becomes '--')
    line = "%d,%s,%.6f\t,%.6f\t,%.6f\t,%.6f\t\n" % (index, coords, x, y, ae, re)
    return line.replace("nan", "-").replace("inf", "-")


def _finite_or_zero(errors: np.ndarray) -> np.ndarray:
    """What the original ranks by: inf and NaN errors set to NaN in place (as it does), then read as 0."""
    errors[np.isinf(errors)] = np.nan
    return np.nan_to_num(errors)


def compared_values(x: core.compare.TensorSource, y: core.compare.TensorSource, dims: Sequence[int],
                    folder: str | None, threads: int) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' float32 values in the compared order, exactly those of the detail CSV (the core's .npy columns,
    read back). Holds both tensors in memory, as the original does."""
    with tempfile.TemporaryDirectory(prefix=".dumpcmp-", dir=folder) as tmp:
        cols = [os.path.join(tmp, f"{c}.npy") for c in NPY_COLUMNS]
        core.detail.export_detail(x, y, shape=[int(d) for d in dims], format="npy",
                                  npy_paths=[os.fsencode(c) for c in cols], top_n=0,
                                  threads=threads)
        return np.load(cols[2]), np.load(cols[3])


def _bool_row(i: int, coords: str, x: Any, y: Any, last: str) -> str:
    return f"{i},{coords},{bool(x)}\t,{bool(y)}\t,-\t,-{last}\n"


def _write_bool_detail(xs: np.ndarray, ys: np.ndarray, dims: Sequence[int], csv_paths: Sequence[str],
                       summary_path: str, header: str, max_lines: int) -> None:
    """The original's files for two bool tensors: `True`/`False` values, `-` errors, `-` extremes."""
    padded = padded_shape(dims)
    title = f"Index,{header},NPUDump,GroundTruth,AbsoluteError,RelativeError\n"
    for k, path in enumerate(csv_paths):
        rows = range(k * max_lines, min((k + 1) * max_lines, xs.size))
        text = title + "".join(_bool_row(i, " ".join(map(str, np.unravel_index(i, padded))), xs[i], ys[i], "")
                               for i in rows)
        atomic_write_text(path, text, force=True, what="detail file")
    with open(summary_path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    lines = [ln.split(":")[0] + ":-" if ln.split(":")[0].endswith(("AbsoluteError", "RelativeError")) else ln
             for ln in lines]
    atomic_write_text(summary_path, "\n".join(lines) + "\n", force=True, what="summary file")


def original_top_lines(xs: np.ndarray, ys: np.ndarray, dims: Sequence[int], top_n: int) -> tuple[list[str], list[str]]:
    """The rows of the original's ``_absolute_error_topn.csv`` and ``_relative_error_topn.csv``, exactly as it picks
    and orders them: NumPy float32 errors, ``argpartition`` over the errors with inf/NaN read as 0, then sorted by
    (error, index) from the largest (a NaN error sorts as Python sorts NaN), ``top_n`` rows (one less than the
    element count when there are fewer elements)."""
    with np.errstate(all="ignore"):
        ae = np.abs(xs - ys)
        re = np.true_divide(ae, np.abs(ys))
    n = int(ae.size)
    k = top_n if n >= top_n else n - 1
    padded = padded_shape(dims)
    out = []
    for errors, column in ((ae, 4), (re, 5)):
        ranked = _finite_or_zero(errors)
        picked = np.argpartition(ranked, -k)[-k:].tolist() if n else []
        rows = [(i, " ".join(map(str, np.unravel_index(i, padded))), xs[i], ys[i], ae[i], re[i]) for i in picked]
        rows.sort(key=lambda r: (r[column], r[0]), reverse=True)
        out.append([_python_row(int(r[0]), r[1], *r[2:]) for r in rows])
    return out[0], out[1]


def write_original_extras(xs: np.ndarray, ys: np.ndarray, dims: Sequence[int], folder: str, prefix: str,
                          header: str, top_n: int, npu_dtype: Any, *, bool_pair: bool = False) -> None:
    """``{prefix}_absolute_error_topn.csv``, ``{prefix}_relative_error_topn.csv`` (the detail header and the
    original's rows, TABs included) and ``{prefix}.npy`` (the device tensor in the compared layout and shape, in its
    own dtype; bf16 as float32). `xs`/`ys` are the values of the detail CSV. For two bool tensors the original
    lists the first elements, its errors being undefined."""
    title = f"Index,{header},NPUDump,GroundTruth,AbsoluteError,RelativeError\n"
    if bool_pair:
        k = top_n if xs.size >= top_n else xs.size - 1
        padded = padded_shape(dims)
        first = [_bool_row(i, " ".join(map(str, np.unravel_index(i, padded))), xs[i], ys[i], "\t")
                 for i in range(max(k, 0))]
        top_abs, top_rel = first, first
    else:
        top_abs, top_rel = original_top_lines(xs, ys, dims, top_n)
    for kind, lines in (("absolute", top_abs), ("relative", top_rel)):
        name = f"{prefix}_{kind}_error_topn.csv"
        atomic_write_text(os.path.join(folder, naming.planned_file_name(name, ".csv")), title + "".join(lines),
                          force=True, what="top-N file")
    dtype = np.dtype(npu_dtype)
    device = xs.reshape([int(d) for d in dims])
    if dtype.kind == "f" and dtype.itemsize < 4 and dtype != np.float16:
        dtype = np.dtype(np.float32)  # bf16 and the fp8 types: float32, as they were compared
    atomic_write(os.path.join(folder, naming.planned_file_name(f"{prefix}.npy", ".npy")),
                 lambda f: np.save(f, device.astype(dtype, copy=False)), force=True, what="device tensor file")
