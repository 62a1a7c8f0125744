"""The oracle corpus (tests/oracle: the graph JSON with fused and inserted ops, device vs device, a quantized model
with its quant fusion rule file) compared on a LocalCluster of 2 workers, a task for every pair
(`Cluster.batch_bytes`): every result file byte-identical to the local run's, which tests/oracle checks against the
original tool's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import dumpcmp

pytest.importorskip("distributed")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
import make_corpus  # noqa: E402  (tests/oracle/make_corpus.py)

SRC = str(Path(dumpcmp.__file__).resolve().parents[1])  # the installed package (its _core), not the checkout
ENV = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
RUNS = {  # as tests/oracle/agreement.py runs them
    "model_result.csv": ("dump", "gt", "graph", None),
    "npu_vs_npu_result.csv": ("dump", "npu2", None, None),
    "quant_result.csv": ("q_dump", "q_gt", "q_graph", "q_rule"),
}


CLUSTER_RUN = """
import sys
from pathlib import Path
import dumpcmp
from dumpcmp.comparison.cluster import connect
if __name__ == "__main__":
    left, right, graph, rule, out = sys.argv[1:]
    with connect("local:2") as cluster:
        cluster.batch_bytes = 1  # a task for every pair compared
        result = dumpcmp.compare(left, right, fusion_json=graph or None, quant_json=rule or None, client=cluster,
                                 threads=1)
    result.write(out, extra=True, overflow=True)
"""


def test_oracle_corpus_on_a_cluster(tmp_path: Path) -> None:
    paths = make_corpus.build(tmp_path / "corpus")
    (tmp_path / "run.py").write_text(CLUSTER_RUN)
    for how in ("local", "cluster"):
        (tmp_path / how).mkdir()
    for name, (left, right, graph, rule) in RUNS.items():
        args = ["compare", "-l", str(paths[left]), "-r", str(paths[right]), "--quiet", "--extra", "--overflow"]
        args += ["-f", str(paths[graph])] if graph else []
        args += ["-q", str(paths[rule])] if rule else []
        local = subprocess.run([sys.executable, "-m", "dumpcmp", *args, "-o", str(tmp_path / "local" / name)],
                               capture_output=True, text=True, env=ENV, timeout=120)
        assert local.returncode == 0, local.stderr
        on_cluster = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(paths[left]), str(paths[right]),
                                     str(paths[graph]) if graph else "", str(paths[rule]) if rule else "",
                                     str(tmp_path / "cluster" / name)], capture_output=True, text=True, env=ENV,
                                    timeout=120)
        assert on_cluster.returncode == 0, on_cluster.stderr
        assert (tmp_path / "cluster" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name
