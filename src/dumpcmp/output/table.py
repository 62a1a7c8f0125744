"""The result table: the original tool's columns, the text of every cell, and the CSV and text writers.

In: a `ComparisonResult` (rows of values). Out: the table of strings the result file holds (`table`), the file
itself (`write`: CSV as the original tool writes it, or an aligned text table), and the terminal's summary. The
columns `dumpcmp locate` writes and the ones `compare --locate` adds after the original's are named here too, with
their number formats, so every column and every cell text of the package has one definition.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

from dumpcmp.comparison.rows import FP16_TINY, cosine_of, metric_texts, ops_dumped
from dumpcmp.comparison.metrics import METRICS, MetricResult
from dumpcmp.comparison.overflow import original_overflow
from dumpcmp.support.files import atomic_write, atomic_write_text
from dumpcmp.support.native import core

if TYPE_CHECKING:
    from dumpcmp.comparison.rows import ComparisonResult, Row

__all__ = ["EXTRA_COLUMNS", "OVERFLOW_COLUMN", "REASON_COLUMN", "ROW_COLUMNS", "LOCATED_COLUMNS", "header",
           "table", "write", "CsvRows", "summary", "text_table", "csv_text", "csv_safe", "fixed6", "fixed6_inf",
           "NOT_COMPUTED", "LOCATE_LEADING", "LOCATE_SIDES", "LOCATE_NOTE", "locate_header", "locate_metric_name",
           "locate_cells", "locate_csv_text", "row_cells", "side_texts", "address_text",
           "shape_text"]

# ---- the result file's columns --------------------------------------------------------------------------------

#: what a cell holds where nothing was computed or a side has no counterpart (the original tool's text)
NOT_COMPUTED = "NaN"

#: the columns of a row's two sides and names, before the metrics (Address only where a side records addresses)
ROW_COLUMNS = ("Index", "OpType", "NPUDump", "DataType", "Address", "GroundTruth", "DataType", "Address",
               "TensorIndex", "Shape")
#: the column `--overflow` adds before the metrics: does the device side hold NaN/inf
OVERFLOW_COLUMN = "OverFlow"
#: the last of the original tool's columns
REASON_COLUMN = "CompareFailReason"
#: columns added by ``extra=True`` (CLI ``--extra``), after the metric columns
EXTRA_COLUMNS = ("MeanSquaredError", "SQNR(dB)", "NPUNaN", "NPUInf", "GroundTruthNaN", "GroundTruthInf")
#: the columns `dumpcmp compare --locate` adds after the original tool's
LOCATED_COLUMNS = ("OwnCosine", "OwnRelRMSE", "InheritedCosine", "InheritedRelRMSE", "Verdict")


def header(result: ComparisonResult, *, extra: bool = False, overflow: bool = False) -> list[str]:
    """The original tool's header for `result`'s metrics and sides."""
    index, op_type, npu, npu_type, npu_address, truth, truth_type, truth_address, tensor, shape = ROW_COLUMNS
    cols = [index, op_type, npu, npu_type] if result.op_sequence is None else [index, "OpSequence", op_type, npu,
                                                                                npu_type]
    if result.npu_has_address:
        cols.append(npu_address)
    cols += [truth, truth_type]
    if result.ground_truth_has_address:
        cols.append(truth_address)
    cols += [tensor, shape]
    if overflow:
        cols.append(OVERFLOW_COLUMN)
    custom = result.custom_algorithms
    cols += [METRICS[i] for i in result.algorithms] if custom is None else custom.names()
    if extra:
        cols += list(EXTRA_COLUMNS)
    cols.append(REASON_COLUMN)
    return cols


# ---- cell texts -----------------------------------------------------------------------------------------------


def fixed6(v: float) -> str:
    """A number as the summary and the extra columns print it: `%.6f`, `NaN` when not finite."""
    return NOT_COMPUTED if not math.isfinite(v) else f"{v:.6f}"


def fixed6_inf(v: float) -> str:
    """A number as locate's columns print it: `%.6f`, `NaN`, `inf` (a relative RMSE against an all-zero reference)."""
    return NOT_COMPUTED if math.isnan(v) else ("inf" if math.isinf(v) else f"{v:.6f}")


def address_text(address: int | None) -> str:
    """The Address cell: decimal, `NaN` for a tensor whose dump records no address (0), as the original prints it;
    empty when not read."""
    return "" if address is None else (str(address) if address else NOT_COMPUTED)


