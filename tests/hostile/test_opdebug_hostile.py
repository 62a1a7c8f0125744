"""`dumpcmp overflow` over broken OpDebug files and dumps (issue #38): every case ends in exit 0 or 2 with one line
of dumpcmp's own naming the file, never a traceback; a refused run leaves nothing in the output folder. One run
goes through a real process (the command as users start it)."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest

from dumpcmp.cli import main
from dumpcmp.dumps.dump import TensorData, write_dump
from dumpcmp.dumps.opdebug import old_opdebug_bytes, opdebug_bytes

NAME = "Opdebug.Node_OpDebug.7.1.1700000000000002"
TS = 1700000000000001


def _folder(d, *records, dump=True):
    d.mkdir(parents=True, exist_ok=True)
    write_dump(d / NAME, outputs=[TensorData(np.frombuffer(r, np.uint8), data_type="UINT8") for r in records])
    if dump:
        write_dump(d / f"Add.add.7.1.{TS}", op_name="add", inputs=[np.ones(4, np.float16)],
                   outputs=[np.full(4, np.inf, np.float16)])
    return d


def _run(tmp_path, folder, capsys):
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    code = main(["overflow", str(folder), "-o", str(out), "-n", "5", "--quiet"])
    err = capsys.readouterr().err
    return code, err, sorted(os.listdir(out))


def _refused(code, err, left, path):
    assert code == 2, err
    [line] = err.splitlines()
    assert line.startswith(f"dumpcmp: error: {path}") and "Traceback" not in err
    assert left == []


RECORD = opdebug_bytes("AIC", status=1, task_id=7, stream_id=1)


@pytest.mark.parametrize("cut", range(len(RECORD)))
def test_truncated_record(tmp_path, capsys, cut):
    folder = _folder(tmp_path / "d", RECORD[:cut])
    _refused(*_run(tmp_path, folder, capsys), folder / NAME)


@pytest.mark.parametrize("records, field", [
    ([opdebug_bytes(status=0, task_id=7, stream_id=1)], "status is 0"),
    ([RECORD[:12] + b"\x09\x00\x00\x00" + RECORD[16:]], "acc_type is 9"),
    ([old_opdebug_bytes({})], "is 0: no overflow"),
    ([old_opdebug_bytes({"AI Core": 1})[:-1]], "size is 2047"),
    ([RECORD, RECORD], "2 outputs"),
    ([], "without outputs"),
])
def test_wrong_fields(tmp_path, capsys, records, field):
    folder = _folder(tmp_path / "d", *records)
    code, err, left = _run(tmp_path, folder, capsys)
    _refused(code, err, left, folder / NAME)
    assert field in err


def test_truncated_files_and_random_bytes(tmp_path, capsys):
    """The OpDebug file cut at every 7th byte, and 200 records with random bytes changed: exit 0 or 2, one line."""
    good = _folder(tmp_path / "good", RECORD)
    data = (good / NAME).read_bytes()
    rng = random.Random(38)
    outcomes = {0: 0, 2: 0}
    cases = [data[:cut] for cut in range(0, len(data), 7)]
    for _ in range(200):
        record = bytearray(RECORD)
        for _ in range(rng.randint(1, 6)):
            record[rng.randrange(len(record))] = rng.randrange(256)
        cases.append(bytes(record))
    for i, case in enumerate(cases):
        folder = tmp_path / f"c{i}"
        if i < len(range(0, len(data), 7)):
            folder.mkdir()
            (folder / NAME).write_bytes(case)
        else:
            _folder(folder, case, dump=False)
        out = tmp_path / f"o{i}"
        out.mkdir()
        code = main(["overflow", str(folder), "-o", str(out), "--quiet"])
        err = capsys.readouterr().err
        assert code in (0, 2) and "Traceback" not in err
        lines = err.splitlines()
        if code == 2:
            assert len(lines) == 1 and str(folder / NAME) in lines[0]
            assert os.listdir(out) == []
        outcomes[code] += 1
    assert outcomes[2] > 0


def test_output_folder_rules(tmp_path, capsys):
    folder = _folder(tmp_path / "d", RECORD)
    assert main(["overflow", str(folder), "-o", str(tmp_path / "missing")]) == 2
    (tmp_path / "link").symlink_to(tmp_path / "d")
    assert main(["overflow", str(folder), "-o", str(tmp_path / "link")]) == 2
    assert main(["overflow", str(folder), "-d", str(folder), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("dumpcmp: error: [overflow]") for line in err)
    assert sorted(os.listdir(folder)) == sorted([NAME, f"Add.add.7.1.{TS}"])


def test_no_opdebug_file_writes_nothing(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    code, err, left = _run(tmp_path, tmp_path / "d", capsys)
    assert code == 0 and left == []


def test_real_process(tmp_path):
    folder = _folder(tmp_path / "d", RECORD[:30])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "overflow", "-d", str(folder), "-out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "truncated OpDebug record" in proc.stderr
    good = _folder(tmp_path / "g", RECORD)
    proc = subprocess.run([sys.executable, "-m", "dumpcmp", "overflow", "-d", str(good), "-out", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [summary] = tmp_path.glob("overflow_summary_*.txt")
    assert "[Add] add\n [AIC][TaskId:7][StreamId:1][Status:1]\n" in summary.read_text()
    assert "[Max: inf] [Min: inf] [Mean: inf]" in summary.read_text()


def test_unreadable_dump_of_an_overflowing_op_does_not_stop_the_summary(tmp_path, capsys):
    folder = _folder(tmp_path / "d", RECORD)
    dump = folder / f"Add.add.7.1.{TS}"
    dump.write_bytes(dump.read_bytes()[:20])
    code, err, left = _run(tmp_path, folder, capsys)
    assert code == 0 and len(left) == 1 and str(dump) in err and "Traceback" not in err
    assert (tmp_path / "out" / left[0]).read_text().endswith(" [timestamp:1700000000000002]\n")
