"""The one safe writer (dumpcmp.support.files): planted symlinks, hostile names, concurrent writers, signals, a full
disk and stale temporaries of killed runs. Every test checks what is on disk afterwards, inside and outside the
folder."""

from __future__ import annotations

import errno
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from dumpcmp.support import files as _io
from helpers.signal_sweep import fake_command_child
from dumpcmp.errors import ConfigError, DumpcmpError


def leftovers(folder) -> list[str]:
    return sorted(n for n in os.listdir(folder) if n.startswith(".dumpcmp-"))


@pytest.fixture
def victim(tmp_path):
    """A file outside the output folder that a planted symlink points at: it must never change."""
    v = tmp_path / "victim.txt"
    v.write_text("precious")
    return v


def test_symlink_at_the_final_name_is_refused_then_replaced_itself(tmp_path, victim):
    out = tmp_path / "out"
    out.mkdir()
    link = out / "result.csv"
    link.symlink_to(victim)
    with pytest.raises(ConfigError, match="exists"):
        _io.atomic_write_text(link, "new", force=False)
    assert victim.read_text() == "precious" and link.is_symlink()
    _io.atomic_write_text(link, "new", force=True)
    assert victim.read_text() == "precious"
    assert not link.is_symlink() and link.read_text() == "new"
    assert leftovers(out) == []


def test_dangling_symlink_counts_as_taken(tmp_path):
    link = tmp_path / "r.csv"
    link.symlink_to(tmp_path / "elsewhere" / "nothing")
    with pytest.raises(ConfigError):
        _io.atomic_write_text(link, "x", force=False)
    assert not (tmp_path / "elsewhere").exists()


def test_temporaries_are_unpredictable_exclusive_and_never_follow_links(tmp_path, victim):
    names = {_io.temp_name("x") for _ in range(100)}
    assert len(names) == 100
    assert all(n.startswith(".dumpcmp-") and f"-{os.getpid()}-" in n and n.endswith(".tmp") for n in names)
    # even a guessed name holding a symlink is not followed: O_EXCL | O_NOFOLLOW fails, it never truncates
    planted = tmp_path / _io.temp_name("guess")
    planted.symlink_to(victim)
    with pytest.raises(FileExistsError):
        os.open(planted, _io._OPEN_FLAGS, 0o666)
    assert victim.read_text() == "precious"


