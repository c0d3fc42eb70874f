"""Spica: search NVIDIA Dynamo deployments for an LLM, scored by Dynamo's offline Replay.

`run_smart_search(config)` is the Python entry point; the `spica` command wraps it. The
package root stays import-light: heavy layers (Replay, Vizier, AI Configurator) load on use.
"""

from __future__ import annotations

import logging
import os
from typing import Any

# Dynamo logs every timing-table load and planner start; a search makes hundreds. Keep its
# errors unless the user chose a level (DYN_LOG=info to see everything).
os.environ.setdefault("DYN_LOG", "error")
# Importing Dynamo's planner configures its logging, and with it SGLang's: a JSON file written
# to the temporary folder and never removed, one per process. Spica runs no SGLang engine.
os.environ.setdefault("DYN_SKIP_SGLANG_LOG_FORMATTING", "1")
# AI Configurator / AIS perf databases warn about data provenance (fallback rows, sibling
# versions) once per process: every worker would repeat it, and nothing in it is actionable.
for _chatty in ("aiconfigurator_core", "aisimulate_core", "absl"):
    logging.getLogger(_chatty).setLevel(logging.ERROR)

__version__ = "0.1.0"
__all__ = ["OptimizationTarget", "SmartSearchConfig", "run_smart_search", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "run_smart_search":
        from spica.search import run_smart_search

        return run_smart_search
    if name in ("SmartSearchConfig", "OptimizationTarget"):
        import spica.config

        return getattr(spica.config, name)
    raise AttributeError(name)
