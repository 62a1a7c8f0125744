"""Run the original tool (msaccucmp) on the oracle corpus and keep its output files as tests/oracle/expected/.

    python tests/oracle/regenerate.py --msaccucmp /path/to/msprobe-checkout --python /path/to/its/python
    python tests/oracle/regenerate.py --msprobe-current /path/to/msprobe --python-current /path/to/its/python

`--msaccucmp` is a checkout of the original tool (the folder holding `src/compare/msaccucmp.py`, with its generated
`dump_data_pb2.py` beside it; see README "Agreement with the original tool"); `--python` the interpreter that runs
it (with the NumPy and protobuf it needs; the committed outputs come from NumPy 1.26). `--python-numpy2`, an
interpreter with NumPy 2, runs the single-operator cases again: the files that come out otherwise (the top-N files
whose tied or NaN errors the original orders by NumPy's argpartition) go to `expected/numpy2/`. This script needs
dumpcmp importable (it writes the corpus with `dumpcmp.write_dump`). It writes nothing of the original tool into this
repository: only the result files, with the corpus's temporary path replaced by `{CORPUS}`. Its `convert -d -f -s
-o -i -c -t` runs (make_corpus.convert_runs) are kept as expected/convert_runs/{name}/.

`--msprobe-current` is a checkout of the original's current version (msprobe 8ff00da3, the folder holding
`python/msprobe/msaccucmp/msaccucmp.py`), run by `--python-current` (NumPy 1.26, ml_dtypes; pandas and psutil for
its imports). It reads device dumps through CANN's `libascend_dump_parser.so`, which is not open source: the stand-in
`standin/dump_parser.cpp` is built (with the C++ compiler `CXX`, default c++) into a temporary folder put on its
`LD_LIBRARY_PATH`. Its runs (CURRENT_RUNS: device vs device, which it restores to the original shapes before
comparing) are kept as expected/{name}; given alone, it leaves the other expected files as they are.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402
from agreement import ADDED_RUNS, CURRENT_RUNS, MAPPING_RUNS, MODEL_RUNS, mapping_args, run_flags  # noqa: E402

PLACEHOLDER = "{CORPUS}"


def run_tool(python: str, tool: Path, args: list[str], command: str = "compare") -> str:
    cmd = [python, str(tool / "src" / "compare" / "msaccucmp.py"), command, *args]
    proc = subprocess.run(cmd, cwd=tool / "src" / "compare", capture_output=True, text=True)
    # The original exits 2 when an operator lacks a dump file although its files are complete.
    if proc.returncode not in (0, 2):
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"msaccucmp failed ({proc.returncode}): {' '.join(cmd)}")
    return proc.stdout + proc.stderr  # its log goes to standard error


def keep(src: Path, dst: Path, corpus: Path) -> None:
    """Copy one output file, the corpus's temporary path replaced by the placeholder (text files only)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix == ".npy":
        shutil.copyfile(src, dst)
        return
    data = src.read_bytes().replace(os.fsencode(corpus), PLACEHOLDER.encode())
    dst.write_bytes(data)


def model_result(out: Path) -> Path:
    found = sorted(glob.glob(str(out / "result_*.csv")))
    if len(found) != 1:
        raise SystemExit(f"expected one result_*.csv in {out}, found {found}")
    return Path(found[0])


def overflow_runs(python: str, tool: Path, root: Path, expected: Path, corpus: Path) -> None:
    """overflow -d DIR -out OUT -n N: its overflow_summary_{time}.txt, as expected/overflow/{run}.txt."""
    folder = make_corpus.write_overflow(corpus / "overflow")
    for name, top in make_corpus.OVERFLOW_RUNS.items():
        out = root / name
        out.mkdir()
        run_tool(python, tool, ["-d", str(folder), "-out", str(out), "-n", str(top)], command="overflow")
        found = sorted(out.glob("overflow_summary_*.txt"))
        if len(found) != 1:
            raise SystemExit(f"expected one overflow_summary_*.txt in {out}, found {found}")
        keep(found[0], expected / "overflow" / f"{name}.txt", corpus)


CURRENT_TOOL = Path("python") / "msprobe" / "msaccucmp"


