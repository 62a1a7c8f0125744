"""The order corpus: device dumps whose execution order and newest file depend on how timestamps and task ids
compare (as numbers or as text), and the original tool's outputs on it (tests/oracle/expected/order/).

The original (72c5bd4c and msprobe 8ff00da3 alike, dump_parse/dump_utils.py `sort_dump_file_list`, dump.py
`get_op_dump_data`, compare_rule.py `_sort_file_by_timestamp`) sorts the files of one op by their timestamp as an
integer (a timestamp that is not 16 digits counts as 0) and takes the last; it orders ops by that timestamp, the
same way. Nothing else decides: equal timestamps keep the order `os.listdir` gave, which the file system chooses.
So where timestamps differ the original's answer is a fact to match; where they are equal it has none, and
dumpcmp's rule (task id, then FFTS+ context and thread, then the file name, all as numbers where they are numbers:
the order the runtime launched them) is its own.

The corpus (NPU vs NPU, no graph; `left` and `right`, the same ops):
  - `Relu.short.3.999999999999999` (15 digits: the original counts it as 0) and `Relu.long.4.1000000000000000`:
    timestamps of different lengths (as text, `(1000...` sorts before `(999...`);
  - `Add.tie_a.9.T` and `Add.tie_b.10.T`: two ops at one timestamp, tasks 9 and 10;
  - `Sub.late_ts` on the left twice, `.11.999999999999999` and `.12.1000000000000000`, with different outputs; the
    right holds only the second's values: the metrics say which file was taken;
  - `Mul.dup` on the left twice, tasks 9 and 10 at one timestamp, different outputs; the right holds task 10's.

    python tests/oracle/make_order.py --msaccucmp CHECKOUT --python PYTHON \
        --msprobe-current MSPROBE_CHECKOUT --python-current PYTHON   (writes expected/order/)

(the interpreters as regenerate.py's; both versions run on one corpus, so one directory listing explains both.)
`build(directory)` writes the corpus; test_order.py runs dumpcmp on it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import dumpcmp  # noqa: E402

T = 1700000000000100
SHORT = 999999999999999
LONG = 1000000000000000
EXPECTED = HERE / "expected" / "order"
#: the original's result file of the corpus, NPU vs NPU
RESULT = "order_result.csv"
#: the current version's (msprobe 8ff00da3, through tests/oracle/standin's dump parser)
CURRENT_RESULT = "order_current_result.csv"


def _values(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((2, 3)).astype(np.float32)


def build(directory: str | Path) -> dict[str, Path]:
    """Write the corpus under `directory`: {"left": folder, "right": folder}."""
    root = Path(directory)
    left, right = root / "left", root / "right"
    left.mkdir(parents=True)
    right.mkdir(parents=True)
    x = _values(1)
    # (file name, op name, output on the left, output on the right or None: no such file on the right)
    files = [
        (f"Relu.short.3.{SHORT}", "short", _values(2), _values(2) * 1.5),
        (f"Relu.long.4.{LONG}", "long", _values(3), _values(3) * 1.25),
        (f"Add.tie_a.9.{T}", "tie_a", _values(4), _values(4) + 0.5),
        (f"Add.tie_b.10.{T}", "tie_b", _values(5), _values(5) - 0.25),
        (f"Sub.late_ts.11.{SHORT}", "late_ts", _values(6), None),
        (f"Sub.late_ts.12.{LONG}", "late_ts", _values(7), _values(7)),
        (f"Mul.dup.9.{T + 1}", "dup", _values(8), None),
        (f"Mul.dup.10.{T + 1}", "dup", _values(9), _values(9)),
    ]
    for name, op, out_left, out_right in files:
        stamp = int(name.rsplit(".", 1)[1])
        dumpcmp.write_dump(left / name, op_name=op, inputs=[x], outputs=[out_left], dump_time=stamp)
        if out_right is not None:
            dumpcmp.write_dump(right / name, op_name=op, inputs=[x], outputs=[out_right], dump_time=stamp)
    return {"left": left, "right": right}


def original_runs(python: str, tool: Path | None, expected: Path = EXPECTED, python_current: str | None = None,
                  current: Path | None = None) -> None:
    """Run 72c5bd4c's msaccucmp (`tool`: the checkout holding src/compare/msaccucmp.py) and, with `current` (a
    checkout holding python/msprobe/msaccucmp), the current one through the stand-in dump parser, on one corpus;
    keep their results and the directory order they both saw in `expected`."""
    import regenerate

    with tempfile.TemporaryDirectory(prefix="oracle-order-") as tmp:
        root = Path(tmp).resolve()
        corpus = root / "corpus"
        paths = build(corpus)
        args = ["-m", str(paths["left"]), "-g", str(paths["right"])]
        kept: dict[str, Path] = {}
        if tool is not None:
            out = root / "out"
            out.mkdir()
            regenerate.run_tool(python, tool, [*args, "-out", str(out)])
            kept[RESULT] = regenerate.model_result(out)
        if current is not None:
            out = root / "current"
            out.mkdir()
            lib = regenerate.build_standin(out)
            env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(lib),
                                                                                  os.environ.get("LD_LIBRARY_PATH")])))
            cwd = current / regenerate.CURRENT_TOOL
            proc = subprocess.run([python_current or python, str(cwd / "msaccucmp.py"), "compare", *args, "-out",
                                   str(out)], cwd=cwd, capture_output=True, text=True, env=env)
            if proc.returncode not in (0, 2) or "Failed to load libascend_dump_parser.so" in proc.stdout + proc.stderr:
                sys.stderr.write((proc.stdout + proc.stderr)[-4000:])
                raise SystemExit(f"msaccucmp (current) failed ({proc.returncode})")
            kept[CURRENT_RESULT] = regenerate.model_result(out)
        if expected.exists():
            shutil.rmtree(expected)
        for name, found in kept.items():
            regenerate.keep(found, expected / name, corpus)
        listing = subprocess.run([python, "-c", "import os, sys; print(*os.listdir(sys.argv[1]), sep=chr(10))",
                                  str(paths["left"])], capture_output=True, text=True, check=True).stdout
        # the directory order the originals saw (it decides their ties): kept to read the results by
        (expected / "left_listing.txt").write_text(listing, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msaccucmp", type=Path, help="checkout holding src/compare/msaccucmp.py (72c5bd4c)")
    ap.add_argument("--python", default=sys.executable, help="interpreter that runs msaccucmp")
    ap.add_argument("--msprobe-current", type=Path, help="checkout holding python/msprobe/msaccucmp/msaccucmp.py")
    ap.add_argument("--python-current", help="interpreter that runs the current msaccucmp")
    args = ap.parse_args()
    if args.msaccucmp is None or args.msprobe_current is None:
        ap.error("give --msaccucmp and --msprobe-current: both run on one corpus, whose directory order is kept")
    original_runs(args.python, args.msaccucmp.resolve(), python_current=args.python_current,
                  current=args.msprobe_current.resolve())


if __name__ == "__main__":
    main()
