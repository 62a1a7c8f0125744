"""The private `_core` module directly: its typing stub lists exactly what it exports."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import dumpcmp
from dumpcmp.support.native import core


def _public(names):
    return sorted(n for n in names if not n.startswith("_"))


def test_stub_matches_the_module():
    stub = Path(dumpcmp.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    declared = next(ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__")
    assert sorted(declared) == _public(dir(core)), "regenerate src/dumpcmp/_core.pyi (see its first lines)"
    # each submodule is declared as a class (the stub says why) listing exactly the submodule's names
    areas = {n for n in dir(core) if isinstance(getattr(core, n), types.ModuleType)}
    assert areas == {"dtype", "dump", "metrics", "layout", "compare", "detail", "histogram", "graph", "scan", "table"}
    stub_classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    for area in areas:
        members = _public(node.name for node in stub_classes[area].body if hasattr(node, "name"))
        assert members == _public(dir(getattr(core, area))), f"_core.{area}: regenerate src/dumpcmp/_core.pyi"


def test_no_test_hooks_in_the_shipped_module():
    # the tests' hooks live in dumpcmp_testhooks (tests/helpers/native_hooks.py), never in the installed _core
    everything = [name for area in [core, *(v for v in vars(core).values() if isinstance(v, types.ModuleType))]
                  for name in dir(area)]
    assert not [n for n in everything if "kld" in n or n in ("numpy_sum_f32", "to_float32")]


def test_version_and_threads():
    assert core.__version__ == dumpcmp.__version__
    before = core.num_threads()
    try:
        core.set_num_threads(1)
        assert core.num_threads() == 1
    finally:
        core.set_num_threads(0)
    assert core.num_threads() == before
    assert core.simd_level() in ("scalar", "avx2", "avx512")