def shape_text(shape: Sequence[int] | None) -> str:
    """The Shape cell: `[1,3,224,224]`; empty when not read."""
    return "" if shape is None else "[" + ",".join(str(int(d)) for d in shape) + "]"


def side_texts(r: Row) -> dict[str, str]:
    """The cells of a row's data types, addresses, tensor index and shape: `NaN` throughout on the original's row
    for a graph op without dump file, `NaN` data types where it gives none."""
    if r.unmatched:
        return dict.fromkeys(("NPUDataType", "NPUAddress", "GroundTruthDataType", "GroundTruthAddress",
                              "TensorIndex", "Shape"), NOT_COMPUTED)
    unknown = r.data_types_unknown
    return {"NPUDataType": NOT_COMPUTED if unknown else r.npu_data_type or "",
            "NPUAddress": address_text(r.npu_address),
            "GroundTruthDataType": NOT_COMPUTED if unknown else r.ground_truth_data_type or "",
            "GroundTruthAddress": address_text(r.ground_truth_address),
            "TensorIndex": r.tensor_index or "", "Shape": shape_text(r.shape)}


def _metric_cell(r: Row, i: int) -> str:
    return NOT_COMPUTED if r.result is None or i in r.not_computed else r.result.format(i)


def _extra_cells(res: MetricResult | None) -> list[str]:
    if res is None:
        return [NOT_COMPUTED, NOT_COMPUTED, "", "", "", ""]
    sqnr = res.sqnr_db
    return [fixed6(res.mse), "inf" if sqnr == math.inf else fixed6(sqnr), str(res.nan_x), str(res.inf_x),
            str(res.nan_y), str(res.inf_y)]


class _RowCells:
    """`row_cells` for the rows of one result: its columns (sequence, addresses, overflow, metrics, extra) decided
    once, each row's cells then built without asking again (a model's worth of rows)."""

    def __init__(self, result: ComparisonResult, extra: bool, overflow: bool | str) -> None:
        self.result, self.extra, self.overflow = result, extra, overflow
        self.sequence = result.op_sequence is not None
        self.npu_address, self.truth_address = result.npu_has_address, result.ground_truth_has_address
        self.custom = result.custom_algorithms
        self.algorithms = result.algorithms
        self.chosen = list(result.algorithms)
        self.none = [NOT_COMPUTED] * len(self.algorithms)

    def __call__(self, r: Row) -> list[str]:
        if r.unmatched:
            side = side_texts(r)
            npu_type, npu_address, truth_type, truth_address, tensor, shape = side.values()
        else:  # side_texts' cells, without its dict
            if r.data_types_unknown:
                npu_type = truth_type = NOT_COMPUTED
            else:
                npu_type, truth_type = r.npu_data_type or "", r.ground_truth_data_type or ""
            npu_address, truth_address = r.npu_address, r.ground_truth_address
            npu_address = "" if npu_address is None else (str(npu_address) if npu_address else NOT_COMPUTED)
            truth_address = "" if truth_address is None else (str(truth_address) if truth_address else NOT_COMPUTED)
            tensor, shape = r.tensor_index or "", r.shape
            shape = "" if shape is None else "[" + ",".join(map(str, map(int, shape))) + "]"
        if self.sequence:  # -r/-s: the op's id in the graph, after Index
            cells = [str(r.index), str(self.result.op_sequence.get(id(r), "")), r.op_type, r.npu_dump, npu_type]
        else:
            cells = [str(r.index), r.op_type, r.npu_dump, npu_type]
        if self.npu_address:
            cells.append(npu_address)
        cells += [r.ground_truth, truth_type]
        if self.truth_address:
            cells.append(truth_address)
        cells += [tensor, shape]
        res = r.result
        overflow = self.overflow
        if overflow == "original":  # compare --overflow-like-original (the original's -overflow_detection)
            cells.append(original_overflow(r))
        elif overflow:
            cells.append("" if res is None else ("YES" if r.overflow else "NO"))
        if self.custom is not None:
            cells += self.custom.cells(r, _metric_cell)
        elif res is None:
            cells += self.none
        elif not r.not_computed:  # one call of the core for the whole row where it computed exactly these
            cells += metric_texts(res, self.chosen)
        else:
            cells += [_metric_cell(r, i) for i in self.algorithms]
        if self.extra:
            cells += _extra_cells(res)
        cells.append(r.fail_reason)
        return cells


