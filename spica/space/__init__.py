"""The parallel-config search space: legal, KV-feasible shapes per backend, pooled per mode.

Only stdlib and aiconfigurator are used here (aiconfigurator is imported lazily), so this
package also runs in an environment holding nothing but an older aiconfigurator.
"""

from spica.space.branches import (
    Branch,
    BackendFit,
    ParallelConfig,
    RoleCapacity,
    RolePool,
    ShapeAssessment,
    SpaceRequest,
)
from spica.space.capacity import KvCapacityUnavailable
from spica.space.enumeration import InvalidPinnedParallelConfig, NoViableParallelConfig, enumerate_branches
from spica.space.projection import ParamSpec, feature_params, features, project
from spica.space.shapes import RULES, LegalityRule, ModelInfo, WorkerShape
from spica.space.table import format_pool_table

__all__ = [
    "BackendFit",
    "Branch",
    "InvalidPinnedParallelConfig",
    "KvCapacityUnavailable",
    "LegalityRule",
    "ModelInfo",
    "NoViableParallelConfig",
    "ParallelConfig",
    "ParamSpec",
    "RULES",
    "RoleCapacity",
    "RolePool",
    "ShapeAssessment",
    "SpaceRequest",
    "WorkerShape",
    "enumerate_branches",
    "feature_params",
    "features",
    "format_pool_table",
    "project",
]
