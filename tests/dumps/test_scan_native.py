"""The scan's folder listing in C++ (#35: 10^6 files) follows the Python rules it stands in for: a scanned folder
holds the entries, order, ground truth and skip reasons an independent walk (os.scandir, `naming.parse_name`,
os.access, `DumpEntry.order`, newest wins) finds. (The name rules themselves, which `naming.parse_name` and the
listing share, are held to main's Python rules by test_naming_main_rules.py.)"""

from __future__ import annotations

import os

from dumpcmp.dumps import naming
from dumpcmp.dumps.naming import DeviceDumpName, FrameworkDumpName
from dumpcmp.dumps.scan import DumpEntry, scan, scan_ground_truth
from dumpcmp.errors import NamingError

T0 = 1700000000000000


NAMES = [
    f"Conv2D.conv1.3.{T0 + 5}", f"Conv2D.conv1.2.{T0 + 5}", f"Add.add.1.2.{T0 + 1}", f"Add.add2.7.1.2.{T0 + 1}",
    f"Mul.mul.1.{T0}.FFTSPLUS.0.1.0", f"Mul.mul.1.{T0}.4.0.0.0", f"Mul.mul.1.{T0}.4.1.0.0", f"Mul.mul.1.{T0}",
    f"Big.big.18446744073709551616.{T0}", f"Big.big2.1.{1 << 70}", f"Sub.\u00e9t\u00e9.1.{T0 + 2}",
    f"Sub.b\udcff.1.{T0 + 2}", f"Sub.a\udcfe.1.{T0 + 2}", f"Sub.\u00ff.1.{T0 + 2}",
    f"conv1.0.{T0}.npy", f"conv1.0.{T0 + 1}.npy", f"conv1.1.{T0}.pb", f"x.0.{T0}.quant", f"\u00e9.0.{T0}.npy",
    f"b\udcff.0.{T0}.npy", f"big.0.{1 << 64}.npy", f"Add.add.1.{T0}.output.0.npy", "README.md", "statistic.csv",
    "mapping.csv", "12345", "12345.npy", ".dumpcmp-x.tmp", f"Add.locked.1.{T0}", f"locked.0.{T0}.npy",
]


def reference_walk(folder: str):
    """The folder's device dumps in execution order, its ground truth by key (newest wins) and its skip reasons,
    found by the standard library and naming.parse_name alone."""
    mapping = naming.read_mapping(folder, problems=[])
    device, framework, skipped = [], [], {}
    for item in os.scandir(folder):
        if item.name.startswith(".dumpcmp-") and item.name.endswith(".tmp"):
            continue
        if not item.is_file():
            skipped[item.path] = "not a regular file (a broken link, socket, ...)" if not item.is_dir() else None
            continue
        if item.name in naming.BOOKKEEPING_FILES or item.name == "statistic.csv":
            continue
        try:
            parsed = naming.parse_name(mapping.get(item.name, item.name))
        except NamingError:
            skipped[item.path] = "?"
            continue
        if not os.access(item.path, os.R_OK):
            skipped[item.path] = "not readable (permission denied)"
        elif isinstance(parsed, DeviceDumpName):
            device.append(DumpEntry(item.path, item.name, parsed))
        elif isinstance(parsed, FrameworkDumpName):
            framework.append(item)
    best = naming.newest_by_key([(naming.parse_name(f.name), f.path) for f in framework],
                                key=lambda x: x[0].key, timestamp=lambda x: x[0].timestamp, tie=lambda x: x[1])
    return sorted(device, key=DumpEntry.order), {k: best[k][1] for k in sorted(best)}, skipped


def test_a_folder_scans_as_the_python_rules_say(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    for name in NAMES:
        (folder / name).write_bytes(b"x")
    (folder / "mapping.csv").write_text(f"12345,Hashed.hashed.9.{T0}\n")
    os.symlink(folder / NAMES[0], folder / f"Link.link.1.{T0 + 9}")
    os.symlink(tmp_path / "missing", folder / f"Broken.broken.1.{T0}")
    os.symlink(tmp_path, folder / "sub")  # a folder by a link: walked (its own files scanned too)
    os.mkfifo(folder / f"Fifo.fifo.1.{T0}")
    index = scan(folder)
    device, framework, skipped = reference_walk(str(folder))
    (run,) = [g for g in index.groups if g.key.folder == str(folder)]
    hashed = [e for e in run.entries if e.file_name == "12345"]
    assert [e.name.op_name for e in hashed] == ["hashed"]
    assert [(e.path, e.name) for e in run.entries if e.file_name != "12345"] == \
        [(e.path, e.name) for e in device if e.file_name != "12345"]
    assert [e.path for e in run.entries] == [e.path for e in sorted(run.entries, key=DumpEntry.order)]
    gt = {k: e.path for k, e in index.ground_truth.files.items() if os.path.dirname(e.path) == str(folder)}
    assert gt == framework and list(gt) == list(framework)
    reasons = {s.path: s.reason for s in index.skipped}
    for path, reason in skipped.items():
        if reason not in (None, "?"):
            assert reasons[path] == reason, path
    assert reasons[str(folder / f"Broken.broken.1.{T0}")] == "not a regular file (a broken link, socket, ...)"
    assert reasons[str(folder / f"Fifo.fifo.1.{T0}")] == "not a regular file (a broken link, socket, ...)"
    assert reasons[str(folder / "README.md")].startswith("name fits no naming scheme")
    assert not any(".dumpcmp-" in s.path for s in index.skipped)
    gt_only = scan_ground_truth(folder)
    assert {k: e.path for k, e in gt_only.files.items() if os.path.dirname(e.path) == str(folder)} == framework


def test_many_folders_of_one_run_merge_in_execution_order(tmp_path):
    # {device}/{op_name}/ folders are one run: the entries of every folder, sorted together
    for k, op in enumerate(["b", "a", "c"]):
        for j in range(3):
            (tmp_path / "0" / op).mkdir(parents=True, exist_ok=True)
            (tmp_path / "0" / op / f"Add.{op}.{j}.{T0 + 3 * j + k}").write_bytes(b"")
    (run,) = scan(tmp_path).groups
    assert [e.path for e in run] == [e.path for e in sorted(run.entries, key=DumpEntry.order)]
    assert len(run) == 9
