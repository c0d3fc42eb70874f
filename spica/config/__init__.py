"""The SmartSearchConfig contract (docs/config.md) under upstream Spica's names: schema, presets, errors.

`Candidate` (a measured deployment, spica.core.candidate) is exported here too because upstream
scripts import it from this module.
"""

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
from spica.core.candidate import Candidate

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

