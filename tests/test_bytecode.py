"""spica/bytecode.py must reach every module a search imports inside a function, or those
modules would be compiled from source by every search process."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e  # imports the whole stack (~10 s)


def _imported_inside_functions() -> set[str]:
    names = set()
    for path in (REPO / "spica").rglob("*.py"):
        for function in ast.walk(ast.parse(path.read_text())):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        names.add(node.module)
                    elif isinstance(node, ast.Import):
                        names.update(alias.name for alias in node.names)
    return {name for name in names if name.split(".")[0] not in sys.stdlib_module_names}


def test_every_lazy_import_is_compiled_at_setup():
    script = "import json, sys, spica.bytecode as b; b.compile_search_imports(); print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    missing = sorted(_imported_inside_functions() - loaded)
    assert not missing, f"add to spica/bytecode.py SEARCH_IMPORTS: {missing}"
