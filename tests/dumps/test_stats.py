"""Statistics dumps (statistic.csv): every column set the sources show, found by header name; nan/inf/empty
values; corrupt rows named by file and line; the scan lists them as a kind of their own."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

import dumpcmp
from dumpcmp.dumps.scan import MODEL, scan
from dumpcmp.dumps.stats import is_stats_file_name, read_stats
from dumpcmp.errors import DumpError
from helpers.statsfile import COLUMN_SETS, record_of, write_stats

T0 = 1700000000000000


def sample_records():
    a = np.array([[1.0, -2.0, 0.0], [np.nan, np.inf, -np.inf]], np.float32)
    b = np.arange(6, dtype=np.float16).reshape(2, 3)
    return [record_of("conv1", "input", 0, b, op_type="Conv2D", timestamp=T0 + 1, task_id=3),
            record_of("conv1", "output", 0, a, op_type="Conv2D", timestamp=T0 + 1, task_id=3)]


@pytest.mark.parametrize("columns", sorted(COLUMN_SETS))
@pytest.mark.parametrize("trailing_comma", [False, True])
def test_every_column_set(tmp_path, columns, trailing_comma):
    recs = sample_records()
    path = write_stats(tmp_path / "statistic.csv", recs, columns=columns, trailing_comma=trailing_comma)
    f = read_stats(path)
    assert len(f) == 2 and f.op_names == ["conv1"]
    wanted = {k for _, k in COLUMN_SETS[columns]}
    for got, want in zip(f.records, recs):
        assert (got.op_name, got.kind, got.slot) == (want["op_name"], want["kind"], want["slot"])
        assert got.shape == want["shape"] and got.data_type == want["data_type"]
        for k in ("max", "min", "mean", "l2norm"):
            assert (math.isnan(getattr(got, k)) and math.isnan(want[k])) or getattr(got, k) == want[k], k
        for k in ("task_id", "timestamp", "format", "nan_count", "pos_inf_count", "neg_inf_count", "zero_count",
                  "count"):
            assert getattr(got, k) == (want[k] if k in wanted else None), k
    out = f.records[1]
    assert out.tensor_index == "conv1:output:0"
    if columns == "counts":
        assert (out.nan_count, out.pos_inf_count, out.neg_inf_count, out.zero_count, out.count) == (1, 1, 1, 1, 6)


def test_columns_found_by_name_in_any_order(tmp_path):
    path = tmp_path / "statistic.csv"
    path.write_text("L2Norm Value,slot,MAX VALUE,op_name,io,Op Type\n3.5,1,2,relu1,OUTPUT,Relu\n")
    (r,) = read_stats(path).records
    assert (r.op_name, r.kind, r.slot, r.max, r.l2norm, r.op_type, r.min) == ("relu1", "output", 1, 2.0, 3.5,
                                                                              "Relu", None)


def test_special_values(tmp_path):
    path = tmp_path / "statistic.csv"
    path.write_text("Op Name,IO,Slot,Max Value,Min Value,Avg Value,L2Norm Value,Shape\n"
                    "a,input,0,inf,-inf,nan,,\"(2, 3)\"\n"
                    "a,input,1,True,False,N/A,null,[]\n"
                    "a,output,0,+1e3,-0.5,1E-3,0,2x3x4\n")
    r0, r1, r2 = read_stats(path).records
    assert r0.max == math.inf and r0.min == -math.inf and math.isnan(r0.mean) and r0.l2norm is None
    assert r0.shape == (2, 3)
    assert (r1.max, r1.min, r1.mean, r1.l2norm, r1.shape) == (1.0, 0.0, None, None, ())
    assert (r2.max, r2.min, r2.mean, r2.l2norm, r2.shape) == (1000.0, -0.5, 0.001, 0.0, (2, 3, 4))


def test_header_only_and_blank_lines(tmp_path):
    path = tmp_path / "statistic.csv"
    path.write_text("Op Name,IO,Slot,Max Value\n\n\n")
    assert len(read_stats(path)) == 0


BAD = [
    ("", "empty statistics file"),
    ("Op Name,IO,Slot\na,input,0\n", "not a statistics file header"),
    ("Op Name,Slot,Max Value\na,0,1\n", "no column for kind"),
    ("Op Name,IO,Slot,Max Value,Max\na,input,0,1,1\n", "are both 'max'"),
    ("Op Name,IO,Slot,Max Value\na,input,0,1\na,sideways,0,1\n", "line 3: column 2 (kind): 'sideways'"),
    ("Op Name,IO,Slot,Max Value\na,input,-1,1\n", "line 2: column 3 (slot): '-1' is not a non-negative integer"),
    ("Op Name,IO,Slot,Max Value\na,input,0,abc\n", "line 2: column 4 (max): 'abc' is not a number"),
    ("Op Name,IO,Slot,Max Value\na,input,0\n", "line 2: 3 fields, the header has 4"),
    ("Op Name,IO,Slot,Max Value\na,input,0,1,7\n", "line 2: 5 fields, the header has 4"),
    ("Op Name,IO,Slot,Max Value\n,input,0,1\n", "line 2: column 1 (op_name): '' is empty"),
    ("Op Name,IO,Slot,Max Value\na,input,,1\n", "line 2: no slot"),
    ("Op Name,IO,Slot,Max Value,Shape\na,input,0,1,(2;3)\n", "line 2: column 5 (shape)"),
    ('Op Name,IO,Slot,Max Value\n"a,input,0,1\n', "not valid CSV"),
]


@pytest.mark.parametrize("text,message", BAD)
def test_corrupt_files_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "statistic.csv"
    path.write_text(text)
    with pytest.raises(DumpError) as info:
        read_stats(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)


def test_not_utf8_and_missing(tmp_path):
    path = tmp_path / "statistic.csv"
    path.write_bytes(b"Op Name,IO,Slot,Max Value\n\xff\xfe,input,0,1\n")
    with pytest.raises(DumpError, match="not UTF-8"):
        read_stats(path)
    with pytest.raises(DumpError, match="cannot read"):
        read_stats(tmp_path / "none" / "statistic.csv")


def test_file_names():
    assert is_stats_file_name("statistic.csv") and is_stats_file_name("Statistic.CSV")
    assert is_stats_file_name("rank0_statistic.csv") and is_stats_file_name("a.statistic.csv")
    assert not is_stats_file_name("mystatistic.csv") and not is_stats_file_name("mapping.csv")


def test_scan_lists_statistics_beside_tensor_dumps(tmp_path):
    folder = tmp_path / "dump" / "20240101120000" / "0" / "resnet50" / "1" / "0"
    folder.mkdir(parents=True)
    dumpcmp.write_dump(os.path.join(folder, f"Relu.relu1.2.0.{T0}"), op_name="relu1",
                       outputs=[np.ones(3, np.float32)])
    write_stats(folder / "statistic.csv", sample_records())
    stats_only = tmp_path / "dump" / "20240101120000" / "0" / "resnet50" / "1" / "1"
    write_stats(stats_only / "statistic.csv", sample_records())
    index = scan(tmp_path / "dump")
    assert not index.skipped and index.dump_count == 1 and index.file_count == 3
    assert [(e.file_name, e.key.layout, e.key.data_index) for e in index.stats] == \
        [("statistic.csv", MODEL, 0), ("statistic.csv", MODEL, 1)]
    assert index.stats[0].key == index.groups[0].key
    assert len(index.stats[1].open()) == 2
