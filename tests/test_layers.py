"""Spica's floors hold (README, Layout): import-linter's contracts in pyproject.toml pass, and no
import cycle exists among modules, among packages or between spica/ and runner/, counting the
imports made inside functions (a cycle there is still one the reader must follow)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TOP_PACKAGES = ("spica", "runner")


def modules() -> dict[str, Path]:
    """Every module of spica/ and runner/ by dotted name (a package by its own name)."""
    found = {}
    for top in TOP_PACKAGES:
        for path in (REPO / top).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The Spica modules `name` imports anywhere in its file; `from package import x` is the
    module x when x is one, else the package."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + [base] if base else anchor)
            targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def import_graph(depth: int | None, known: dict[str, Path]) -> dict[str, set[str]]:
    """Module imports, each name cut to its first `depth` parts (None: whole), self-imports dropped."""
    cut = (lambda name: ".".join(name.split(".")[:depth])) if depth else (lambda name: name)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        graph.setdefault(cut(name), set()).update(cut(target) for target in imported(name, path, known))
    return {node: targets - {node} for node, targets in graph.items()}


@pytest.mark.parametrize("level, depth", [("module", None), ("package", 2), ("spica and runner", 1)])
def test_no_import_cycles(level, depth):
    assert cycles(import_graph(depth, modules())) == [], f"import cycles at {level} level"


def test_a_cycle_through_an_import_inside_a_function_is_counted(tmp_path):
    (tmp_path / "a.py").write_text("def later():\n    from spica.y import c\n")
    (tmp_path / "c.py").write_text("from ..x import b\n")
    (tmp_path / "b.py").write_text("")
    known = {"spica.x.a": tmp_path / "a.py", "spica.x.b": tmp_path / "b.py", "spica.y.c": tmp_path / "c.py"}
    assert cycles(import_graph(None, known)) == []
    assert cycles(import_graph(2, known)) == [["spica.x", "spica.y"]]
    (tmp_path / "b.py").write_text("import spica.x.a\n")
    assert cycles(import_graph(None, known)) == [["spica.x.a", "spica.x.b", "spica.y.c"]]


def test_the_core_imports_nothing_else_of_spica_and_loads_only_the_standard_library():
    """Anything of Spica's beside spica.core, anywhere in it, and any third-party module at import
    time (a function may load one when called: spica.core.quant asks AI Configurator's enums)."""
    for name, path in modules().items():
        if not name.startswith("spica.core"):
            continue
        tree = ast.parse(path.read_text())
        at_import = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for module in names:
                assert not module.startswith("spica") or module.startswith("spica.core"), f"{name} imports {module}"
                if id(node) in at_import:
                    assert module.split(".")[0] in sys.stdlib_module_names | {"spica"}, f"{name} loads {module}"


def test_the_import_contracts_hold():
    """pyproject.toml's [tool.importlinter] contracts, checked on this checkout."""
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    done = subprocess.run([str(lint), "--no-cache"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
