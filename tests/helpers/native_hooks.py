"""The tests' native hooks, `dumpcmp_testhooks`: built from this source tree on first use, then imported.

What only the tests call (NumPy's float32 sum as the core computes it, the KLD pass's form counters) is not in the
installed `dumpcmp._core`: it is a module of its own (native/bindings/testhooks, CMake option DUMPCMP_TEST_HOOKS,
never installed). `load()` configures build/testhooks in the source tree with CMake (Ninja when there is one) for
this interpreter, builds that one target and imports it; later sessions only let the build tool find it up to date
(or rebuild what changed). A build that fails is a test error with the build's output, never a skip.
`pip install ".[test]"` brings CMake, Ninja and pybind11; without the pybind11 package, set pybind11_DIR to its
CMake directory (`python -m pybind11 --cmakedir` of an interpreter that has it).
"""

from __future__ import annotations

import fcntl
import importlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "testhooks"
NAME = "dumpcmp_testhooks"

_loaded: ModuleType | None = None
_failed: str | None = None


def _tool(name: str) -> str | None:
    # the one pip installed next to this interpreter first (a venv that is not activated), then PATH
    here = Path(sys.executable).parent / name
    return str(here) if here.exists() else shutil.which(name)


def _pybind11_dir() -> str:
    try:
        import pybind11
    except ImportError:
        found = os.environ.get("pybind11_DIR")
        if found:
            return found
        raise RuntimeError(f"building {NAME} needs pybind11: pip install \".[test]\" (or set pybind11_DIR)") from None
    return pybind11.get_cmake_dir()


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        out = (done.stdout + done.stderr).splitlines()
        raise RuntimeError(f"building {NAME} failed: {' '.join(cmd)}\n" + "\n".join(out[-80:]))


def _build() -> None:
    cmake = _tool("cmake")
    if cmake is None:
        raise RuntimeError(f"building {NAME} needs CMake: pip install \".[test]\"")
    BUILD.mkdir(parents=True, exist_ok=True)
    if not (BUILD / "CMakeCache.txt").exists():
        cmd = [cmake, "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release", "-DDUMPCMP_TEST_HOOKS=ON",
               f"-DPython_EXECUTABLE={sys.executable}", f"-Dpybind11_DIR={_pybind11_dir()}"]
        ninja = _tool("ninja")
        if ninja is not None:
            cmd += ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"]
        _run(cmd)
    jobs = os.environ.get("DUMPCMP_TESTHOOKS_JOBS") or str(os.cpu_count() or 1)
    _run([cmake, "--build", str(BUILD), "--target", NAME, "-j", jobs])


def load() -> ModuleType:
    """The hook module, built if needed (once a session); raises RuntimeError with the build output if it cannot."""
    global _loaded, _failed
    if _loaded is not None:
        return _loaded
    if _failed is not None:
        raise RuntimeError(_failed)
    try:
        BUILD.parent.mkdir(parents=True, exist_ok=True)
        with open(BUILD.parent / "testhooks.lock", "w") as lock:  # one build at a time (parallel sessions)
            fcntl.flock(lock, fcntl.LOCK_EX)
            start = time.perf_counter()
            _build()
            took = time.perf_counter() - start
        if took > 5:
            print(f"\n{NAME}: built in {took:.0f} s ({BUILD})", file=sys.stderr)
        if str(BUILD) not in sys.path:
            sys.path.insert(0, str(BUILD))
        _loaded = importlib.import_module(NAME)
    except Exception as error:
        _failed = str(error)
        raise
    return _loaded