def build_standin(folder: Path) -> Path:
    """Compile the stand-in libascend_dump_parser.so into `folder`; returns the folder."""
    source = HERE / "standin" / "dump_parser.cpp"
    cxx = os.environ.get("CXX", "c++")
    cmd = [cxx, "-std=c++17", "-O2", "-shared", "-fPIC", str(source), "-o", str(folder / "libascend_dump_parser.so")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building the stand-in parser failed: {' '.join(cmd)}\n{proc.stderr[-4000:]}")
    return folder


def current_runs(python: str, checkout: Path, root: Path, paths: dict[str, Path], expected: Path,
                 corpus: Path) -> None:
    """The current version's compare runs (CURRENT_RUNS), through the stand-in dump parser."""
    tool = checkout / CURRENT_TOOL
    lib = build_standin(root)
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(lib),
                                                                          os.environ.get("LD_LIBRARY_PATH")])))
    for name in CURRENT_RUNS:
        left, right, graph, _, _, _ = MODEL_RUNS[name]
        out = root / name
        out.mkdir()
        cmd = [python, str(tool / "msaccucmp.py"), "compare", "-m", str(paths[left]), "-g", str(paths[right]),
               *(["-f", str(paths[graph])] if graph else []), *run_flags(name, paths, original=True),
               "-out", str(out)]
        proc = subprocess.run(cmd, cwd=tool, capture_output=True, text=True, env=env)
        log = proc.stdout + proc.stderr
        if proc.returncode not in (0, 2) or "Failed to load libascend_dump_parser.so" in log:
            sys.stderr.write(log[-4000:])
            raise SystemExit(f"msaccucmp (current) failed ({proc.returncode}): {' '.join(cmd)}")
        keep(model_result(out), expected / name, corpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msaccucmp", type=Path, help="checkout holding src/compare/msaccucmp.py (72c5bd4c)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs msaccucmp")
    ap.add_argument("--python-numpy2", help="an interpreter with NumPy 2 that runs msaccucmp too")
    ap.add_argument("--msprobe-current", type=Path,
                    help="checkout of the current msprobe, holding python/msprobe/msaccucmp/msaccucmp.py")
    ap.add_argument("--python-current", default=sys.executable, help="interpreter that runs the current msaccucmp")
    ap.add_argument("--expected", type=Path, default=HERE / "expected", help="where the outputs go")
    args = ap.parse_args()
    if args.msaccucmp is None and args.msprobe_current is None:
        ap.error("give --msaccucmp, --msprobe-current or both")
    if args.msprobe_current is not None and not (args.msprobe_current / CURRENT_TOOL / "msaccucmp.py").is_file():
        raise SystemExit(f"{args.msprobe_current}: no {CURRENT_TOOL / 'msaccucmp.py'}")

    with tempfile.TemporaryDirectory(prefix="oracle-") as tmp:
        root = Path(tmp).resolve()
        corpus = root / "corpus"
        paths = make_corpus.build(corpus)
        expected = args.expected
        if args.msprobe_current is not None:
            (root / "current").mkdir()
            current_runs(args.python_current, args.msprobe_current.resolve(), root / "current", paths, expected,
                         corpus)
        if args.msaccucmp is not None:
            original_runs(args, root, corpus, paths, expected)
    total = sum(f.stat().st_size for f in expected.rglob("*") if f.is_file())
    print(f"{expected}: {sum(1 for f in expected.rglob('*') if f.is_file())} files, {total} bytes")


def original_runs(args: argparse.Namespace, root: Path, corpus: Path, paths: dict[str, Path], expected: Path) -> None:
    """72c5bd4c's runs: every expected file but the current version's is made anew."""
    tool = args.msaccucmp.resolve()
    if not (tool / "src" / "compare" / "msaccucmp.py").is_file():
        raise SystemExit(f"{tool}: no src/compare/msaccucmp.py")
    if expected.exists():
        for f in sorted(expected.iterdir()):
            if f.name not in CURRENT_RUNS and f.name != "order":  # expected/order/: make_order.py's
                if f.is_dir():
                    shutil.rmtree(f)
                else:
                    f.unlink()

    out = root / "model"
    out.mkdir()
    run_tool(args.python, tool, ["-m", str(paths["dump"]), "-g", str(paths["gt"]), "-f", str(paths["graph"]),
                                 "-out", str(out)])
    keep(model_result(out), expected / "model_result.csv", corpus)

    out = root / "quant"
    out.mkdir()
    run_tool(args.python, tool, ["-m", str(paths["q_dump"]), "-g", str(paths["q_gt"]), "-f", str(paths["q_graph"]),
                                 "-q", str(paths["q_rule"]), "-out", str(out)])
    keep(model_result(out), expected / "quant_result.csv", corpus)

    out = root / "npu_vs_npu"
    out.mkdir()
    run_tool(args.python, tool, ["-m", str(paths["dump"]), "-g", str(paths["npu2"]), "-out", str(out)])
    keep(model_result(out), expected / "npu_vs_npu_result.csv", corpus)

    for name in ADDED_RUNS:  # -c DIR -alg ... -a ..., -max N, -overflow_detection
        left, right, graph, _, _, _ = MODEL_RUNS[name]
        out = root / name
        out.mkdir()
        run_tool(args.python, tool, ["-m", str(paths[left]), "-g", str(paths[right]),
                                     *(["-f", str(paths[graph])] if graph else []),
                                     *run_flags(name, paths, original=True), "-out", str(out)])
        keep(model_result(out), expected / name, corpus)

    for name in MAPPING_RUNS:  # -map: its mapping_{time}.csv, as expected/mapping/{name}
        out = root / f"map_{name}"
        out.mkdir()
        run_tool(args.python, tool, [*mapping_args(name, paths, original=True), "-out", str(out)])
        found = sorted(out.glob("mapping_*.csv"))
        if len(found) != 1:
            raise SystemExit(f"expected one mapping_*.csv in {out}, found {found}")
        keep(found[0], expected / "mapping" / name, corpus)

    out = root / "convert"  # convert -d DUMP -out DIR: each tensor as {dump}.{input|output}.{i}.npy
    out.mkdir()
    run_tool(args.python, tool, ["-d", str(make_corpus.convert_dump(paths)), "-out", str(out)], command="convert")
    for f in sorted(out.iterdir()):
        keep(f, expected / "convert" / f.name, corpus)

    convert_runs(args.python, tool, paths, expected)

    for name in make_corpus.file_compare_cases():  # file_compare -m -g -out: its file_result_{time}.txt
        out = root / f"file_compare_{name}"
        out.mkdir()
        folder = paths["file_compare"]
        log = run_tool(args.python, tool, ["-m", str(folder / f"{name}_my.npy"), "-g",
                                           str(folder / f"{name}_golden.npy"), "-out", str(out)],
                       command="file_compare")
        # its console lines (names, values, messages): the [INFO] lines between the file names and the result
        lines = [ln.split("[INFO] ", 1)[1] for ln in log.splitlines() if "[INFO] " in ln]
        start = next(i for i, ln in enumerate(lines) if ln.startswith("The ground truth file is")) + 1
        end = next(i for i, ln in enumerate(lines) if ln.startswith("The file compare result"))
        (out / "console.txt").write_text("".join(ln + "\n" for ln in lines[start:end]), encoding="utf-8")
        keep(out / "console.txt", expected / "file_compare" / f"{name}.console.txt", corpus)
        found = sorted(out.glob("file_result_*.txt"))
        if len(found) != 1:
            raise SystemExit(f"expected one file_result_*.txt in {out}, found {found}")
        keep(found[0], expected / "file_compare" / f"{name}.txt", corpus)

    overflow_runs(args.python, tool, root, expected, corpus)

    for op, kind, index in make_corpus.SINGLE_OPS:
        out = root / f"single_{op}_{kind}_{index}"
        out.mkdir()
        tool_flags = {"-l": "-m", "-r": "-g", "-f": "-f", "-q": "-q"}
        corpus_args = make_corpus.single_op_args(paths, op)
        single = [tool_flags.get(a, a) for a in corpus_args] + ["-op", op, "-o" if kind == "output" else "-i",
                                                                str(index)]
        run_tool(args.python, tool, single + ["-out", str(out)])
        for f in sorted(out.iterdir()):
            keep(f, expected / "single" / f.name, corpus)
        if args.python_numpy2:
            out2 = root / f"numpy2_{op}_{kind}_{index}"
            out2.mkdir()
            run_tool(args.python_numpy2, tool, single + ["-out", str(out2)])
            for f in sorted(out2.iterdir()):
                keep(f, root / "cmp" / f.name, corpus)
                if (root / "cmp" / f.name).read_bytes() != (expected / "single" / f.name).read_bytes():
                    keep(f, expected / "numpy2" / "single" / f.name, corpus)


def convert_runs(python: str, tool: Path, paths: dict[str, Path], expected: Path) -> None:
    """make_corpus.convert_runs (convert -d -f -s -o -i -c -t): each run's files as expected/convert_runs/{name}/,
    byte for byte (its convert_failed_file_list.txt left out: it holds the corpus's paths)."""
    root = Path(tempfile.mkdtemp(prefix="convert_runs_"))
    try:
        for name, flags in make_corpus.convert_runs(paths).items():
            out = root / name
            out.mkdir()
            cmd = [python, str(tool / "src" / "compare" / "msaccucmp.py"), "convert", *flags, "-out", str(out)]
            proc = subprocess.run(cmd, cwd=tool / "src" / "compare", capture_output=True, text=True)
            if (proc.returncode != 0) != name.endswith("_fails"):
                sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
                raise SystemExit(f"msaccucmp exited {proc.returncode}: {' '.join(cmd)}")
            kept = expected / "convert_runs" / name
            if kept.exists():
                shutil.rmtree(kept)
            kept.mkdir(parents=True)
            for f in sorted(out.iterdir()):
                if f.name != "convert_failed_file_list.txt":
                    shutil.copyfile(f, kept / f.name)
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
