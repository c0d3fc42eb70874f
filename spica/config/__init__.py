"""The SmartSearchConfig contract (docs/config.md) under upstream Spica's names: schema, presets, errors.

`Candidate` (a measured deployment, spica.core.candidate) is exported here too because upstream
scripts import it from this module.
"""

from spica.config.errors import ConfigError
from spica.config.goal import OptimizationGoal, OptimizationTarget, SLATarget
from spica.config.schema import SmartSearchConfig
from spica.config.search_space import SearchSpace
from spica.config.sweep import SweepConfig
from spica.config.workload import Workload
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