@pytest.mark.parametrize("name", ["a\nb.csv", "-rf.csv", "é" * 120 + ".csv", "x" * 255, " .csv", "a\rb.csv"])
def test_hostile_names_are_written_exactly_in_place(tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    _io.atomic_write_text(out / name, "v", force=False)
    assert os.listdir(out) == [name] and os.listdir(tmp_path) == ["out"]


def test_non_utf8_name(tmp_path):
    name = os.fsdecode(b"r\xff\xfe.csv")
    _io.atomic_write_text(tmp_path / name, "v", force=False)
    assert os.listdir(os.fsencode(tmp_path)) == [b"r\xff\xfe.csv"]


def _race(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        _io.atomic_write_text(path, f"{os.getpid()}\n", force=False)
        results.put("won")
    except DumpcmpError:
        results.put("refused")


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_writers_never_both_win(tmp_path, round_):
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    path = str(tmp_path / "result.csv")
    procs = [ctx.Process(target=_race, args=(path, barrier, results)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    outcome = sorted(results.get(timeout=5) for _ in procs)
    assert outcome == ["refused"] * 5 + ["won"]
    assert leftovers(tmp_path) == []


def test_a_full_disk_leaves_nothing(tmp_path):
    def write(f):
        f.write(b"partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    (tmp_path / "keep.npy").write_bytes(b"old")
    with pytest.raises(DumpcmpError, match="keep.npy: cannot write the file: No space left on device"):
        _io.atomic_write(tmp_path / "keep.npy", write, force=True)
    assert (tmp_path / "keep.npy").read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_file_set_is_all_or_nothing(tmp_path):
    (tmp_path / "b.csv").write_text("theirs")
    with pytest.raises(ConfigError, match="b.csv: already exists"):
        with _io.file_set(tmp_path, force=False) as s:
            for n in ("a.csv", "b.csv", "c.csv"):
                _io.atomic_write_text(s.path(n), n)
    assert sorted(os.listdir(tmp_path)) == ["b.csv"] and (tmp_path / "b.csv").read_text() == "theirs"
    with pytest.raises(RuntimeError):
        with _io.file_set(tmp_path, force=True) as s:
            _io.atomic_write_text(s.path("a.csv"), "a")
            raise RuntimeError("stopped half way")
    assert sorted(os.listdir(tmp_path)) == ["b.csv"]
    with _io.file_set(tmp_path, force=True) as s:
        for n in ("a.csv", "b.csv"):
            _io.atomic_write_text(s.path(n), n)
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "b.csv"] and (tmp_path / "b.csv").read_text() == "b.csv"


def test_atomic_folder(tmp_path, victim):
    target = tmp_path / "set"
    with _io.atomic_folder(target) as tmp:
        (tmp / "x").write_text("1")
        assert not target.exists()
    assert (target / "x").read_text() == "1"
    with pytest.raises(ConfigError):
        with _io.atomic_folder(target):
            pass
    link = tmp_path / "linkset"
    link.symlink_to(tmp_path)
    with _io.atomic_folder(link, force=True) as tmp:
        (tmp / "y").write_text("2")
    assert not link.is_symlink() and (link / "y").read_text() == "2" and victim.read_text() == "precious"
    assert leftovers(tmp_path) == []


def test_stale_temporaries_of_dead_runs_are_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".dumpcmp-{_io._HOST}-{dead}-{'0' * 32}.result.csv.tmp"
    stale.write_text("957 MB of a killed run")
    stale_dir = tmp_path / f".dumpcmp-{_io._HOST}-{dead}-{'1' * 32}.detail.tmp"
    stale_dir.mkdir()
    live = tmp_path / f".dumpcmp-{_io._HOST}-{os.getppid()}-{'2' * 32}.x.tmp"  # a running process: kept
    live.write_text("busy")
    other_host = tmp_path / f".dumpcmp-ffffffff-{dead}-{'3' * 32}.x.tmp"
    other_host.write_text("not ours to judge")
    removed = _io.sweep_stale(tmp_path)
    assert sorted(removed) == sorted([str(stale), str(stale_dir)])
    assert live.exists() and other_host.exists()


CHILD = fake_command_child("""
    import time
    from dumpcmp.support import files as _io

    def slow(f):
        f.write(b"x" * 1000)
        print("writing", flush=True)
        time.sleep(60)

    def run(args):
        _io.atomic_write(sys.argv[1] + "/out.bin", slow, force=False)
        with _io.file_set(sys.argv[1]) as s:
            _io.atomic_write(s.path("a"), slow)
        return 0
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signals_leave_nothing_behind(tmp_path, sig):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    assert leftovers(tmp_path)  # the temporary exists while it writes
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == (130 if sig == signal.SIGINT else 128 + sig), err
    assert "Traceback" not in err
    assert os.listdir(tmp_path) == []


def test_write_dump_and_convert_never_follow_planted_links(tmp_path, victim):
    from dumpcmp import open_dump, write_dump
    from dumpcmp.dumps.convert import write_txt

    out = tmp_path / "out"
    out.mkdir()
    (out / "d.dump").symlink_to(victim)
    with pytest.raises(ConfigError):
        write_dump(out / "d.dump", outputs=[np.ones(4, np.float32)], force=False)
    write_dump(out / "d.dump", outputs=[np.ones(4, np.float32)], force=True)
    assert victim.read_text() == "precious" and open_dump(out / "d.dump").outputs[0].array().sum() == 4
    (out / "v.txt").symlink_to(victim)
    with pytest.raises(DumpcmpError):
        write_txt(out / "v.txt", np.ones(3))
    assert victim.read_text() == "precious" and leftovers(out) == []


def test_mapping_csv_is_not_written_through_a_link(tmp_path, victim):
    from dumpcmp.dumps import naming

    (tmp_path / naming.MAPPING_FILE).symlink_to(victim)
    with pytest.raises(DumpcmpError, match="symbolic link"):
        naming.safe_file_name("n" * 300, tmp_path)
    assert victim.read_text() == "precious"


def test_cli_result_file_through_a_planted_link(tmp_path, victim):
    from dumpcmp.cli import main
    from dumpcmp.dumps.samples import make_sample_tree

    device = make_sample_tree(tmp_path / "s")
    link = tmp_path / "r.csv"
    link.symlink_to(victim)
    args = ["compare", "-l", str(device), "-r", str(tmp_path / "s" / "ground_truth"), "-o",
            str(link), "--quiet"]
    assert main(args) == 2
    assert victim.read_text() == "precious"
    assert main(args + ["--force"]) in (0, 1)
    assert victim.read_text() == "precious" and not link.is_symlink()
    assert leftovers(tmp_path) == []


def test_detail_export_replaces_planted_links_not_their_targets(tmp_path, victim):
    from dumpcmp.cli import main
    from dumpcmp.dumps.samples import make_sample_tree

    device = make_sample_tree(tmp_path / "s")
    out = tmp_path / "detail"
    args = ["compare", "-l", str(device), "-r", str(tmp_path / "s" / "ground_truth"), "-d", "conv1", "-o", str(out)]
    assert main(args) == 0
    files = sorted(os.listdir(out))
    assert files and leftovers(out) == []
    for name in files:  # every file of the set becomes a link to the victim
        os.remove(out / name)
        (out / name).symlink_to(victim)
    assert main(args) == 2
    assert victim.read_text() == "precious" and all((out / n).is_symlink() for n in files)
    assert main(args + ["--force"]) == 0
    assert victim.read_text() == "precious" and not any((out / n).is_symlink() for n in files)
    assert leftovers(out) == [] and sorted(os.listdir(out)) == files


# ---- sets: a convert or a detail export stopped part way leaves nothing ------------------------------------------

def framework_dumps(folder, n=5):
    from dumpcmp import write_dump

    folder.mkdir()
    for i in range(n):
        write_dump(folder / f"op{i}.0.1700000000000000.pb", outputs=[np.full(4, i, np.float32)])
    return folder


def everything(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, dirs, files in os.walk(root) for f in dirs + files)


@pytest.mark.parametrize("existing", [False, True])
def test_convert_stopped_on_the_third_file_leaves_no_output(tmp_path, monkeypatch, existing):
    from dumpcmp.dumps import convert as C

    src = framework_dumps(tmp_path / "pb")
    out = tmp_path / "new" / "npy"
    if existing:
        out.mkdir(parents=True)
    before = everything(tmp_path)
    real, calls = C._write_npy, []

    def third_fails(path, array, force):
        calls.append(path)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C (or SIGTERM, which unwinds the same way) on the 3rd file
        real(path, array, force)

    monkeypatch.setattr(C, "_write_npy", third_fails)
    with pytest.raises(KeyboardInterrupt):
        C.dump_to_npy(src, out, type="tf")
    assert len(calls) == 3
    assert everything(tmp_path) == before  # no output, no temporary, no folder the run made
    monkeypatch.setattr(C, "_write_npy", real)
    report = C.dump_to_npy(src, out, type="tf")  # nothing in the way of the next run
    assert report.ok and len(os.listdir(out)) == 5


def test_view_stopped_part_way_leaves_no_output(tmp_path, monkeypatch):
    from dumpcmp.dumps import convert as C
    from dumpcmp import write_dump

    dump = tmp_path / "Add.add.3.1700000000000000"
    write_dump(dump, outputs=[np.ones(4, np.float32)], inputs=[np.ones(4, np.float32), np.zeros(4, np.float32)])
    real = C.write_txt

    def fails(path, array, force=False):
        if os.path.basename(path).endswith(".input.1.txt"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, array, force=force)

    monkeypatch.setattr(C, "write_txt", fails)
    with pytest.raises(DumpcmpError, match="out: cannot write the converted files: No space left on device"):
        C.view(dump, tmp_path / "out", txt=True)
    assert not (tmp_path / "out").exists() and leftovers(tmp_path) == []


CONVERT_CHILD = textwrap.dedent("""
    import sys, time
    from dumpcmp.dumps import convert as C
    from dumpcmp.cli import main

    real, calls = C._write_npy, []

    def slow(path, array, force):
        calls.append(path)
        real(path, array, force)
        if len(calls) == 2:
            print("writing", flush=True)
            time.sleep(60)

    C._write_npy = slow
    sys.exit(main(["convert", "-type", "tf", "-target", "numpy", "-i", sys.argv[1], "-o", sys.argv[2]]))
""")


def test_convert_killed_by_sigterm_leaves_nothing(tmp_path):
    src = framework_dumps(tmp_path / "pb")
    out = tmp_path / "npy"
    proc = subprocess.Popen([sys.executable, "-c", CONVERT_CHILD, str(src), str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    assert out.is_dir() and leftovers(out)  # two files done, held back in the private folder
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["pb"]


def test_failed_detail_export_leaves_no_folder_it_made(tmp_path, monkeypatch):
    from dumpcmp.comparison import detail
    from dumpcmp.cli import main
    from dumpcmp.dumps.samples import make_sample_tree

    device = make_sample_tree(tmp_path / "s")
    out = tmp_path / "new" / "detail"

    def fails(*args, **kwargs):
        raise DumpcmpError("disk full (simulated)")

    monkeypatch.setattr(detail.core.detail, "export_detail", fails)
    args = ["compare", "-l", str(device), "-r", str(tmp_path / "s" / "ground_truth"), "-d", "conv1", "-o", str(out)]
    assert main(args) == 2
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()  # a folder that existed before is never removed
    assert main(args[:-1] + [str(tmp_path / "kept")]) == 2
    assert (tmp_path / "kept").is_dir() and os.listdir(tmp_path / "kept") == []
