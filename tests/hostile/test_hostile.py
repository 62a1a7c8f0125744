"""Every subcommand over a corpus of broken and hostile inputs: exit 0, 1 or 2 with one line, never a traceback,
another exit code, a signal or a hang. The cases run in one child process (a crash there names the case), each
in-process through `dumpcmp.cli.main`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.hostile import corpus  # noqa: E402

from dumpcmp.cli import COMMANDS  # noqa: E402


def cases(c: dict[str, list[Path]], out: Path) -> list[list[str]]:
    """argv lists per subcommand; `out` is a fresh folder per case (the driver replaces {out})."""
    s = lambda p: os.fspath(p)  # noqa: E731
    good_dev = next(d for d in c["dump_dirs"] if d.name == "good")
    good_gt = next(d for d in c["gt_dirs"] if d.name == "good")
    any_json = c["jsons"]
    runs: dict[str, list[list[str]]] = {name: [] for name in COMMANDS}
    for d in c["dumps"] + c["npys"] + c["dump_dirs"]:
        runs["info"] += [[s(d)], ["--json", s(d)]]
    for d in c["dumps"]:
        runs["view"] += [[s(d), "-o", "{out}"], [s(d), "-o", "{out}", "--txt"]]
        runs["shape"] += [["-i", s(d), "-format", "NCHW", "-o", "{out}"],
                          ["-i", s(d), "-format", "ND", "-o", "{out}", "--padded"],
                          ["-i", s(d), "-format", "NHWC", "-o", "{out}", "-shape", "0,1,2,3"]]
    for d in c["dump_dirs"]:
        runs["convert"] += [["-type", "offline", "-target", "numpy", "-i", s(d), "-o", "{out}"]]
        runs["compare"] += [["-l", s(d), "-r", s(good_gt), "-o", "{out}/r.csv"],
                            ["-l", s(d), "-r", s(d), "-o", "{out}/r.csv"],
                            ["-l", s(d), "-r", s(good_gt), "-d", "conv1", "-o", "{out}"],
                            ["-l", s(d), "-r", s(d), "-d", "conv1", "-o", "{out}", "--format", "npy"]]
        runs["bench"] += [["dumps", s(d)]]
        runs["overflow"] += [[s(d), "-o", "{out}", "-n", "3"]]
    for g in c["gt_dirs"]:
        runs["compare"] += [["-l", s(good_dev), "-r", s(g), "-o", "{out}/r.csv"],
                            ["-l", s(good_dev), "-r", s(g), "-d", "conv1", "-o", "{out}"]]
        runs["convert"] += [["-type", "offline", "-target", "dump", "-i", s(g), "-o", "{out}"]]
    for j in any_json:
        runs["compare"] += [["-l", s(good_dev), "-r", s(good_gt), "-f", s(j), "-o", "{out}/r.csv"],
                            ["-l", s(good_dev), "-r", s(good_gt), "-q", s(j), "-o", "{out}/r.csv"]]
        runs["acl-json"] += [["check", s(j)]]
        runs["debug-config"] += [["check", s(j)]]
        runs["simulate"] += [[s(c["models"][0]), "--acl-json", s(j), "-o", "{out}"]]
    for m in c["models"]:
        runs["golden"] += [[s(m), "-i", s(c["npys"][0]), "-o", "{out}"], [s(m), "--seed", "1", "-o", "{out}"]]
        runs["simulate"] += [[s(m), "--seed", "1", "-o", "{out}"]]
        runs["simulate"] += [[s(m), "--target", "sigmastar", "--seed", "1", "-o", "{out}"]]
    for d in c["dumps"] + c["npys"]:
        runs["debug-config"] += [["check", s(d)]]
    for n in c["npys"]:
        runs["golden"] += [[s(c["models"][1]), "-i", s(n), "-o", "{out}"]]
    no_input = {"demo", "sample"}  # they read nothing of the user's
    argv: list[list[str]] = []
    for name, lists in runs.items():
        if not lists and name not in no_input:
            # a command this test does not know yet: the inputs as a positional, after -i and after -l/-r
            for d in c["dumps"] + c["npys"]:
                lists += [[s(d)], ["-i", s(d), "-o", "{out}"], ["-l", s(d.parent), "-r", s(good_gt), "-o", "{out}"]]
        argv += [[name] + a for a in lists]
    return argv


DRIVER = textwrap.dedent("""
    import contextlib, io, json, os, sys, traceback
    from dumpcmp.cli import main
    cases, outroot, progress = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
    results = []
    for k, argv in enumerate(cases):
        out = os.path.join(outroot, str(k))
        argv = [a.replace("{out}", out) for a in argv]
        with open(progress, "w") as p:
            p.write(json.dumps(argv))
        err, std = io.StringIO(), io.StringIO()
        tb = ""
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
                rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 2
        except BaseException:
            rc, tb = -1, traceback.format_exc()
        text = err.getvalue()
        if "Traceback" in text:
            tb = tb or text
        results.append({"argv": argv, "rc": rc, "traceback": tb, "stderr": text[:600]})
    json.dump(results, sys.stdout)
""")


def test_every_subcommand_over_broken_inputs(tmp_path):
    c = corpus(tmp_path / "in")
    argv = cases(c, tmp_path / "out")
    (tmp_path / "cases.json").write_text(json.dumps(argv))
    (tmp_path / "driver.py").write_text(DRIVER)
    env = dict(os.environ, PYTHONWARNINGS="ignore", DUMPCMP_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "cases.json"),
                           str(tmp_path / "out"), str(tmp_path / "progress")], capture_output=True, text=True,
                          timeout=600, env=env, cwd=tmp_path)
    if proc.returncode != 0:
        last = (tmp_path / "progress").read_text() if (tmp_path / "progress").exists() else "?"
        pytest.fail(f"the walk died with code {proc.returncode} during dumpcmp {last}\n{proc.stderr[-3000:]}")
    results = json.loads(proc.stdout)
    assert len(results) == len(argv) > 300
    bad = [r for r in results if r["traceback"] or r["rc"] not in (0, 1, 2)]
    report = "\n\n".join(f"dumpcmp {' '.join(r['argv'])} -> {r['rc']}\n{r['traceback'][-1500:]}" for r in bad[:5])
    assert not bad, f"{len(bad)} of {len(results)} cases broke:\n{report}"
    # each refusal starts with dumpcmp's own line (an error naming the input, or argparse's usage)
    for r in results:
        if r["rc"] == 2 and r["stderr"]:  # (acl-json check reports its problems on stdout)
            assert r["stderr"].startswith(("dumpcmp", "usage: dumpcmp")), r["stderr"]
