"""The CSV result files of a model-level `compare` written while it runs (issue #35): each run's rows go, in their
final order as batches finish (`dumpcmp.comparison.stream.ReorderBuffer`), into a temporary file beside the result
file, which takes its name where the whole file was written before. The guarantees are `support.files`': nothing
half-written (an error or a signal removes the temporary), no user file replaced without `--force`, never written
through a symlink."""

from __future__ import annotations

import argparse
import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Sequence

from dumpcmp.errors import DumpcmpError
from dumpcmp.support.files import create_temp_file, discard, publish, write_errors_named

if TYPE_CHECKING:
    from dumpcmp.output.table import CsvRows

_WHAT = "result file"
_live: list[StreamedResults] = []


@dataclass
class _Open:
    f: IO[bytes]
    tmp: str
    path: Path
    """The result file's name as known when it was opened (errors name it; the final name is given at publish)."""
    rows: CsvRows


class StreamedResults:
    """The result files of one command's runs, opened when the runs are known (`sinks`, handed to `compare_runs` as
    `row_sinks`), published one by one (`publish`); any left unpublished are removed when the command ends
    (`discarding`)."""

    def __init__(self, args: argparse.Namespace, path_of: Callable[[str, list[str]], Path]) -> None:
        self._args = args
        self._path_of = path_of
        self._open: dict[str, _Open] = {}
        _live.append(self)

    def sinks(self, results: Sequence[Any]) -> list[Callable[[Any], None]]:
        from dumpcmp.output.table import CsvRows  # the output stage, when a compare runs

        runs = [r.run for r in results]
        out = []
        for result in results:
            path = self._path_of(result.run, runs)
            folder = path.parent if str(path.parent) else Path(".")
            if not folder.is_dir():
                raise DumpcmpError(f"{path}: the folder {folder} does not exist")
            fd, tmp = create_temp_file(folder, path.name)
            try:
                f = os.fdopen(fd, "wb")
            except BaseException:
                os.close(fd)
                discard(tmp)
                raise
            opened = _Open(f, tmp, path, CsvRows(f, result, extra=self._args.extra, overflow=self._args.overflow))
            self._open[result.run] = opened
            out.append(_Sink(opened))
        return out

    def publish(self, result: Any, path: Path) -> Path:
        """Give the run's finished file its name `path` (an existing one: an error without --force)."""
        opened = self._open.pop(result.run)
        try:
            with write_errors_named(path, _WHAT):
                opened.rows.close()
                opened.f.close()
            return publish(opened.tmp, path, force=self._args.force, what=_WHAT)
        finally:
            _close(opened)

    def abandon(self) -> None:
        """Remove the files not published."""
        while self._open:
            _close(self._open.popitem()[1])
        if self in _live:
            _live.remove(self)


class _Sink:
    """A run's rows into its file: one (a call) or the rows a batch lets go (`many`, as the reorder buffer hands
    them on)."""

    def __init__(self, opened: _Open) -> None:
        self._opened = opened

    def __call__(self, row: Any) -> None:
        self.many((row,))

    def many(self, rows: Sequence[Any]) -> None:
        opened = self._opened
        try:
            opened.rows.add_many(rows)
        except OSError as error:  # a full disk: named as every writer names it
            with write_errors_named(opened.path, _WHAT):
                raise error


def _close(opened: _Open) -> None:
    try:
        opened.f.close()
    except OSError:
        pass
    finally:
        discard(opened.tmp)


def discarding(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command`, after which (returning, raising, signalled) the result files it did not publish are removed."""

    @functools.wraps(command)
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        finally:
            for streamed in list(_live):
                streamed.abandon()

    return run
