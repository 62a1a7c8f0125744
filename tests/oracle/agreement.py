"""dumpcmp's outputs on the oracle corpus next to the original tool's (tests/oracle/expected/).

`run_ours(directory)` builds the corpus and writes dumpcmp's files the way the original's were produced;
`model_rows` / `cell_diffs` / `single_files` compare them. Run as a script it prints the agreement figures:

    python tests/oracle/agreement.py
"""

from __future__ import annotations

import csv
import io
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected"
sys.path.insert(0, str(HERE))

import make_corpus  # noqa: E402

PLACEHOLDER = "{CORPUS}"
# the metric columns of a result file (compared to their printed digits; every other column is text)
METRICS = {"CosineSimilarity", "MaxAbsoluteError", "AccumulatedRelativeError", "RelativeEuclideanDistance",
           "KullbackLeiblerDivergence", "StandardDeviation", "MeanAbsoluteError", "RootMeanSquareError",
           "MaxRelativeError", "MeanRelativeError"}
# the custom algorithm runs' flags (the same spelling in both tools; {custom}: the corpus's -c folder)
CUSTOM_FLAGS = ("-c", "{custom}", "-alg", make_corpus.CUSTOM_ALG_SELECTION, "-a", make_corpus.CUSTOM_ALG_OPTIONS)
CUSTOM_NPU_FLAGS = ("-c", "{custom}", "-alg", "MeanDiff,3,Raiser", "-a", "MeanDiff:scale=1")
#: the runs of the original's current version (msprobe 8ff00da3, through the stand-in dump parser: regenerate.py
#: --msprobe-current), as MODEL_RUNS: device vs device, each tensor restored to its original shape before comparing
CURRENT_RUNS = {
    "npu_vs_npu_current_result.csv": ("dump", "npu2", None, None, (), ()),
    "custom_alg_npu_vs_npu_current_result.csv": ("dump", "npu2", None, None, CUSTOM_NPU_FLAGS, CUSTOM_NPU_FLAGS),
    "ffts_current_result.csv": ("ffts_dump", "ffts_npu2", None, None, (), ()),
}
# dumpcmp compares device dumps restored by default (as the current version); 72c5bd4c's runs need the stored buffers
RAW = ("--npu-vs-npu", "raw")
# result file -> (left, right, graph, quant rule) corpus paths of its run, then its flags as dumpcmp spells them
# and as the original does; NPU vs NPU has no graph
MODEL_RUNS = {
    "model_result.csv": ("dump", "gt", "graph", None, (), ()),
    "npu_vs_npu_result.csv": ("dump", "npu2", None, None, RAW, ()),
    "quant_result.csv": ("q_dump", "q_gt", "q_graph", "q_rule", (), ()),
    "custom_alg_result.csv": ("dump", "gt", "graph", None, CUSTOM_FLAGS, CUSTOM_FLAGS),
    "custom_alg_npu_vs_npu_result.csv": ("dump", "npu2", None, None, CUSTOM_NPU_FLAGS + RAW, CUSTOM_NPU_FLAGS),
    "max_result.csv": ("dump", "gt", "graph", None, ("--max-elements", "10"), ("-max", "10")),
    "overflow_result.csv": ("dump", "gt", "graph", None, ("--overflow-like-original",), ("-overflow_detection",)),
    "alg_order_result.csv": ("dump", "gt", "graph", None, ("-alg", "7,0,3"), ("-alg", "7", "0", "3")),
    "range_result.csv": ("dump", "gt", "graph", None, ("--op-range", "3,10,2"), ("-r", "3,10,2")),
    "select_result.csv": ("dump", "gt", "graph", None, ("--op-select", "1,4,7,13"), ("-s", "1,4,7,13")),
    "ffts_result.csv": ("ffts_dump", "ffts_npu2", None, None, RAW, ()),
    "ffts_slices_result.csv": ("ffts_dump", "ffts_npu2", None, None, ("--ffts",) + RAW, ("-ffts",)),
    "ffts_truth_result.csv": ("ffts_dump", "ffts_gt", "ffts_graph", None, (), ()),
    "hashed_result.csv": ("hashed_dump", "hashed_gt", "graph", None, (), ()),
    "close_fusion_result.csv": ("cf_dump", "cf_npu2", "cf_graph", None, ("-cf", "{cf_close}"), ("-cf", "{cf_close}")),
    **CURRENT_RUNS,
}
#: the runs added for issue #38 (regenerate.py runs them apart from the first three)
ADDED_RUNS = ("custom_alg_result.csv", "custom_alg_npu_vs_npu_result.csv", "max_result.csv", "overflow_result.csv",
              "alg_order_result.csv", "range_result.csv", "select_result.csv", "ffts_result.csv",
              "ffts_slices_result.csv", "ffts_truth_result.csv", "hashed_result.csv", "close_fusion_result.csv")