def row_cells(result: ComparisonResult, r: Row, *, extra: bool = False, overflow: bool = False) -> list[str]:
    """One row's cells in the original tool's columns."""
    return _RowCells(result, extra, overflow)(r)


def table(result: ComparisonResult, *, extra: bool = False, overflow: bool = False,
          columns: Mapping[str, Callable[[Row], str]] | None = None) -> list[list[str]]:
    """Header and rows as the strings the result file holds; `columns` (name -> cell of a row) are added after
    the original tool's (`compare --locate`), after the result's own `extra_columns`."""
    return list(_table_rows(result, extra=extra, overflow=overflow, columns=columns))


def _table_rows(result: ComparisonResult, *, extra: bool = False, overflow: bool = False,
                columns: Mapping[str, Callable[[Row], str]] | None = None) -> Iterator[list[str]]:
    """`table`'s lines one at a time: the result file is written as they come, never held whole."""
    columns = {**(result.extra_columns or {}), **(columns or {})}
    yield header(result, extra=extra, overflow=overflow) + list(columns)
    cells = _RowCells(result, extra, overflow)
    for r in result:
        yield _line(cells, r, columns)


def _line(cells: _RowCells, r: Row, columns: Mapping[str, Callable[[Row], str]]) -> list[str]:
    line = cells(r)
    if columns:
        line += [cell(r) for cell in columns.values()]
    return line


class CsvRows:
    """The result file's CSV written as its rows come (`add`, in their final order: a
    `dumpcmp.comparison.stream.ReorderBuffer`'s sink), `lines` at a time: the same bytes as `write`'s, never the
    table held. The header is written first; `close()` writes what is left (the file object stays open)."""

    def __init__(self, f: IO[bytes], result: ComparisonResult, *, extra: bool = False, overflow: bool = False,
                 columns: Mapping[str, Callable[[Row], str]] | None = None, lines: int = 4096) -> None:
        self._f = f
        self._columns = {**(result.extra_columns or {}), **(columns or {})}
        self._cells = _RowCells(result, extra, overflow)
        self._lines = lines
        self._pending = [header(result, extra=extra, overflow=overflow) + list(self._columns)]
        # the common columns (no OpSequence, OverFlow, custom or extra ones): the rows kept as they come and their
        # lines made by the core, `lines` rows in one call (`_core.table.row_lines`), with no cells made here
        self._rows: list[Row] | None = None
        if not (self._columns or extra or overflow or self._cells.sequence or self._cells.custom is not None):
            self._rows = []

    def add(self, r: Row) -> None:
        if self._rows is not None:
            self._rows.append(r)
            if len(self._rows) >= self._lines:
                self.close()
            return
        self._pending.append(_line(self._cells, r, self._columns))
        if len(self._pending) >= self._lines:
            self.close()

    def add_many(self, rows: Iterable[Row]) -> None:
        """`add` of each row."""
        if self._rows is None:
            for r in rows:
                self.add(r)
            return
        self._rows += rows
        if len(self._rows) >= self._lines:
            self.close()

    def close(self) -> None:
        if self._pending:
            text, self._pending = csv_text(self._pending), []
            self._f.write(text.encode("utf-8", "surrogateescape"))
        if self._rows:
            cells = self._cells
            text = core.table.row_lines(self._rows, cells.chosen, cells.npu_address, cells.truth_address, csv_safe,
                                        "\r\n")
            self._rows = []
            self._f.write(text.encode("utf-8", "surrogateescape"))


# A text cell a spreadsheet would run as a formula: it starts with = + - % @ (or a full-width = + -), or has one right
# after a ';' (the original tool's rule), even behind TABs, CRs or LFs (which spreadsheets skip: "\t=cmd" runs): the
# rule is the core's (`_core.table.formula_like`), which the result file's lines apply too (`row_lines`).
_FORMULA_FIRST = frozenset("\t\r\n\uff1d\uff0b\uff0d+-=%@")  # what can start a formula without a ';'


def csv_safe(cell: str) -> str:
    """A cell as the result file holds it: numbers as they are, a text that could run as a formula behind a space
    (the original refuses such a file; one odd op name must not cost the whole result)."""
    if not cell or (cell[0] not in _FORMULA_FIRST and ";" not in cell):  # most cells: no formula can be there
        return cell
    try:
        float(cell)
        return cell
    except ValueError:
        return " " + cell if core.table.formula_like(cell) else cell


