"""A graph JSON of a million small graphs, each of its own name (14 MB): its graphs are named as graph_json names
them, in time linear in their number. Before #35's fix each name was looked up in a list of the names before it:
100,000 graphs took 6.3 s of CPU, a million about ten minutes (a hang from a small file). The child's timeout is a
hang guard far above the seconds the reading takes; no speed is measured."""

from __future__ import annotations

import os
import subprocess
import sys

_CHILD = """
import sys
from dumpcmp.graph.graph_json import load_graph
graph = load_graph(sys.argv[1])
names = graph.graph_names
assert len(names) == 1_000_002, len(names)
assert names[:3] == ("g0", "g1", "g2") and names[-2:] == ("g0#1000000", "graph_1000001"), names[-2:]
assert len(set(names)) == len(names)
print("ok")
"""


def test_a_million_graphs_are_named_without_a_hang(tmp_path):
    path = tmp_path / "many.json"
    graphs = [f'{{"name": "g{n}"}}' for n in range(1_000_000)] + ['{"name": "g0"}', '{"name": ""}']
    path.write_text('{"graph": [' + ",".join(graphs) + "]}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True, text=True, env=env,
                          timeout=240)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
