"""The private `_core` module directly: its typing stub lists exactly what it exports."""

from __future__ import annotations

import ast
from pathlib import Path

import dumpcmp
from dumpcmp.support.native import core


def test_stub_matches_the_module():
    stub = Path(dumpcmp.__file__).with_name("_core.pyi")
    tree = ast.parse(stub.read_text())
    declared = next(ast.literal_eval(node.value) for node in tree.body
                    if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "__all__")
    exported = sorted(n for n in dir(core) if not n.startswith("_"))
    assert sorted(declared) == exported, "regenerate src/dumpcmp/_core.pyi (see its first lines)"


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
