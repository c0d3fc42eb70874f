"""The SmartSearchConfig contract (SPEC §2): schema, presets, one-line errors."""

from spica.config.errors import ConfigError
from spica.config.schema import Goal, SearchSpace, SmartSearchConfig, Sla, Sweep, Workload

__all__ = ["ConfigError", "Goal", "SearchSpace", "SmartSearchConfig", "Sla", "Sweep", "Workload"]
