"""What the study sees of a parallel config, and the way back from a suggestion to a config.

The study does not search raw shapes (most tuples are illegal or infeasible). It sees a few
smooth features: the share of the GPU budget used, GPUs per engine (log2), attention / FFN
modes (MoE), the prefill share of the GPUs (disagg), and — only where the pool has mixed
forms such as tp2 × dp4 — how much of each width is TP / EP. `project` maps any suggestion
to the nearest config of the branch that the chosen backend supports: categorical matches
first, then normalised distance, then the branch order (fewer GPUs first) as a stable
tie-break. The features of a pool member project back onto that member.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping

from spica.space.branches import Branch, ParallelConfig
from spica.space.shapes import WorkerShape


@dataclass(frozen=True)
class ParamSpec:
    """One study dimension: inclusive low / high for double and integer, choices for categorical
    (the same fields as spica.study.params.Param, which spica.space must not import)."""

    name: str
    kind: Literal["double", "integer", "categorical"]
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None


_MODE_FEATURES = ("attention_mode", "ffn_mode")
_MIXED_FEATURES = ("attention_tp_fraction", "ffn_ep_fraction")
GPU_SHARE = "used_gpu_ratio"  # orders a branch's candidates by GPUs used
_CONFIG_LEVEL = (GPU_SHARE, "prefill_share")


def _config_values(config: ParallelConfig) -> tuple[float, ...]:
    """Features that move with replica counts, in _CONFIG_LEVEL order."""
    used = config.used_gpus
    if config.mode == "agg":
        return (used / config.gpu_budget,)
    return (used / config.gpu_budget, config.pools[0].gpus / used)


@functools.lru_cache(maxsize=65536)
def _shapes_features(mode: str, shapes: tuple[WorkerShape, ...]) -> dict[str, Any]:
    """Features fixed by the worker shapes alone (shared by every replica count)."""
    roles = ("",) if mode == "agg" else ("prefill_", "decode_")
    out: dict[str, Any] = {}
    for prefix, shape in zip(roles, shapes):
        out[f"{prefix}log2_gpus_per_engine"] = int(math.log2(shape.gpus))
        out[f"{prefix}attention_mode"] = shape.attention_mode
        out[f"{prefix}ffn_mode"] = shape.ffn_mode
        out[f"{prefix}attention_tp_fraction"] = shape.attention_tp_fraction
        out[f"{prefix}ffn_ep_fraction"] = shape.ffn_ep_fraction
    return out


def _shapes(config: ParallelConfig) -> tuple[WorkerShape, ...]:
    return tuple(pool.shape for pool in config.pools)


def features(config: ParallelConfig) -> dict[str, Any]:
    """Every feature of `config`; `feature_params` says which of them a branch searches."""
    return {**dict(zip(_CONFIG_LEVEL, _config_values(config))), **_shapes_features(config.mode, _shapes(config))}


def _kind(name: str) -> Literal["double", "integer", "categorical"]:
    if name.endswith(_MODE_FEATURES):
        return "categorical"
    return "integer" if name.endswith("log2_gpus_per_engine") else "double"


def _groups(branch: Branch) -> dict[tuple[WorkerShape, ...], list[int]]:
    """Indices of the branch's configs grouped by their worker shapes."""

    def build() -> dict[tuple[WorkerShape, ...], list[int]]:
        groups: dict[tuple[WorkerShape, ...], list[int]] = {}
        for index, config in enumerate(branch.configs):
            groups.setdefault(_shapes(config), []).append(index)
        return groups

    return branch.memoised("shape_groups", build)


def _config_rows(branch: Branch) -> list[tuple[float, ...]]:
    return branch.memoised("config_rows", lambda: [_config_values(c) for c in branch.configs])


def feature_params(branch: Branch) -> tuple[ParamSpec, ...]:
    """The dimensions handed to the study: features that vary across the branch's pool.

    Empty for a one-config branch (a single pinned config bypasses the study's shape search).
    Mixed-form fractions are only added when the pool has mixed forms; elsewhere the modes
    already decide the shape.
    """
    return branch.memoised("feature_params", lambda: _feature_params(branch))


def _feature_params(branch: Branch) -> tuple[ParamSpec, ...]:
    if len(branch.configs) < 2:
        return ()
    values: dict[str, set[Any]] = {}
    for name, column in zip(_CONFIG_LEVEL, zip(*_config_rows(branch))):
        values[name] = set(column)
    has_mixed = False
    for shapes in _groups(branch):
        has_mixed = has_mixed or any(shape.is_mixed for shape in shapes)
        for name, value in _shapes_features(branch.mode, shapes).items():
            values.setdefault(name, set()).add(value)
    specs: list[ParamSpec] = []
    for name in features(branch.configs[0]):
        if (name.endswith(_MIXED_FEATURES) and not has_mixed) or len(values[name]) < 2:
            continue
        kind = _kind(name)
        if kind == "categorical":
            specs.append(ParamSpec(name, kind, choices=tuple(sorted(values[name]))))
        else:
            specs.append(ParamSpec(name, kind, low=min(values[name]), high=max(values[name])))
    return tuple(specs)


