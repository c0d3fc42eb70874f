"""spica.core.startup: the command collects garbage less often than Python's defaults; a library
caller's process keeps its own settings."""

from __future__ import annotations

import subprocess
import sys

from spica.core.startup import THRESHOLDS

PRINT_THRESHOLDS = "import gc, spica.cli.commands as cli; cli._dispatch = lambda argv, explicit: print(gc.get_threshold()); cli.main({})"


def _thresholds(argv: str) -> str:
    return subprocess.run([sys.executable, "-c", PRINT_THRESHOLDS.format(argv)], capture_output=True, text=True, check=True).stdout.strip()


def test_the_command_raises_the_collection_thresholds_and_a_library_call_does_not():
    assert _thresholds("") == str(THRESHOLDS)
    assert _thresholds("[]") == "(700, 10, 10)"