#: the op mapping runs (`-map`, dumpcmp's --op-mapping): expected/mapping/{name} <- (left, right, graph, quant rule)
#: corpus paths, then the flags as dumpcmp spells them and as the original does; compared byte for byte
MAPPING_RUNS = {
    "model.csv": ("dump", "gt", "graph", None, (), ()),
    "quant.csv": ("q_dump", "q_gt", "q_graph", "q_rule", (), ()),
    "hashed.csv": ("hashed_dump", "hashed_gt", "graph", None, (), ()),
    "range.csv": ("dump", "gt", "graph", None, ("--op-range", "3,10,2"), ("-r", "3,10,2")),
    "select.csv": ("dump", "gt", "graph", None, ("--op-select", "1,4,7,13"), ("-s", "1,4,7,13")),
    "ffts_truth.csv": ("ffts_dump", "ffts_gt", "ffts_graph", None, (), ()),
    "close_fusion.csv": ("cf_dump", "cf_npu2", "cf_graph", None, ("-cf", "{cf_close}"), ("-cf", "{cf_close}")),
}


def mapping_args(name: str, paths: dict[str, Path], original: bool = False) -> list[str]:
    """The command line of a -map run after `compare` (without the output), dumpcmp's or the original's."""
    left, right, graph, rule, ours, theirs = MAPPING_RUNS[name]
    args = ["-m" if original else "-l", str(paths[left]), "-g" if original else "-r", str(paths[right]),
            "-f", str(paths[graph])] + (["-q", str(paths[rule])] if rule else [])
    flags = [f.replace("{cf_close}", str(paths["cf_close"])) for f in (theirs if original else ours)]
    return args + (["-map", *flags] if original else ["--op-mapping", *flags])


def run_mapping(directory: Path, paths: dict[str, Path]) -> dict[str, Path]:
    """dumpcmp's op mapping files of MAPPING_RUNS under `directory`: {name: our file}."""
    from dumpcmp.cli import main

    directory.mkdir()
    files = {}
    for name in MAPPING_RUNS:
        if main(["compare", *mapping_args(name, paths), "-o", str(directory / name), "--quiet"]) != 0:
            raise AssertionError(f"dumpcmp compare --op-mapping failed for {name}")
        files[name] = directory / name
    return files


def run_flags(name: str, paths: dict[str, Path], original: bool = False) -> list[str]:
    """The flags of a model-level run beyond -l/-r/-f/-q (dumpcmp's, or with `original` the original's)."""
    return [f.replace("{custom}", str(paths["custom"])).replace("{cf_close}", str(paths["cf_close"]))
            for f in MODEL_RUNS[name][5 if original else 4]]


def with_graph(name: str) -> bool:
    return MODEL_RUNS[name][2] is not None


def run_ours(directory: Path) -> dict[str, Path]:
    """Build the corpus under `directory` and run dumpcmp on it; returns {expected file name: our file}."""
    from dumpcmp.cli import main

    corpus = directory / "corpus"
    paths = make_corpus.build(corpus)
    out = directory / "ours"
    out.mkdir()
    files = {}
    for name, (left, right, graph, rule, _, _) in MODEL_RUNS.items():
        args = ["compare", "-l", str(paths[left]), "-r", str(paths[right]), "-o", str(out / name), "--quiet",
                *run_flags(name, paths)]
        if graph:
            args += ["-f", str(paths[graph])]
        if rule:
            args += ["-q", str(paths[rule])]
        main(args)
        files[name] = out / name
    for op, kind, index in make_corpus.SINGLE_OPS:
        single = out / f"single_{op}_{kind}_{index}"
        main(["compare", *make_corpus.single_op_args(paths, op), "-o", str(single), "-d", op, "-t", kind,
              "-i", str(index), "--quiet"])
        prefix = f"{op}_{kind}_{index}"
        for f in sorted((EXPECTED / "single").glob(prefix + "*")):
            if f.name[len(prefix):][:1] in ("", ".", "_"):
                files["single/" + f.name] = single / f.name
    return files


