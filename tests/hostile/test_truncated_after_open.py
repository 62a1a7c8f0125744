"""A small file cut short after the engine's source for it was made (another process rewriting a dump folder during a
run): the source holds the bytes it read, so the comparison reads them, with the same result as before the cut. A
mapping of such a file used to be read past its end: SIGBUS, the process killed with no message (issue #35 reads
files up to `MappedFile::kReadWholeBytes` into a buffer instead of mapping them). Each case runs in a child process,
so a crash is seen as one."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import os, sys
    import numpy as np
    from dumpcmp import TensorData, open_dump, write_dump
    from dumpcmp.support.native import core

    case, folder = sys.argv[1], sys.argv[2]
    values = np.linspace(-1, 1, 2048, dtype=np.float32)
    truth = core.compare.source_from_array(values)
    if case == "npy_sources":
        path = os.path.join(folder, "t.0.1.npy")
        np.save(path, values)
        src = core.compare.npy_sources([path], {"<f4": "FLOAT"})[0][0]
    elif case == "source_from_file":
        path = os.path.join(folder, "t.0.1.npy")
        np.save(path, values)
        src = core.compare.source_from_file(path, 128, "FLOAT", values.size)
    else:
        path = os.path.join(folder, "Add.add1.1.1700000000000000")
        write_dump(path, op_name="add1", inputs=[], outputs=[TensorData(values, format="ND")])
        src = core.compare.source_from_dump(open_dump(path)._file, "output", 0)
    os.truncate(path, 0)
    result = core.compare.compare_sources(src, truth, metrics=[0])
    print(round(result.value(0), 6))
""")


@pytest.mark.parametrize("case", ["npy_sources", "source_from_file", "source_from_dump"])
def test_small_file_cut_after_its_source_was_made(tmp_path, case):
    run = subprocess.run([sys.executable, "-c", CHILD, case, str(tmp_path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, f"{case}: exit {run.returncode}, {run.stderr[-800:]}"
    assert run.stdout.strip() == "1.0"
