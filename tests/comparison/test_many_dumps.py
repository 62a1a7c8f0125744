"""Trees of many dumps: the memory mappings a compare holds stay bounded by its batches, whatever the file count
(a process may hold vm.max_map_count mappings, 65,530 by default; a mapping per dump ended a run of 100,000 dumps
in a SystemError, and the next one hung starting a thread), and a thread the system refuses never ends the process:
the work runs on the threads there are.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import dumpcmp
from helpers.many_dumps import many_dumps, mapping_count

SRC = Path(dumpcmp.__file__).resolve().parents[1]


def _cli(*args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    full = dict(os.environ, PYTHONPATH=str(SRC), **(env or {}))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *args], capture_output=True, text=True, env=full,
                          timeout=timeout)


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as f:
        return list(csv.reader(f))[1:]


def test_mappings_stay_bounded_by_the_batches(tmp_path):
    n = 3000
    dev, gt = many_dumps(tmp_path, n)
    before = mapping_count()
    peak = [before]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], mapping_count())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = dumpcmp.compare(dev, gt)
    finally:
        stop.set()
        sampler.join()
    after = mapping_count()
    assert len(result.rows) == n and not any(r.failed for r in result.rows)
    # a batch holds at most 64 pairs (two mappings each), and at most three batches are alive at once
    assert peak[0] - before < 3 * 64 * 2 + 200, (before, peak[0])
    # the result still holds every dump's header, none of their mappings
    assert after - before < 50, (before, after)


@pytest.mark.slow
def test_a_tree_of_100000_dumps_compares_to_the_end(tmp_path):
    n = 100_000
    dev, gt = many_dumps(tmp_path, n)
    out = tmp_path / "result.csv"
    done = _cli("compare", "-l", str(dev), "-r", str(gt), "-o", str(out), "--quiet")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    rows = _rows(out)
    assert len(rows) == n
    shutil.rmtree(tmp_path)  # 200,000 files: not left for pytest's rotation


# pthread_create refusing every FAIL_PTHREAD_EVERY-th thread with EAGAIN, as it does at the process's thread or
# memory-map limit (which root, running the tests, does not meet: RLIMIT_NPROC does not hold for root)
SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

static atomic_long calls;

int pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) {
    static int (*real)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    if (!real) real = (int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*))dlsym(RTLD_NEXT,
                                                                                                   "pthread_create");
    const char* every = getenv("FAIL_PTHREAD_EVERY");
    const long n = atomic_fetch_add(&calls, 1) + 1;
    if (every != NULL && atol(every) > 0 && n % atol(every) == 0) return EAGAIN;
    return real(t, a, f, arg);
}
"""


@pytest.fixture(scope="module")
def refusing_shim(tmp_path_factory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the pthread_create shim")
    folder = tmp_path_factory.mktemp("shim")
    (folder / "shim.c").write_text(SHIM)
    lib = folder / "refuse_threads.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(folder / "shim.c"), "-ldl"], check=True)
    return lib


@pytest.mark.parametrize("every", [2, 3, 1])
def test_threads_the_system_refuses_leave_the_work_to_the_others(tmp_path, refusing_shim, every):
    dev, gt = many_dumps(tmp_path, 300)
    expected = tmp_path / "expected.csv"
    assert _cli("compare", "-l", str(dev), "-r", str(gt), "-o", str(expected), "--quiet").returncode == 0
    out = tmp_path / "refused.csv"
    env = {"LD_PRELOAD": str(refusing_shim), "FAIL_PTHREAD_EVERY": str(every), "DUMPCMP_NUM_THREADS": "8",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = _cli("compare", "-l", str(dev), "-r", str(gt), "-o", str(out), "--quiet", env=env, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "terminate" not in done.stderr and "Traceback" not in done.stderr
    assert out.read_bytes() == expected.read_bytes()
