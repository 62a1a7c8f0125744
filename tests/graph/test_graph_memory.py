"""A graph read without its attribute dicts (`load_graph(..., attrs=False)`, issue #35): what a comparison reads of
the graph JSON. Every other field and every error is the one `load_graph` gives; what it holds an op is measured
(RssAnon of a child process) so that it cannot grow back silently."""

from __future__ import annotations

import copy
import dataclasses
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dumpcmp.errors import ConfigError
from dumpcmp.graph.graph_json import NO_ATTRS, load_graph
from helpers import graphjson as gj


def _doc():
    return gj.schema_sample(gj.op("d", "Add", 3, inputs=["b:0", "a:0"],
                                  outputs=[gj.desc(origin_name="x", origin_index=1), gj.desc()]))


def test_without_attributes_every_other_field_is_the_same(tmp_path):
    path = gj.write(tmp_path / "g.json", _doc())
    quant = gj.write(tmp_path / "q.json", gj.document(gj.op("x", "Conv2D", 0, originals=["x0"]),
                                                      gj.op("y", "AscendQuant", 1, originals=[])))
    for kwargs in ({}, {"quant_fusion": quant}):
        whole, lean = load_graph(path, **kwargs), load_graph(path, attrs=False, **kwargs)
        assert lean.ops == whole.ops and [repr(o) for o in lean.ops] == [repr(o) for o in whole.ops]
        assert [o.unmerged_original_op_names for o in lean.ops] == [o.unmerged_original_op_names for o in whole.ops]
        assert dict(lean.ops_by_name) == dict(whole.ops_by_name) and lean.graph_names == whole.graph_names
        assert [lean.producers(o) for o in lean.ops] == [whole.producers(o) for o in whole.ops]
        assert whole["b"].attrs["_L1_fusion_sub_graph_no"] == "3"
        assert whole["b"].output(0).attrs["_datadump_origin_name"] in ("a", "x0")
        for op in lean.ops:
            assert op.attrs is NO_ATTRS
            assert all(d.attrs is NO_ATTRS for d in op.input_desc + op.output_desc)
    assert len(NO_ATTRS) == 0 and NO_ATTRS == {} and "k" not in NO_ATTRS
    with pytest.raises(TypeError):
        NO_ATTRS["k"] = 1  # type: ignore[index]


def test_a_graph_without_attributes_is_copied_and_pickled_as_one_with(tmp_path):
    lean = load_graph(gj.write(tmp_path / "g.json", _doc()), attrs=False)
    op = lean["b"]
    for again in (pickle.loads(pickle.dumps(op)), copy.deepcopy(op), copy.copy(op)):
        assert again == op and again.attrs is NO_ATTRS and again.output(0).attrs is NO_ATTRS
    assert dataclasses.asdict(op)["attrs"] is NO_ATTRS and dataclasses.astuple(op.output(0))[-1] is NO_ATTRS
    assert [o.name for o in pickle.loads(pickle.dumps(lean)).ops] == [o.name for o in lean.ops]


@pytest.mark.parametrize("op", [
    {"name": "x", "attr": [{"key": "k", "value": {"i": "abc"}}]},
    {"name": "x", "attr": {"key": "k"}},
    {"name": "x", "attr": [{"value": {"s": "v"}}]},
    {"name": "x", "attr": [{"key": "_datadump_original_op_names", "value": {"i": 3}}]},
    {"name": "x", "output_desc": [{"attr": [{"key": "origin_shape", "value": {"list": {"i": [1, "y"]}}}]}]},
    {"name": "x", "output_desc": [{"attr": [{"key": "k", "value": {"list": {"s": 3}}}]}]},
    {"name": "x", "input_desc": [{"attr": [{"key": "k", "value": 5}]}]},
])
def test_without_attributes_the_errors_are_the_same(tmp_path, op):
    path = gj.write(tmp_path / "bad.json", {"graph": [{"name": "g", "op": [op]}]})
    with pytest.raises(ConfigError) as whole:
        load_graph(path)
    with pytest.raises(ConfigError) as lean:
        load_graph(path, attrs=False)
    assert str(lean.value) == str(whole.value) and str(path) in str(whole.value)


MEASURE = textwrap.dedent("""
    import gc, sys
    sys.path.insert(0, sys.argv[2])
    from helpers import graphjson as gj
    from dumpcmp.graph.graph_json import load_graph

    ops = []
    for k in range(int(sys.argv[3])):  # bench/bench_large.py's graph: fused ops, inserted TransData
        name = f"fused{k}" if k % 4 == 3 else f"op{k}"
        shape = (1, 20, 2 + k % 7, 2 + k % 7) if k % 2 == 0 else (64, 2 + k % 5)
        ops.append(gj.op(name, "Conv2D", len(ops), originals=[f"op{k}_bn", f"op{k}"] if k % 4 == 3 else gj.ABSENT,
                         outputs=[gj.desc(origin_name=f"op{k}", origin_index=0, origin_format="NCHW",
                                          origin_shape=shape)]))
        if k % 3 == 2:
            ops.append(gj.op(f"trans_TransData_{k}", "TransData", len(ops), originals=[], inputs=[f"{name}:0"],
                             outputs=[gj.desc(origin_shape=shape)]))
    path = gj.write(__import__("pathlib").Path(sys.argv[1]) / "model.json", gj.document(*ops))
    del ops

    def anon():
        gc.collect()
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssAnon")) * 1024

    before = anon()
    graph = load_graph(path, attrs=sys.argv[4] == "1")
    print((anon() - before) / len(graph))
""")


def _held_an_op(tmp_path: Path, attrs: bool, ops: int = 20_000) -> float:
    tests = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ, MALLOC_ARENA_MAX="1")  # the allocator's per-thread arenas left out of the figures
    run = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path), tests, str(ops), "1" if attrs else "0"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-800:]
    return float(run.stdout)


def test_a_graph_without_attributes_holds_little_an_op(tmp_path):
    """What a graph shaped as bench_large's 20,000-op model's (26,666 graph ops) holds an op, RssAnon of a child
    process: about 804 bytes read whole, 411 without the attribute dicts (on the kept 20,000-op model itself: 1,207
    bytes before issue #35, at e258a2a, 536 without the attributes, the records slotted)."""
    lean = _held_an_op(tmp_path, attrs=False)
    assert lean < 520, f"the graph holds {lean:.0f} bytes an op without its attribute dicts"