def reference(name: str) -> Path:
    """The original's file for this NumPy: the top-N files it writes under NumPy 2 differ where tied or NaN
    errors are ordered by NumPy's argpartition (expected/numpy2/); everything else is the same under both."""
    import numpy as np

    alt = EXPECTED / "numpy2" / name
    return alt if int(np.__version__.split(".")[0]) >= 2 and alt.is_file() else EXPECTED / name


def corpus_text(path: Path, corpus: Path) -> str:
    return path.read_text(encoding="utf-8").replace(str(corpus), PLACEHOLDER)


def read_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def row_key(header: list[str], row: list[str], with_graph: bool) -> tuple[str, ...]:
    """What identifies a row: the tensor, or for an op without dump its name (NPU vs NPU order is the
    original's directory listing order, so its rows are matched by tensor, not by Index)."""
    col = {name: i for i, name in reversed(list(enumerate(header)))}
    tensor = row[col["TensorIndex"]] if "TensorIndex" in col else ""
    return (row[col["NPUDump"]], tensor)


Rows = dict[tuple[str, ...], tuple[list[str], list[str] | None]]


def model_rows(expected_text: str, ours_text: str, with_graph: bool) -> Rows:
    """{row key: (expected cells, our cells or None)} plus the header under key ('',)."""
    exp, mine = read_rows(expected_text), read_rows(ours_text)
    exp_header, our_header = exp[0], mine[0] if mine else []
    ours = {}
    for r in mine[1:]:
        ours.setdefault(row_key(our_header, r, with_graph), r)
    out: dict[tuple[str, ...], tuple[list[str], list[str] | None]] = {("",): (exp_header, our_header)}
    for r in exp[1:]:
        k = row_key(exp_header, r, with_graph)
        mine_row = ours.get(k)
        if mine_row is not None and not with_graph:
            # the original's Index in NPU vs NPU is its directory listing order: not compared
            mine_row = [r[0]] + mine_row[1:]
        out[k] = (r, mine_row)
    return out


def cell_diffs(header: list[str], exp: list[str], ours: list[str] | None) -> list[str]:
    if ours is None:
        return ["(row missing)"]
    diffs = []
    for i, name in enumerate(header):
        mine = ours[i] if i < len(ours) else "(none)"
        if exp[i] != mine:
            diffs.append(f"{name}: {exp[i]!r} != {mine!r}")
    if len(ours) > len(header):
        diffs.append(f"{len(ours) - len(header)} extra cells")
    return diffs


def figures(files: dict[str, Path], corpus: Path) -> str:
    cells = cells_ok = rows = rows_ok = 0
    lines = []
    for name in MODEL_RUNS:
        table = model_rows((EXPECTED / name).read_text(encoding="utf-8"), corpus_text(files[name], corpus),
                           with_graph(name))
        header = table[("",)][0]
        for key, (exp, ours) in table.items():
            if key == ("",):
                continue
            d = cell_diffs(header, exp, ours)
            rows += 1
            rows_ok += not d
            cells += len(header)
            cells_ok += len(header) - (len(header) if ours is None else len(d))
            if d:
                lines.append(f"  {name} {key}: " + "; ".join(d))
    single = [k for k in files if k.startswith("single/")]
    same = [k for k in single if files[k].is_file() and
            (files[k].read_bytes() if k.endswith(".npy") else corpus_text(files[k], corpus).encode())
            == reference(k).read_bytes()]
    lines += [f"  {k}: differs" for k in single if k not in same]
    return (f"model-level cells {cells_ok}/{cells}, rows {rows_ok}/{rows}; single-op files {len(same)}/{len(single)}"
            + ("\n" + "\n".join(lines) if lines else ""))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        print(figures(run_ours(root), root / "corpus"))
