"""The scan calls a file unreadable when the process cannot open it: readability is asked with the effective ids,
which open() uses, not the real ones (a setuid tool, a process that gave root up with seteuid). Each case runs in a
forked child with real and effective uids apart, on a tree outside pytest's private folder; the kernel's own open()
is the reference the scan's answer is checked against."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from helpers.forked import in_child
from dumpcmp.dumps.scan import scan, scan_ground_truth

T0 = 1700000000000000
NOBODY = 65534
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to set the real and effective uids apart")


def run_as(real: int, effective: int, mode: int) -> dict:
    """Scan a folder of a locked device dump, a locked ground-truth file and an open dump as (real, effective) uid
    (the files' mode `mode`, owned by root); what the scan said and whether open() could read each locked file."""
    top = tempfile.mkdtemp(prefix="dumpcmp-euid-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        names = {"dev": f"Add.add.1.{T0}", "gt": f"add.0.{T0}.npy", "open": f"Mul.mul.2.{T0 + 1}"}
        for key, name in names.items():
            folder = os.path.join(top, "gt" if key == "gt" else "dump")
            os.makedirs(folder, mode=0o755, exist_ok=True)
            os.chmod(folder, 0o755)
            path = os.path.join(folder, name)
            with open(path, "wb") as handle:
                handle.write(b"\x93NUMPY" if key == "gt" else b"")
            os.chmod(path, 0o644 if key == "open" else mode)

        def child() -> dict:
            os.setgroups([])
            os.setresgid(NOBODY if real else 0, NOBODY if effective else 0, 0)
            os.setresuid(real, effective, 0)
            opens = {}
            for key, folder in (("dev", "dump"), ("gt", "gt")):
                try:
                    with open(os.path.join(top, folder, names[key]), "rb"):
                        opens[key] = True
                except PermissionError:
                    opens[key] = False
            device = scan(os.path.join(top, "dump"))
            truth = scan_ground_truth(os.path.join(top, "gt"))
            return {"opens": opens,
                    "skipped": sorted(os.path.basename(s.path) for s in device.skipped + truth.skipped
                                      if s.reason == "not readable (permission denied)"),
                    "ops": [e.op_name for e in device.entries()], "gt": sorted(truth.files)}

        return in_child(child)
    finally:
        shutil.rmtree(top)


def test_a_file_the_effective_uid_cannot_open_is_unreadable():
    out = run_as(real=0, effective=NOBODY, mode=0o600)
    assert out["opens"] == {"dev": False, "gt": False}
    assert out["skipped"] == sorted([f"Add.add.1.{T0}", f"add.0.{T0}.npy"])
    assert out["ops"] == ["mul"] and out["gt"] == []


def test_a_file_the_effective_uid_can_open_is_readable():
    out = run_as(real=NOBODY, effective=0, mode=0o000)
    assert out["opens"] == {"dev": True, "gt": True}
    assert out["skipped"] == []
    assert out["ops"] == ["add", "mul"] and out["gt"] == ["add.0"]
