"""A search started by the command: on the chosen executor's pool, resumable after a stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spica.cli.exits import exit_if_nothing_feasible, resumable
from spica.config import SmartSearchConfig
from spica.config.app import AppSettings, EvaluationSettings
from spica.config.executors import EXECUTORS
from spica.core.lazy import load

def evaluation_pool(settings: EvaluationSettings, results_dir: str | None, trace_path: str | None = None) -> Any:
    """The chosen executor's pool, its job files under <results_dir>/<executor> (in a container,
    each job sees the trace it replays); None: Spica's own process pool."""
    entry = EXECUTORS[settings.executor]
    if entry.pool is None:
        return None
    mounts = (trace_path,) if trace_path else ()
    return load(entry.pool)(Path(results_dir or ".") / entry.name, mounts=mounts, **settings.executor_settings().model_dump())


def search_and_report(config: SmartSearchConfig, app: AppSettings, results_dir: str | None) -> None:
    from spica.search import run_smart_search

    pool = evaluation_pool(app.evaluation, results_dir, config.workload.trace_path)
    with resumable(f"results_dir={results_dir}" if results_dir else "the same command"):
        try:
            results = run_smart_search(config, results_dir=results_dir, pool=pool, progress=True, deploy=app.deploy,
                                       calibration=app.evaluation.calibration)
        finally:
            if pool is not None:
                pool.close()
    exit_if_nothing_feasible(results)
