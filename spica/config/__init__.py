"""The SmartSearchConfig contract (docs/config.md) under upstream Spica's names: schema, presets, errors.

`Candidate` (a measured deployment) lives with the results; it is exported here too because
upstream scripts import it from this module.
"""

from typing import Any

from spica.config.errors import ConfigError
from spica.config.schema import (
    OptimizationGoal,
    OptimizationTarget,
    SearchSpace,
    SLATarget,
    SmartSearchConfig,
    SweepConfig,
    Workload,
)

__all__ = [
    "Candidate",
    "ConfigError",
    "OptimizationGoal",
    "OptimizationTarget",
    "SLATarget",
    "SearchSpace",
    "SmartSearchConfig",
    "SweepConfig",
    "Workload",
]


def __getattr__(name: str) -> Any:
    if name == "Candidate":  # loaded on use: the config layer does not import the results layer
        from spica.results.ledger import Candidate

        return Candidate
    raise AttributeError(name)
