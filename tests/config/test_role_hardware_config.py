"""Per-role hardware: prefill_hardware_sku / decode_hardware_sku and gpu_budget_per_sku, one line per problem."""

from __future__ import annotations

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.config.search_space import SearchSpace

WORKLOAD = {"isl": 100, "osl": 10, "concurrency": 1, "num_request_ratio": 1}
MIXED = {"model_name": "m", "hardware_sku": "h200_sxm", "deployment_mode": ["disagg"], "prefill_hardware_sku": "h100_sxm"}


def errors(**space) -> list[str]:
    with pytest.raises(ConfigError) as info:
        SmartSearchConfig.from_mapping({"search_space": {**MIXED, **space}, "workload": WORKLOAD})
    return info.value.lines


def test_each_role_defaults_to_hardware_sku() -> None:
    space = SearchSpace(**MIXED)
    assert space.system_assignments() == [("h200_sxm", "h100_sxm", None)]
    assert space.hardware_skus == ("h100_sxm", "h200_sxm")
    assert SearchSpace(model_name="m", hardware_sku="h200_sxm").hardware_skus == ("h200_sxm",)
    budgets = SearchSpace(**MIXED, gpu_budget=8, gpu_budget_per_sku={"h100_sxm": 4, "h200_sxm": 4})
    assert budgets.gpu_budget_per_sku == {"h100_sxm": 4, "h200_sxm": 4}


def test_a_list_of_systems_is_searched_and_one_listed_system_is_the_scalar() -> None:
    assert SearchSpace(model_name="m", hardware_sku=["h200_sxm"]).hardware_sku == "h200_sxm"
    listed = SearchSpace(model_name="m", hardware_sku=["h100_sxm", "h200_sxm"])
    assert listed.system_assignments() == [("h100_sxm", None, None), ("h200_sxm", None, None)]
    assert listed.hardware_skus == ("h100_sxm", "h200_sxm")
    pairs = SearchSpace(**{**MIXED, "prefill_hardware_sku": ["h100_sxm", "h200_sxm"], "decode_hardware_sku": ["h200_sxm", "b200_sxm"]})
    assert pairs.system_assignments() == [
        ("h200_sxm", "h100_sxm", "h200_sxm"), ("h200_sxm", "h100_sxm", "b200_sxm"),
        ("h200_sxm", "h200_sxm", "h200_sxm"), ("h200_sxm", "h200_sxm", "b200_sxm"),
    ]
    assert pairs.hardware_skus == ("h100_sxm", "h200_sxm", "b200_sxm")
    assert errors(hardware_sku=["h200_sxm", "h200_sxm"]) == ["search_space.hardware_sku: 'h200_sxm' is listed twice"]
    assert errors(hardware_sku=[])[0] == "search_space.hardware_sku: needs at least one system"


def test_per_role_hardware_needs_a_disagg_only_space() -> None:
    assert errors(deployment_mode=["disagg", "agg"]) == [
        "search_space.prefill_hardware_sku: per-role hardware needs disagg pools only (deployment_mode: [disagg]); "
        "deployment_mode is disagg, agg, whose agg workers run on hardware_sku"
    ]
    assert errors(deployment_mode=["agg"], prefill_hardware_sku=None, decode_hardware_sku="h100_sxm")[0].startswith(
        "search_space.decode_hardware_sku: per-role hardware needs disagg pools only")


def test_per_sku_budgets_name_systems_the_search_uses_and_stay_within_the_total() -> None:
    assert errors(gpu_budget=8, gpu_budget_per_sku={"h100_sxm": 4, "h200_sxm": 5}) == [
        "search_space.gpu_budget_per_sku: 4 + 5 = 9 GPUs exceed gpu_budget 8 (the total)"
    ]
    assert errors(gpu_budget_per_sku={"b200_sxm": 2}) == [
        "search_space.gpu_budget_per_sku: 'b200_sxm' is not a system this search uses (h100_sxm, h200_sxm)"
    ]
    assert errors(gpu_budget_per_sku={"h100_sxm": 0}) == ["search_space.gpu_budget_per_sku.h100_sxm: 0: input should be greater than 0"]


def test_per_sku_budgets_keep_the_planner_from_scaling_past_a_system(config_warnings) -> None:
    budgets = {"gpu_budget": 8, "gpu_budget_per_sku": {"h100_sxm": 4, "h200_sxm": 4}}
    assert [name for name, _ in SearchSpace(**MIXED, **budgets).scaling_policies()] == ["disabled"]
    assert "planner_scaling_policy: [disabled] with gpu_budget_per_sku" in config_warnings.text
    assert errors(**budgets, planner_scaling_policy=["disabled", "throughput_180_5"]) == [
        "search_space.gpu_budget_per_sku: the Planner scales against the total GPU budget only; planner_scaling_policy "
        "throughput_180_5 could take a system past its budget (use planner_scaling_policy: [disabled])"
    ]


def test_a_one_system_list_plans_as_the_scalar_and_no_prices_leave_the_scores_fingerprint_alone() -> None:
    """Existing configs keep their plan and scores fingerprints (results folders resume)."""
    from spica.plan import compile_plan

    def plan(**space):
        return compile_plan(SmartSearchConfig.from_mapping({"search_space": {**MIXED, "prefill_hardware_sku": None, **space}, "workload": WORKLOAD}))

    scalar, listed = plan(), plan(hardware_sku=["h200_sxm"])
    assert (listed.fingerprint, listed.scores_fingerprint) == (scalar.fingerprint, scalar.scores_fingerprint)
    assert "gpu_hour_price" not in scalar.body()["config"]["goal"]
