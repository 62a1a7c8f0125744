"""`holds_stats_only` (what `dumpcmp compare` and `report` ask before a run: a statistics dump?) ends at the first
readable device dump without asking about the other files of its folder (#35: it listed and checked the whole
folder, 26,666 readability checks on the kept 20,000-op model, before the compare's own scan did it again), and
answers as a full scan does."""

from __future__ import annotations

import os

import numpy as np
import pytest

import dumpcmp

from helpers.syscalls import count_syscalls, strace_path
from dumpcmp.dumps.naming import DeviceDumpName, FftsSuffix, FrameworkDumpName
from dumpcmp.dumps.scan import DumpEntry, GroundTruthEntry, holds_stats_only, scan
from dumpcmp.support.native import core

T0 = 1700000000000000


def touch(path, data=b""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def dump_folder(folder, n):
    for i in range(n):
        touch(os.path.join(folder, f"Add.add{i}.{i + 1}.{T0 + i}"))


def listing(folder, probe):
    return core.scan.list_folder(str(folder), DumpEntry, DeviceDumpName, FftsSuffix, GroundTruthEntry,
                                 FrameworkDumpName, probe)


def test_a_probe_of_a_dump_folder_gives_one_readable_entry(tmp_path):
    dump_folder(tmp_path, 40)
    touch(tmp_path / "statistic.csv", b"x")
    touch(tmp_path / f"add0.0.{T0}.npy")
    os.mkdir(tmp_path / "sub")
    error, subdirs, skipped, others, devices, in_order, framework = listing(tmp_path, True)
    assert error is None and subdirs == [] and skipped == [] and others == [] and framework == []
    assert len(devices) == 1 and os.access(devices[0].path, os.R_OK)
    assert devices[0].file_name.startswith("Add.add")


def test_a_probe_of_a_folder_without_dumps_is_the_whole_listing(tmp_path):
    touch(tmp_path / "statistic.csv", b"x")
    touch(tmp_path / f"add0.0.{T0}.npy")
    touch(tmp_path / "README.md")
    os.mkdir(tmp_path / "sub")
    assert listing(tmp_path, True) == listing(tmp_path, False)


@pytest.mark.parametrize("tree", ["stats", "dumps", "both", "stats_then_dumps", "empty", "gt_only"])
def test_holds_stats_only_answers_as_the_full_scan(tmp_path, tree):
    root = tmp_path / "t"
    os.makedirs(root)
    if tree in ("stats", "both", "stats_then_dumps"):
        touch(root / "a" / "statistic.csv", b"x")
    if tree in ("dumps", "both"):
        dump_folder(root / "a", 5)
    if tree == "stats_then_dumps":
        dump_folder(root / "b", 5)
    if tree == "gt_only":
        touch(root / f"add.0.{T0}.npy")
    index = scan(root)
    assert holds_stats_only(root) == (bool(index.stats) and index.dump_count == 0)


@pytest.mark.skipif(strace_path() is None, reason="needs strace")
def test_holds_stats_only_asks_about_one_file_of_a_dump_folder(tmp_path):
    folder = tmp_path / "dump"
    dump_folder(folder, 300)
    code = ("from dumpcmp.dumps.scan import holds_stats_only\n"
            f"holds_stats_only({str(folder)!r})\n"  # the imports and first calls made before the count starts
            "print('-- start --', flush=True)\n"
            f"assert holds_stats_only({str(folder)!r}) is False\n")
    counts = count_syscalls(code, ("faccessat2", "faccessat", "access"))
    assert sum(counts.values()) <= 2, counts


@pytest.mark.skipif(strace_path() is None, reason="needs strace")
def test_info_leaves_the_readability_of_dumps_to_their_open(tmp_path):
    # `dumpcmp info TREE` opens every dump it lists: the scan does not ask about each first (#35)
    folder = tmp_path / "dump"
    folder.mkdir()
    for i in range(200):
        dumpcmp.write_dump(folder / f"Add.add{i}.{i + 1}.{T0 + i}", op_name=f"add{i}", outputs=[np.ones(2, np.float32)])
    code = ("from dumpcmp.cli.info import gather\n"
            "print('-- start --', flush=True)\n"
            f"items, ok = gather([{str(folder)!r}])\n"
            "assert ok and items[0]['summary']['dumps'] == 200\n")
    counts = count_syscalls(code, ("faccessat2", "faccessat", "access"))
    assert sum(counts.values()) <= 2, counts