def csv_text(table: Iterable[list[str]]) -> str:
    """The result file's CSV: formula-like cells made safe (`csv_safe`), quoted as the csv module's QUOTE_MINIMAL
    quotes them (a cell holding the separator, a quote, a CR or an LF), rows ending in CR LF, as the original tool's.
    Each line's text depends on that line alone (`CsvRows` writes a file in pieces). Made in one core call."""
    return core.table.csv_text(table, csv_safe, "\r\n")


def _write_csv(f: IO[bytes], result: ComparisonResult, extra: bool, overflow: bool,
               columns: Mapping[str, Callable[[Row], str]] | None) -> None:
    out = CsvRows(f, result, extra=extra, overflow=overflow, columns=columns)
    for r in result:
        out.add(r)
    out.close()


def text_table(table: Sequence[Sequence[str]]) -> str:
    """Columns aligned by two spaces, the last cell of a line unpadded."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() + "\n" for row in table)


def write(result: ComparisonResult, path: str | os.PathLike[str], *, csv_format: bool | None = None,
          extra: bool = False, overflow: bool = False, force: bool = False,
          columns: Mapping[str, Callable[[Row], str]] | None = None) -> Path:
    """Write the result file: CSV (the default for a `.csv` name, or with csv_format=True) or an aligned text
    table. The file appears whole or not at all; an existing file is kept unless `force`."""
    path = Path(path)
    if csv_format is None:
        csv_format = path.suffix.lower() == ".csv"
    if csv_format:  # line by line: a model's table is never held whole (issue #35)
        return atomic_write(path, lambda f: _write_csv(f, result, extra, overflow, columns), force=force,
                            what="result file")
    text = text_table(table(result, extra=extra, overflow=overflow, columns=columns))
    return atomic_write_text(path, text, force=force, what="result file")


# ---- the terminal's summary -----------------------------------------------------------------------------------


def summary(result: ComparisonResult, threshold: float = 0.99, worst: int = 10) -> str:
    """What the terminal shows after a run: counts, the first tensor below the threshold, the worst ones."""
    statuses = result.statuses()  # the rows' columns: a Row is built only for what is printed (issue #35)
    c = {"compared": 0, "failed": 0, "skipped": 0, "unmatched": 0}
    for status in statuses:
        c[status] += 1
    lines = [f"{result.run}: {c['compared']} tensors compared, {c['unmatched']} unmatched, {c['failed']} failed, "
             f"{c['skipped']} skipped"]
    lines += [f"  note: {n}" for n in result.notes]
    if result.dumped_ops is not None:
        with_rows = set(ops_dumped(result.column("pair")))
        raw = [op for op in result.dumped_ops if op not in with_rows and op not in result.left_out]

        def names(ops: Sequence[str]) -> str:
            return ", ".join(ops[:10]) + (", ..." if len(ops) > 10 else "")

        lines.append(f"  {len(result.dumped_ops)} dumped ops, {len(with_rows)} with rows" +
                     (f"; {len(result.left_out)} inside a quant/dequant pair have none, as in the original tool "
                      f"(their tensors are raw integers): {names(result.left_out)}" if result.left_out else "") +
                     (f"; {len(raw)} whose only dumped tensors are raw integers (quantize outputs, dequantize "
                      f"inputs) have none: {names(raw)}" if raw else ""))
    never = result.never_dumped()
    if never:
        kinds = ", ".join(f"{n} {what}" for what, n in never.items())
        lines.append(f"  of the {c['unmatched']} unmatched: {kinds}: never dumped, or weights without ground "
                     f"truth of their own, not missing layers; {c['unmatched'] - sum(never.values())} other")
    results = result.column("result")
    over = sum(result.column("overflow"))
    if over:
        lines.append(f"  {over} device tensors hold NaN or inf")
    tiny = result.tiny_positions()
    if tiny:
        first_tiny = result.row_at(tiny[0])
        lines.append(f"  {len(tiny)} float16 tensors whose ground truth lies below float16's normal range "
                     f"(|x| < {FP16_TINY:.2g}, e.g. #{first_tiny.index} {first_tiny.shown_tensor}): their cosine "
                     "says nothing, left out of first below and largest drop")
    consts = [k for k, p in enumerate(result.column("pair")) if results[k] is not None and result.constant_pair(p)] \
        if result.constant_files else []
    if consts and 0 in result.algorithms:
        low = [k for k in consts if not cosine_of(results[k]) >= threshold]
        first_low = result.row_at(low[0]) if low else None
        lines.append(f"  weights and constants: {len(consts)} compared apart from the layers, {len(low)} below "
                     f"cosine {threshold}" +
                     (f" (first: #{first_low.index} {first_low.ground_truth})" if first_low is not None else ""))
    if 0 in result.algorithms:
        first = result.first_below(threshold)
        if first is None:
            lines.append(f"  every compared tensor has cosine similarity >= {threshold}")
        else:
            lines.append(f"  first below cosine {threshold}: #{first.index} {first.shown_tensor} "
                         f"({first.op_type}) vs {first.ground_truth}: CosineSimilarity {first.result.format(0)}")
        drop = result.largest_drop()
        if drop is not None and (drop[0] is None or drop[0].result.format(0) != drop[1].result.format(0)):
            a, b = drop
            start = "the model's inputs 1.000000" if a is None else \
                f"#{a.index} {a.shown_tensor} {a.result.format(0)}"
            lines.append(f"  largest drop from producer to consumer: {start} -> #{b.index} {b.shown_tensor} "
                         f"({b.op_type}) {b.result.format(0)} "
                         f"({b.cosine - (1.0 if a is None else a.cosine):+.6f})")
        bad = result.worst(worst, distinct=True)
        if bad:
            lines.append(f"  worst {len(bad)} by cosine similarity (one row per tensor; the same values dumped "
                         f"again as the next op's input are left out):")
            rows = [["#", "TensorIndex", "OpType", "Cosine", "MaxAbsErr", "RMSE"]]
            for r in bad:
                rows.append([str(r.index), r.shown_tensor or "", r.op_type, r.result.format(0),
                             fixed6(r.result.value(1)), fixed6(r.result.value(7))])
            lines += ["    " + line for line in text_table(rows).splitlines()]
    failed = [k for k, status in enumerate(statuses) if status == "failed"]
    for r in map(result.row_at, failed[:5]):
        lines.append(f"  failed #{r.index} {r.shown_tensor or r.ground_truth}: {r.fail_reason}")
    if len(failed) > 5:
        lines.append(f"  ... and {len(failed) - 5} more failed rows (see CompareFailReason)")
    return "\n".join(lines)


# ---- locate's columns -----------------------------------------------------------------------------------------

#: the leading columns of `dumpcmp locate`'s file, before the own/inherited/total measures
LOCATE_LEADING = ("Index", "OpType", "NPUOp", "Originals", "Inputs", "Output", "Verdict")
#: the sides of an operator locate measures after "own": what it was handed, and its output against ground truth
LOCATE_SIDES = ("Inherited", "Total")
#: the last column of locate's file
LOCATE_NOTE = "Note"
_LOCATE_SHORT = {0: "Cosine", 1: "MaxAbsErr", 7: "RMSE"}


def locate_metric_name(i: int) -> str:
    """A metric's name inside locate's column names (OwnCosine, TotalRMSE, OwnKLD...)."""
    return _LOCATE_SHORT.get(i, METRICS[i])


def locate_header(own: Sequence[int], sides: Sequence[int]) -> list[str]:
    """locate's header: `own` metrics for the op's own error, `sides` for the inherited and total ones."""
    cols = list(LOCATE_LEADING)
    cols += [f"Own{locate_metric_name(i)}" for i in own] + ["OwnRelRMSE"]
    for side in LOCATE_SIDES:
        cols += [f"{side}{locate_metric_name(i)}" for i in sides] + [f"{side}RelRMSE"]
    return cols + [LOCATE_NOTE]


def locate_cells(result: MetricResult | None, rrmse: float, metrics: Sequence[int]) -> list[str]:
    """One measure's cells in locate's file: its metrics and relative RMSE (`NaN` throughout when not measured)."""
    if result is None:
        return [NOT_COMPUTED] * (len(metrics) + 1)
    return [result.format(i) for i in metrics] + [fixed6_inf(rrmse)]


def locate_csv_text(table: list[list[str]]) -> str:
    """locate's CSV: rows ending in LF, formula-like cells made safe (op names are in it too)."""
    return core.table.csv_text(table, csv_safe, "\n")
