"""Spica's study layer: one search (ask / tell) per branch: Vizier, Optuna's TPE or a plain grid
(spica/study/algorithms.py names them).

`VizierStudy` is loaded lazily: importing it pulls in JAX and Vizier (seconds), which
callers that only build parameters or run a grid should not pay for.
"""

from __future__ import annotations

from typing import Any

from spica.study.base import Study, Trial
from spica.study.grid import GridStudy
from spica.study.params import Objective, Param, Suggestion

__all__ = ["GridStudy", "Objective", "Param", "Study", "Suggestion", "Trial", "VizierStudy"]


def __getattr__(name: str) -> Any:
    if name == "VizierStudy":
        from spica.study.vizier_study import VizierStudy

        return VizierStudy
    raise AttributeError(f"module 'spica.study' has no attribute {name!r}")
