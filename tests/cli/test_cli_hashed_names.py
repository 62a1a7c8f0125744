"""Over-long dump names (issue #38): the runtime writes the file under a digits-only hash (a ground-truth .npy as
`{digits}.npy`, msaccucmp's rule) with a `{hash},{name}` row in the folder's mapping.csv. Every command that reads
a dump's name from a path resolves it through `dumpcmp.dumps.naming.file_name_of`: a file given alone, the
`{digits}.npy` form, dumpcmp's own converted files read back."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

import dumpcmp
from dumpcmp.cli import main
from dumpcmp.dumps import naming
from dumpcmp.dumps.scan import scan

T0 = 1700000000000000
OP = "layer_" * 50 + "attn"  # its dump file name (and its ground truth's) is over 255 characters
GT_HASH = "12345678901234567890.npy"


def hashed_model(tmp_path):
    """A device dump folder with one hashed and one plain dump, and a ground-truth folder with the same (the
    hashed truth named `{digits}.npy` with its mapping.csv row, as msaccucmp reads it)."""
    dump, gt = tmp_path / "dump", tmp_path / "gt"
    dump.mkdir()
    gt.mkdir()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    long_name = f"BatchMatMul.{OP}.7.3.{T0}"
    assert naming.too_long(long_name)
    short = naming.safe_file_name(long_name, dump)
    dumpcmp.write_dump(dump / short, op_name=OP, inputs=[x.astype(np.float16)], outputs=[x[0] * 2])
    dumpcmp.write_dump(dump / f"Add.add1.8.3.{T0 + 5}", op_name="add1", inputs=[x], outputs=[x])
    np.save(gt / GT_HASH, x[0] * 2 + 0.5)
    np.save(gt / f"add1.0.{T0}.npy", x)
    (gt / naming.MAPPING_FILE).write_text(f"{GT_HASH},{OP}.0.{T0}.npy\n", encoding="utf-8")
    return dump, dump / short, gt


def rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    return [dict(zip(table[0], r)) for r in table[1:]]


def test_file_name_of_is_the_one_rule(tmp_path):
    dump, hashed, gt = hashed_model(tmp_path)
    assert naming.file_name_of(hashed) == f"BatchMatMul.{OP}.7.3.{T0}"
    assert naming.file_name_of(gt / GT_HASH) == f"{OP}.0.{T0}.npy"
    assert naming.file_name_of(gt / GT_HASH, {}) == GT_HASH  # a mapping already read, without the row
    assert naming.file_name_of(dump / f"Add.add1.8.3.{T0 + 5}") == f"Add.add1.8.3.{T0 + 5}"
    assert naming.file_name_of(tmp_path / "999") == "999"  # no mapping.csv: as it is
    assert naming.is_hashed_name("123.npy") and naming.is_hashed_name("123")
    assert not naming.is_hashed_name("123.pb") and not naming.is_hashed_name(".npy")


def test_a_hashed_dump_given_alone_is_compared(tmp_path):
    _, hashed, gt = hashed_model(tmp_path)
    index = scan(hashed)
    assert [e.op_name for g in index for e in g] == [OP] and not index.skipped
    assert main(["compare", "-l", str(hashed), "-r", str(gt), "-o", str(tmp_path / "one.csv"), "--quiet"]) == 0
    [row] = [r for r in rows(tmp_path / "one.csv") if r["NPUDump"] == OP]
    assert row["GroundTruth"] == OP and row["CosineSimilarity"] not in ("", "NaN")


def test_hashed_npy_ground_truth_is_paired(tmp_path):
    dump, _, gt = hashed_model(tmp_path)
    truth = scan(gt)
    assert not truth.skipped and truth.ground_truth.get(OP, 0).file_name == GT_HASH
    assert main(["compare", "-l", str(dump), "-r", str(gt), "-o", str(tmp_path / "all.csv"), "--quiet"]) == 0
    by_op = {r["NPUDump"]: r for r in rows(tmp_path / "all.csv")}
    assert by_op[OP]["GroundTruth"] == OP and by_op[OP]["MaxAbsoluteError"] == "0.500000"
    assert by_op["add1"]["CosineSimilarity"] == "1.000000"


def test_single_op_mode_finds_the_hashed_truth(tmp_path):
    dump, _, gt = hashed_model(tmp_path)
    out = tmp_path / "single"
    assert main(["compare", "-l", str(dump), "-r", str(gt), "-o", str(out), "-d", OP, "--quiet"]) == 0
    assert any(f.suffix == ".csv" for f in out.iterdir())


def test_info_reads_hashed_truth_and_dumpcmps_own_converted_files(tmp_path, capsys):
    _, hashed, gt = hashed_model(tmp_path)
    assert main(["info", str(gt)]) == 0
    out = capsys.readouterr()
    assert "2 ground-truth files" in out.out and "0 skipped" in out.out and f"op {OP}" in out.out
    assert main(["info", str(gt / GT_HASH)]) == 0
    assert f"npy: op {OP}, output 0" in capsys.readouterr().out
    converted = tmp_path / "converted"
    assert main(["convert", "-type", "offline", "-target", "numpy", "-i", str(hashed), "-o", str(converted)]) == 0
    files = sorted(f for f in os.listdir(converted) if f != naming.MAPPING_FILE)
    assert len(files) == 2 and all(naming.is_hashed_name(f) for f in files)
    capsys.readouterr()
    assert main(["info", str(converted)]) == 0
    shown = capsys.readouterr().out
    assert "2 converted, 0 skipped" in shown and f"converted output 0 of BatchMatMul.{OP}" in shown


def test_histogram_pairs_the_hashed_truth(tmp_path):
    dump, _, gt = hashed_model(tmp_path)
    out = tmp_path / "hist"
    assert main(["histogram", str(dump), "-r", str(gt), "-o", str(out), "--quiet"]) == 0
    assert len([f for f in os.listdir(out) if not f.endswith(".csv")]) == 2


def test_a_mapping_row_naming_no_file_is_skipped_not_followed(tmp_path, capsys):
    """A row whose name holds a NUL or a '/' names no file: the hashed dump is skipped with the reason, nothing is
    written from it (before: convert died on a NUL with a traceback, exit 1)."""
    dump, hashed, _ = hashed_model(tmp_path)
    for bad in (f"BatchMatMul.{OP[:20]}\0x.7.3.{T0}", f"BatchMatMul.../../x.7.3.{T0}"):
        (dump / naming.MAPPING_FILE).write_text(f"{hashed.name},{bad}\n", encoding="utf-8", errors="surrogateescape")
        out = tmp_path / "c"
        code = main(["convert", "-type", "offline", "-target", "numpy", "-i", str(hashed), "-o", str(out)])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and "fits no naming scheme" in err
        assert not out.exists() or not any(out.iterdir())
        assert naming.file_name_of(hashed) == hashed.name
        index = scan(dump)
        assert [e.op_name for g in index for e in g] == ["add1"]
        assert any("is not a file name" in s.reason for s in index.skipped)


def test_ffts_slices_under_hashed_names_merge_as_named_ones(tmp_path):
    """FFTS+ slice grouping reads the resolved names: a slice file under a hashed name joins its op's group."""
    import shutil
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
    import make_corpus

    left, right, _, _ = make_corpus.write_ffts(tmp_path / "ffts", make_corpus.SEED + 2)
    hashed_left = tmp_path / "hashed_left"
    shutil.copytree(left, hashed_left)
    rows = []
    for f in sorted(hashed_left.iterdir()):
        if "_lxslice1" in f.name or f.name.endswith(".4.3.1.0"):  # a manual slice and an auto thread
            short = naming.hashed_name(f.name)
            f.rename(hashed_left / short)
            rows.append(naming.mapping_row(short, f.name))
    (hashed_left / naming.MAPPING_FILE).write_text("".join(rows), encoding="utf-8")
    assert len(rows) == 3
    for side, out in ((left, "named.csv"), (hashed_left, "hashed.csv")):
        assert main(["compare", "-l", str(side), "-r", str(right), "-o", str(tmp_path / out), "--quiet"]) == 0
    named, hashed = rows_of(tmp_path / "named.csv"), rows_of(tmp_path / "hashed.csv")
    assert named == hashed and len(named) > 5


def rows_of(path):
    """The result's cells, the folder's name left out of the messages."""
    return [[c.replace(str(path.parent / "hashed_left"), "L").replace(str(path.parent / "ffts" / "left"), "L")
             for c in r.values()] for r in rows(path)]
