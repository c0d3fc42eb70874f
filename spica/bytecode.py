"""Bytecode for what a search runs, compiled once per install (bin/setup runs this module).

The venv is installed without bytecode (compiling all ~21,000 files of its dependencies costs
minutes) and a search process may not write any (PYTHONDONTWRITEBYTECODE), so without this step
every process would compile the same ~4,000 modules from source on every run. Importing what a
search imports, with bytecode writing on, leaves a .pyc beside each of them in the venv; later
processes only read them, whatever PYTHONDONTWRITEBYTECODE says.
"""

from __future__ import annotations

import compileall
import importlib
import sys
from pathlib import Path

SEARCH_IMPORTS = (
    # the command, the search and its results (main process)
    "spica.__main__", "spica.cli.commands", "spica.search.run", "spica.results.report", "spica.study.vizier_study", "spica.study.grid",
    "spica.planner.config", "spica.planner.predictors", "spica.deploy.engines", "runner.slurm_pool",
    "spica.study.optuna_tpe", "spica.calibrate", "spica.calibrate.aiperf", "spica.results.compare",
    # evaluation workers and the replay child
    "spica.evaluation.evaluate", "spica.evaluation.timing",
    # what those modules import inside functions, when first needed
    "dynamo.replay", "dynamo.llm", "dynamo.profiler.utils.config", "dynamo.profiler.utils.config_modifiers",
    "dynamo.planner.config.planner_config", "dynamo.planner.core.load.predictors", "aisimulate_core.sdk",
    "aiconfigurator.sdk.memory", "aiconfigurator.sdk.models", "aiconfigurator.sdk.perf_database", "aiconfigurator.sdk.utils",
    "aiconfigurator.generator.facts.request_resolution",
)
WHOLE_PACKAGES = ("hydra", "hydra_plugins", "omegaconf", "antlr4")
"""Hydra finds its plugins and configs by scanning; its override parser's antlr4 imports a
module inside a function on every command (antlr4.LL1Analyzer), which importing misses."""


def compile_search_imports() -> None:
    sys.dont_write_bytecode = False
    for name in WHOLE_PACKAGES:  # first, with worker processes, before JAX's threads make forking unsafe
        for folder in importlib.import_module(name).__path__:
            compileall.compile_dir(Path(folder), quiet=1, workers=0)
    for name in SEARCH_IMPORTS:
        importlib.import_module(name)


if __name__ == "__main__":
    compile_search_imports()
