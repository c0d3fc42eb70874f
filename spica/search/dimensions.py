"""Which knobs a branch's study searches, and which it never sees.

A list knob with one value is pinned (not a dimension). Knobs that cannot matter are pruned
(docs/config.md): no kv-router weights unless kv_router can be chosen, no host/disk weights without
offload, no fpm/sensitivity presets unless a kept policy scales (every policy disabled), no engine knobs of the other
mode. The study then searches only what can change a replay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from spica.config import SmartSearchConfig
from spica.core.unrolled import ROLES
from spica.planner.policies import is_static
from spica.study.params import Param

ENGINE_KNOBS = ("max_num_batched_tokens", "max_num_seqs")
KV_ROUTER_KNOBS = ("overlap_score_credit", "prefill_load_scale", "router_temperature")
OFFLOAD_ROUTER_KNOBS = ("host_cache_hit_weight", "disk_cache_hit_weight")


@dataclass(frozen=True)
class Knob:
    """A search-space field and the values it may take in this branch."""

    name: str
    values: tuple[Any, ...]

    @property
    def searched(self) -> bool:
        return len(self.values) > 1


def branch_knobs(config: SmartSearchConfig, mode: str, quant: Mapping[str, tuple[str, ...]] | None = None) -> list[Knob]:
    """Every knob relevant to `mode`, pinned or searched, in a stable order; `quant`: the branch's
    quant fields with the choices its backends' perf data hold (spica.space.branches.Branch.quant_knobs)."""
    space = config.search_space
    knobs = [Knob(f"{role}_{knob}", tuple(getattr(space, f"{role}_{knob}"))) for role in ROLES[mode] for knob in ENGINE_KNOBS]
    knobs += [Knob(name, values) for name, values in (quant or {}).items()]
    knobs.append(Knob("router_mode", tuple(space.router_mode)))
    if "kv_router" in space.router_mode:
        router_knobs = KV_ROUTER_KNOBS + (OFFLOAD_ROUTER_KNOBS if space.offload_enabled else ())
        knobs += [Knob(name, tuple(getattr(space, name))) for name in router_knobs]
    policies = space.scaling_policies()
    knobs.append(Knob("planner_scaling_policy", tuple(name for name, _ in policies)))
    if any(not is_static(fields) for _, fields in policies):  # a Planner runs: its sampling and sensitivity
        knobs.append(Knob("planner_fpm_sampling", tuple(name for name, _ in space.fpm_samplings())))
        knobs.append(Knob("planner_load_sensitivity", tuple(name for name, _ in space.load_sensitivities())))
    levels = config.workload.concurrency_levels()
    if len(levels) > 1:
        knobs.append(Knob("concurrency", tuple(levels)))
    return knobs


def knob_params(knobs: list[Knob]) -> list[Param]:
    """Study parameters for the searched knobs: numbers stay ordered, names are categories."""
    params = []
    for knob in knobs:
        if not knob.searched:
            continue
        if all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in knob.values):
            params.append(Param(knob.name, "discrete", choices=tuple(sorted(knob.values))))
        else:
            params.append(Param(knob.name, "categorical", choices=tuple(str(value) for value in knob.values)))
    return params


def workload_params(config: SmartSearchConfig) -> list[Param]:
    """A ranged kv_load_ratio (pareto only) is a continuous study dimension."""
    ratio = config.workload.kv_load_ratio
    if isinstance(ratio, list):
        return [Param("kv_load_ratio", "double", low=float(ratio[0]), high=float(ratio[1]))]
    return []


def knob_values(knobs: list[Knob], suggestion: Mapping[str, Any]) -> dict[str, Any]:
    """The value of every knob for one suggestion: searched ones from it, pinned ones fixed."""
    values = {}
    for knob in knobs:
        if not knob.searched:
            values[knob.name] = knob.values[0]
            continue
        chosen = suggestion[knob.name]
        values[knob.name] = next(value for value in knob.values if value == chosen or str(value) == str(chosen))
    return values


def knob_grid(knobs: list[Knob]) -> list[dict[str, Any]]:
    """Every combination of knob values (the exhaustive grid's knob part)."""
    combos: list[dict[str, Any]] = [{}]
    for knob in knobs:
        combos = [{**combo, knob.name: value} for combo in combos for value in knob.values]
    return combos