def _normalised(specs: Iterable[ParamSpec], row: Mapping[str, Any]) -> tuple[float | None, ...]:
    """Numeric features scaled to [0, 1] by the spec bounds (None where `row` lacks one)."""
    out = []
    for spec in specs:
        value = row.get(spec.name)
        out.append(None if value is None else (float(value) - spec.low) / (spec.high - spec.low))  # type: ignore[operator]
    return tuple(out)


def _normalised_config_rows(branch: Branch) -> list[tuple[float | None, ...]]:
    """Replica-level features of every config scaled by the feature-space bounds (once per branch)."""

    def build() -> list[tuple[float | None, ...]]:
        specs = {s.name: s for s in feature_params(branch)}
        scale = [((specs[name].low, specs[name].high), i) for i, name in enumerate(_CONFIG_LEVEL) if name in specs]
        return [
            tuple((row[i] - low) / (high - low) for (low, high), i in scale)  # type: ignore[misc]
            for row in _config_rows(branch)
        ]

    return branch.memoised("normalised_config_rows", build)


@dataclass(frozen=True)
class _Group:
    """Configs sharing worker shapes: categorical + shape-level numbers, then one row per config
    (replica-level numbers, rank in branch order, config)."""

    cats: tuple[Any, ...]
    shape_nums: tuple[float | None, ...]
    members: tuple[tuple[tuple[float | None, ...], int, ParallelConfig], ...]


def _table(branch: Branch, backend: str) -> tuple[_Group, ...]:
    def build() -> tuple[_Group, ...]:
        specs = feature_params(branch)
        cat_specs = [s for s in specs if s.kind == "categorical"]
        shape_specs = [s for s in specs if s.kind != "categorical" and s.name not in _CONFIG_LEVEL]
        rows = _normalised_config_rows(branch)
        table = []
        for shapes, indices in _groups(branch).items():
            members = tuple((rows[i], i, branch.configs[i]) for i in indices if branch.configs[i].supports(backend))
            if members:
                shape_row = _shapes_features(branch.mode, shapes)
                cats = tuple(shape_row[s.name] for s in cat_specs)
                table.append(_Group(cats, _normalised(shape_specs, shape_row), members))
        return tuple(table)

    return branch.memoised(("projection_table", backend), build)


def _distance(wanted: tuple[float | None, ...], have: tuple[float | None, ...]) -> float:
    return sum((w - h) ** 2 for w, h in zip(wanted, have) if w is not None)  # type: ignore[operator]


def project(branch: Branch, backend: str, point: Mapping[str, Any]) -> ParallelConfig:
    """The config of `branch` legal on `backend` nearest to `point` (deterministic).

    Keys of `point` outside the feature space are ignored; a missing feature counts as a
    match / zero distance, so a partial point still projects.
    """
    candidates = branch.configs_for(backend)
    if not candidates:
        raise ValueError(
            f"backend: {backend!r} has no config in the {branch.mode} branch (has: {list(branch.backends)})"
        )
    if len(candidates) == 1:
        return candidates[0]
    specs = feature_params(branch)
    wanted_cats = [point.get(s.name) for s in specs if s.kind == "categorical"]
    wanted_shape = _normalised([s for s in specs if s.kind != "categorical" and s.name not in _CONFIG_LEVEL], point)
    wanted_config = _normalised([s for s in specs if s.name in _CONFIG_LEVEL], point)
    groups = _table(branch, backend)
    mismatches = [sum(w is not None and w != h for w, h in zip(wanted_cats, g.cats)) for g in groups]
    fewest = min(mismatches)
    ranked = sorted(
        (_distance(wanted_shape, g.shape_nums), index)
        for index, g in enumerate(groups)
        if mismatches[index] == fewest
    )
    best: tuple[float, int, ParallelConfig] | None = None
    for shape_distance, index in ranked:
        if best is not None and shape_distance > best[0]:
            break  # every later group is farther even before its replica-level distance
        for nums, rank, config in groups[index].members:
            total = shape_distance + _distance(wanted_config, nums)
            if best is None or (total, rank) < best[:2]:
                best = (total, rank, config)
    assert best is not None
    return best[2]
