"""Private APIs of dependencies: Vizier's only through spica/study/vizier_internals.py, each import
there under a comment saying what the public API lacks; SciPy's not at all."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "spica" / "study" / "vizier_internals.py"


def sources():
    for folder in ("spica", "runner", "benchmarks", "tests"):
        yield from (path for path in (REPO / folder).rglob("*.py") if path != Path(__file__).resolve())


def test_vizier_private_modules_are_imported_in_one_module_only():
    offenders = [str(path.relative_to(REPO)) for path in sources() if path != WRAPPER and "vizier._src" in path.read_text()]
    assert offenders == []


def test_each_private_import_says_what_the_public_api_lacks():
    lines = WRAPPER.read_text().splitlines()
    imports = [number for number, line in enumerate(lines) if line.startswith("from vizier._src")]
    assert imports
    for number in imports:
        above = number - 1
        while lines[above].startswith("from vizier._src"):  # a group shares its comment
            above -= 1
        assert lines[above].startswith("# "), f"vizier_internals.py:{number + 1} has no comment above it"


def test_no_private_scipy_module_is_used():
    private = re.compile(r"scipy(\.\w+)*\._\w+|from scipy\S* import _\w+")
    offenders = [str(path.relative_to(REPO)) for path in sources() if private.search(path.read_text())]
    assert offenders == []
