"""A scan whose caller opens every device dump after (`scan(opened=True)`, `read_headers=True`, `dumpcmp info`)
leaves the readability check to that open (#35: one faccessat less a dump, 10^6 on a tree of 10^6): a dump the
process may not open is skipped all the same, with the same reason, "not readable (permission denied)", asked with
the effective ids (open()'s). Each case runs in a forked child with real and effective uids apart, on a tree outside
pytest's private folder; the kernel's own open() is the reference."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np
import pytest

import dumpcmp
from helpers.forked import in_child
from dumpcmp.support.native import core

T0 = 1700000000000000
NOBODY = 65534
REASON = "not readable (permission denied)"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to set the real and effective uids apart")


def run_as(real: int, effective: int, mode: int) -> dict:
    top = tempfile.mkdtemp(prefix="dumpcmp-opened-", dir="/tmp")
    try:
        os.chmod(top, 0o755)
        names = {"locked": f"Add.add.1.{T0}", "open": f"Mul.mul.2.{T0 + 1}"}
        for key, name in names.items():
            path = os.path.join(top, name)
            dumpcmp.write_dump(path, op_name=key, outputs=[np.ones(3, np.float32)])
            os.chmod(path, 0o644 if key == "open" else mode)

        def child() -> dict:
            from dumpcmp.cli.info import gather
            from dumpcmp.dumps.scan import read_dump_headers, scan

            os.setgroups([])
            os.setresgid(NOBODY if real else 0, NOBODY if effective else 0, 0)
            os.setresuid(real, effective, 0)
            try:
                with open(os.path.join(top, names["locked"]), "rb"):
                    opens = True
            except PermissionError:
                opens = False
            checked = scan(top)
            headers = scan(top, read_headers=True)
            unchecked = scan(top, opened=True)
            read = [(os.path.basename(e.path), s.reason if s else None)
                    for e, _, s in read_dump_headers(list(unchecked.entries()))]
            items, _ = gather([top])
            return {
                "opens": opens,
                "checked": ([e.op_name for e in checked.entries()], [(os.path.basename(s.path), s.reason)
                                                                     for s in checked.skipped]),
                "headers": ([e.op_name for e in headers.entries()], [(os.path.basename(s.path), s.reason)
                                                                     for s in headers.skipped]),
                "unchecked": [e.op_name for e in unchecked.entries()], "read": read,
                "info": ([d["op_name"] for r in items[0]["runs"] for d in r["dumps"]],
                         [(os.path.basename(s["path"]), s["reason"]) for s in items[0]["skipped"]]),
            }

        return in_child(child)
    finally:
        shutil.rmtree(top)


def test_a_dump_the_effective_uid_cannot_open_is_skipped_as_not_readable():
    out = run_as(real=0, effective=NOBODY, mode=0o600)
    assert out["opens"] is False
    locked = [[f"Add.add.1.{T0}", REASON]]  # (the child's answer comes back as JSON: lists)
    assert out["checked"] == [["mul"], locked]
    assert out["headers"] == [["mul"], locked]
    assert sorted(out["unchecked"]) == ["add", "mul"]  # not asked by the scan ...
    assert sorted(out["read"]) == [[f"Add.add.1.{T0}", REASON], [f"Mul.mul.2.{T0 + 1}", None]]  # ... but by the open
    assert out["info"] == [["open"], locked]  # info's records: the header's op name


def test_a_dump_the_effective_uid_can_open_is_read():
    out = run_as(real=NOBODY, effective=0, mode=0o000)
    assert out["opens"] is True
    assert out["checked"] == [["add", "mul"], []]
    assert out["headers"] == [["add", "mul"], []]
    assert out["info"] == [["locked", "open"], []]


def test_the_open_error_text_is_the_one_mapped():
    # the text read_dump_headers maps to the scan's reason is the core's for a refused open (EACCES)
    from dumpcmp.dumps import scan as scan_module

    assert scan_module._OPEN_DENIED == f"cannot open: {os.strerror(13)}"
    assert core.dump.read_heads([b"/nonexistent/x"], 1)[0] == "/nonexistent/x: cannot open: " + os.strerror(2)
