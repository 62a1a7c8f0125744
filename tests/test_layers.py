"""The package's layout rules, read from the source of src/dumpcmp (parsed, nothing imported). Each failure lists
every place that breaks the rule as file:line.

- Each stage imports only the stages before it on the data's path (MAY_IMPORT), plus OPEN_TO_ALL; the command line
  and the top-level package (the public API, `python -m dumpcmp`) import anything. Imports inside functions count.
- No module reaches another module's private (leading-underscore) name, by import or by attribute; a private module
  is imported only from inside its own package, and the compiled `_core` only by its gateway, support/native.py.
- Imports are absolute.
- argparse only in cli/.
- An `__init__.py` opens with a docstring and only re-exports: no function or class of its own.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "dumpcmp"

# The stages a stage may import from: those before it on the data's path (files -> pairs -> rows -> what users read).
MAY_IMPORT: dict[str, set[str]] = {
    "dumps": set(),
    "graph": {"dumps"},
    "comparison": {"dumps", "graph"},
    "output": {"dumps", "graph", "comparison"},
    "onnx": {"dumps"},
    "device": {"dumps", "graph", "onnx"},
    "debug": {"dumps", "graph", "comparison", "output", "onnx", "device"},
    "benchmark": {"dumps", "graph", "comparison", "output"},
    "support": set(),
    "errors": set(),
}
ANYTHING = {"cli", "__init__", "__main__"}  # the command line and the top-level package's own files
OPEN_TO_ALL = {"support", "errors", "_core"}
TOP = "the top-level dumpcmp"  # `from dumpcmp import name`: the public API, which imports every stage
ARGPARSE_ONLY_IN = "cli"
CORE_GATEWAY = "dumpcmp.support.native"
# The one sanctioned import against the direction: `ComparisonResult` keeps its convenience methods (`write`, `table`,
# `summary`, `header`, `to_records`: the public API `result.write("result.csv")`), while the result file's columns and
# texts live in output/table.py; the methods import it when called, never at load time.
UPWARD_WHEN_CALLED = {("dumpcmp.comparison.rows", "dumpcmp.output.table")}


@dataclass(frozen=True)
class Module:
    path: Path
    tree: ast.Module

    @classmethod
    def read(cls, path: Path, source: str | None = None) -> Module:
        text = path.read_text(encoding="utf-8") if source is None else source
        return cls(path, ast.parse(text, str(path)))

    @property
    def name(self) -> str:
        """Dotted, e.g. dumpcmp.dumps.naming; a package by its folder."""
        parts = list(self.path.relative_to(SRC).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    @property
    def stage(self) -> str:
        """dumps, graph, ... for a module in a stage's folder; errors, __init__, __main__ for the top's files."""
        return self.path.relative_to(PACKAGE).with_suffix("").parts[0]

    def at(self, node: ast.AST) -> str:
        return f"{self.path.relative_to(SRC.parent)}:{getattr(node, 'lineno', 1)}"


MODULES = [Module.read(path) for path in sorted(PACKAGE.rglob("*.py"))]


def is_module(dotted: str) -> bool:
    """Whether dumpcmp.a.b names a module or package of src/ (not a name defined inside one)."""
    base = SRC.joinpath(*dotted.split("."))
    return dotted == "dumpcmp._core" or base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def dumpcmp_imports(m: Module) -> list[tuple[ast.AST, str]]:
    """(node, target) for every absolute import of dumpcmp anywhere in the module. The target is the module
    imported: `import M` and `from P import M` give M; `from M import name` gives "M:name"."""
    out = []
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names if a.name.split(".")[0] == "dumpcmp"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "dumpcmp":
            for a in node.names:
                full = f"{node.module}.{a.name}"
                out.append((node, full if is_module(full) else f"{node.module}:{a.name}"))
    return out


def stage_of(target: str) -> str:
    """dumps for dumpcmp.dumps.naming; TOP for a name of the top-level package ("" for metadata: __version__)."""
    dotted, _, attr = target.partition(":")
    parts = dotted.split(".")
    if len(parts) > 1:
        return parts[1]
    return "" if attr.startswith("__") else TOP


# --- the rules: each takes a module and returns its violations ----------------------------------------------------


def backward_imports(m: Module) -> list[str]:
    if m.stage in ANYTHING:
        return []
    allowed = MAY_IMPORT[m.stage] | OPEN_TO_ALL | {m.stage, ""}
    may = ", ".join(sorted(MAY_IMPORT[m.stage])) or "no other stage"
    return [f"{m.at(node)}: {m.stage} imports {stage_of(t)} ({t.replace(':', ' import ')}); {m.stage} may import {may}"
            for node, t in dumpcmp_imports(m)
            if stage_of(t) not in allowed and not (node.col_offset > 0 and (m.name, t.partition(":")[0]) in
                                                   UPWARD_WHEN_CALLED)]


def private_names(m: Module) -> list[str]:
    problems = []
    for node, target in dumpcmp_imports(m):
        dotted, _, attr = target.partition(":")
        if attr and private(attr):
            problems.append(f"{m.at(node)}: imports the private {attr} of {dotted}")
        if dotted == "dumpcmp._core":
            if m.name != CORE_GATEWAY:
                problems.append(f"{m.at(node)}: imports dumpcmp._core; the core is {CORE_GATEWAY}.core")
            continue
        parts = dotted.split(".")
        for k, part in enumerate(parts):
            owner = ".".join(parts[:k])  # the package the private module belongs to
            if private(part) and not (m.name == owner or m.name.startswith(owner + ".")):
                problems.append(f"{m.at(node)}: imports {dotted}, a private module of {owner}")
                break
    return problems + private_attributes(m)


def private_attributes(m: Module) -> list[str]:
    """`alias._name` where alias is a dumpcmp module this module imported (`import dumpcmp.x.y as alias`, `from
    dumpcmp.x import y`), or `dumpcmp.x._name` spelled out after `import dumpcmp.x`."""
    aliases = {}
    for node, target in dumpcmp_imports(m):
        if ":" in target:
            continue
        for a in node.names:
            if isinstance(node, ast.Import):
                aliases[a.asname or "dumpcmp"] = a.name if a.asname else "dumpcmp"
            elif f"{node.module}.{a.name}" == target:
                aliases[a.asname or a.name] = target

    def dotted(expr: ast.expr) -> str | None:
        if isinstance(expr, ast.Name):
            return aliases.get(expr.id)
        if isinstance(expr, ast.Attribute):
            base = dotted(expr.value)
            return f"{base}.{expr.attr}" if base else None
        return None

    problems = []
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            base = dotted(node.value)
            if base and is_module(base) and base != m.name and not is_module(f"{base}.{node.attr}"):
                problems.append(f"{m.at(node)}: reaches the private {node.attr} of {base}")
    return problems


def relative_imports(m: Module) -> list[str]:
    return [f"{m.at(node)}: relative import (from {'.' * node.level}{node.module or ''}); write it absolute"
            for node in ast.walk(m.tree) if isinstance(node, ast.ImportFrom) and node.level]


def argparse_outside_cli(m: Module) -> list[str]:
    if m.stage == ARGPARSE_ONLY_IN:
        return []
    problems = []
    for node in ast.walk(m.tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
        if any(n.split(".")[0] == "argparse" for n in names):
            problems.append(f"{m.at(node)}: imports argparse outside {ARGPARSE_ONLY_IN}/")
    return problems


def init_with_code(m: Module) -> list[str]:
    if m.path.name != "__init__.py":
        return []
    problems = [] if ast.get_docstring(m.tree) else [f"{m.at(m.tree)}: no docstring saying what flows in and out"]
    return problems + [f"{m.at(node)}: defines {node.name}; an __init__.py only re-exports (move it to a module)"
                       for node in own_definitions(m.tree.body)]


def own_definitions(body: list[ast.stmt]) -> list[ast.stmt]:
    """The functions and classes a module defines at its level (also under if/try), not their methods."""
    found = []
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(node)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                found += own_definitions(getattr(node, field, []))
    return found


RULES: list[Callable[[Module], list[str]]] = [backward_imports, private_names, relative_imports,
                                              argparse_outside_cli, init_with_code]


# --- the package against the rules -----------------------------------------------------------------------------


def test_every_stage_has_a_rule():
    stages = {m.stage for m in MODULES} - ANYTHING - {"_core"}
    assert stages <= set(MAY_IMPORT), f"add to MAY_IMPORT: {sorted(stages - set(MAY_IMPORT))}"


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_the_package_keeps_the_rule(rule):
    problems = list(dict.fromkeys(p for m in MODULES for p in rule(m)))  # one line per place and name
    if problems:
        pytest.fail(f"{len(problems)} violation(s) of {rule.__name__}:\n" + "\n".join(problems), pytrace=False)


# --- the rules against planted code: each catches what it is for and lets the rest through ----------------------

PLANTED = [  # (file under src/dumpcmp, source, rule, the violations' count)
    ("dumps/scan.py", "from dumpcmp.comparison.compare import compare", backward_imports, 1),
    ("dumps/scan.py", "def f():\n    import dumpcmp.output.report", backward_imports, 1),
    ("graph/pairing.py", "from dumpcmp import open_dump", backward_imports, 1),
    ("output/gate/rules.py", "from dumpcmp.device import simulate", backward_imports, 1),
    ("dumps/scan.py", "from dumpcmp import __version__\nfrom dumpcmp.support.files import atomic_write\n"
                      "from dumpcmp.errors import DumpError\nfrom dumpcmp.dumps import naming", backward_imports, 0),
    ("debug/locate/core.py", "from dumpcmp.device.simulate import simulate\nfrom dumpcmp.output import report",
     backward_imports, 0),
    ("cli/compare.py", "from dumpcmp.debug.locate import locate\nimport dumpcmp", backward_imports, 0),
    ("output/report/finish.py", "from dumpcmp.output.report import _clean", private_names, 1),
    ("debug/locate/regions.py", "from dumpcmp.device.simulate._lower import name_nodes", private_names, 1),
    ("device/simulate/__init__.py", "from dumpcmp.device.simulate._lower import name_nodes", private_names, 0),
    ("output/report/finish.py", "import dumpcmp.dumps.layout as L\nL._table", private_names, 1),
    ("output/report/finish.py", "from dumpcmp.dumps import layout\nlayout._table", private_names, 1),
    ("output/report/finish.py", "import dumpcmp.dumps.layout\ndumpcmp.dumps.layout._table", private_names, 1),
    ("dumps/scan.py", "from dumpcmp import _core", private_names, 1),
    ("support/native.py", "from dumpcmp import _core as core\ncore.compare_arrays", private_names, 0),
    ("dumps/scan.py", "from . import naming", relative_imports, 1),
    ("output/advice/options.py", "def f():\n    import argparse", argparse_outside_cli, 1),
    ("cli/compare.py", "import argparse", argparse_outside_cli, 0),
    ("output/gate/__init__.py", '"""In: rows. Out: a verdict."""\nfrom dumpcmp.output.gate.rules import evaluate\n'
                                "__all__ = ['evaluate']", init_with_code, 0),
    ("output/gate/__init__.py", "from dumpcmp.output.gate.rules import evaluate", init_with_code, 1),
    ("output/gate/__init__.py", '"""Gates."""\nclass Gate:\n    def check(self): pass\nif True:\n    def f(): pass',
     init_with_code, 2),
]


@pytest.mark.parametrize("file, source, rule, count", PLANTED, ids=[f"{r.__name__}:{f}:{n}" for f, _, r, n in PLANTED])
def test_a_rule_on_planted_code(file, source, rule, count):
    found = rule(Module.read(PACKAGE / file, textwrap.dedent(source)))
    assert len(found) == count, found


def test_test_file_names_are_unique_across_folders():
    """The test folders are not packages: two test files of one name make the whole run stop at collection."""
    names: dict[str, list[str]] = {}
    for path in Path(__file__).resolve().parent.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path))
    assert not {n: p for n, p in names.items() if len(p) > 1}


def test_child_processes_import_the_installed_package():
    """A test that starts `python -m dumpcmp` puts on PYTHONPATH the folder of the dumpcmp it imported
    (`Path(dumpcmp.__file__).resolve().parents[1]`), never the checkout's src/: CI installs the package into a fresh
    venv (`pip install .`), and src/ there has no compiled core."""
    import re

    checkout_src = re.compile(r"""(parents\[\d\]\s*/\s*["']src["']|os\.pardir,\s*["']src["'])""")
    here = Path(__file__).resolve()
    found = [str(p) for p in here.parent.rglob("*.py") if p != here and checkout_src.search(p.read_text())]
    assert not found
