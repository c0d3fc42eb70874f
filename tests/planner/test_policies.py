from __future__ import annotations

import logging

import pytest

from spica.config.presets import PLANNER_SCALING_POLICIES
from spica.planner.policies import filter_scaling_policies, optimization_target

ALL_PRESETS = [(name, dict(fields)) for name, fields in PLANNER_SCALING_POLICIES.items()]


def names(policies):
    return [name for name, _ in policies]


@pytest.mark.parametrize(
    ("goal", "target"),
    [
        ("goodput", "sla"),
        ("goodput_per_gpu", "sla"),
        ("e2e_latency", "latency"),
        ("throughput", "throughput"),
        ("throughput_per_gpu", "throughput"),
        ("throughput_per_user", "throughput"),
        ("pareto", "throughput"),
    ],
)
def test_goal_maps_to_planner_target(goal, target):
    assert optimization_target(goal) == target


def test_unknown_goal_target_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^goal.target: 'fastest' is not one of throughput, throughput_per_gpu, "):
        optimization_target("fastest")


def test_throughput_goal_drops_throughput_and_hybrid_policies(caplog):
    with caplog.at_level(logging.WARNING, logger="spica.planner.policies"):
        result = filter_scaling_policies(ALL_PRESETS, "throughput", None, None, None)
    assert names(result.kept) == ["disabled", "load_180_5", "load_180_10"]
    assert names(result.dropped) == ["throughput_180_5", "throughput_600_5", "hybrid_180_5", "hybrid_600_5"]
    assert dict(result.dropped)["hybrid_600_5"] == (
        "throughput scaling needs a goodput goal (planner target 'sla'); goal throughput maps to 'throughput'"
    )
    assert "planner_scaling_policy throughput_180_5 dropped" in caplog.text


def test_e2e_latency_goal_keeps_load_scaling():
    result = filter_scaling_policies(ALL_PRESETS, "e2e_latency", None, None, 3000.0)
    assert names(result.kept) == ["disabled", "load_180_5", "load_180_10"]


def test_goodput_with_e2e_only_sla_keeps_static_policies_only():
    custom_static = ("custom_7", {"enable_throughput_scaling": False, "enable_load_scaling": False})
    result = filter_scaling_policies(ALL_PRESETS + [custom_static], "goodput", None, None, 5000.0)
    assert names(result.kept) == ["disabled", "custom_7"]
    assert len(result.dropped) == 6


def test_goodput_with_ttft_and_itl_keeps_every_policy():
    result = filter_scaling_policies(ALL_PRESETS, "goodput_per_gpu", 500.0, 30.0, None)
    assert names(result.kept) == names(ALL_PRESETS)
    assert result.dropped == ()


def test_only_throughput_policies_under_a_throughput_goal_is_an_error():
    policies = [(name, dict(PLANNER_SCALING_POLICIES[name])) for name in ("throughput_180_5", "hybrid_600_5")]
    with pytest.raises(ValueError) as error:
        filter_scaling_policies(policies, "throughput_per_gpu", None, None, None)
    assert str(error.value) == (
        "no planner scaling policy is usable with goal throughput_per_gpu (sla ttft_ms=None, itl_ms=None, e2e_ms=None); "
        "dropped throughput_180_5, hybrid_600_5 (throughput scaling needs a goodput goal (planner target 'sla'); "
        "goal throughput_per_gpu maps to 'throughput'); add 'disabled' or a policy the goal allows"
    )
