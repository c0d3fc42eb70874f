"""The results folder is written by a process of its own, started with the search.

Writing imports matplotlib and Dynamo's profiler modules (with transformers: ~2 s of CPU; the
planner package's own imports are deferred, spica/deploy/flags.py). In the search's own process
those imports ran beside the studies' asks, held the GIL they needed, and a garbage collection
they set off once deadlocked a search against a designer warm-up's XLA thread. Here they run on another core while the
search runs; the search hands over what it found and waits only for the writing itself.
This module stays light: the search's process imports it, never what it writes with.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import Any, Mapping

from spica.core.console import flush_output


def prepare() -> None:
    """The writer process's start: everything writing the folder imports; and its end without
    interpreter finalization, which for these modules took ~0.8 s the search waited for."""
    from spica.core.startup import collect_less

    collect_less()  # its imports share the cores with the search's start-up
    import spica.results.report  # noqa: F401  (matplotlib)
    from spica.deploy.flags import profiler_modules

    profiler_modules()
    atexit.register(_end_now)  # registered last, so it runs first


def _end_now() -> None:
    flush_output()
    os._exit(0)


def write(task: tuple[tuple[Any, ...], Mapping[str, Any]]) -> Path:
    """spica.results.report.write_results(*args, **kwargs), in the writer process."""
    from spica.results.report import write_results

    args, kwargs = task
    return write_results(*args, **kwargs)
