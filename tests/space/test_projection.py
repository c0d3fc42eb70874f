from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spica.space import (
    ParamSpec,
    SpaceRequest,
    WorkerShape,
    enumerate_branches,
    feature_params,
    features,
    project,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def pairs(qwen_branches: tuple, deepseek_branches: tuple) -> list:
    """Every (branch, backend) of both acceptance cases."""
    return [(branch, backend) for branch in qwen_branches + deepseek_branches for backend in branch.backends]


def points(specs: tuple[ParamSpec, ...]) -> st.SearchStrategy[dict]:
    """Suggestions as a study might send them: in or out of bounds, partial, with foreign keys."""
    values: dict[str, st.SearchStrategy] = {}
    for spec in specs:
        if spec.kind == "categorical":
            values[spec.name] = st.sampled_from((*spec.choices, "unknown"))
        else:
            values[spec.name] = st.floats(spec.low - 1, spec.high + 1, allow_nan=False)  # type: ignore[operator]
    return st.fixed_dictionaries({}, optional={**values, "router_temperature": st.floats(0, 1)})


@PROPERTY
@given(data=st.data())
def test_projection_returns_a_pool_member_legal_on_the_backend(pairs: list, data: st.DataObject) -> None:
    branch, backend = data.draw(st.sampled_from(pairs))
    point = data.draw(points(feature_params(branch)))
    chosen = project(branch, backend, point)
    assert chosen in branch.configs_for(backend)
    assert backend in chosen.backends
    assert project(branch, backend, dict(point)) is chosen


@PROPERTY
@given(data=st.data())
def test_projection_is_idempotent_on_pool_members(pairs: list, data: st.DataObject) -> None:
    branch, backend = data.draw(st.sampled_from(pairs))
    candidates = branch.configs_for(backend)
    config = candidates[data.draw(st.integers(0, len(candidates) - 1))]
    assert project(branch, backend, features(config)) is config


def test_dense_feature_params_is_budget_share_and_engine_size(qwen_branches: tuple) -> None:
    agg = next(b for b in qwen_branches if b.mode == "agg")
    assert feature_params(agg) == (
        ParamSpec("used_gpu_ratio", "double", low=0.125, high=1.0),
        ParamSpec("log2_gpus_per_engine", "integer", low=0, high=3),
    )
    disagg = next(b for b in qwen_branches if b.mode == "disagg")
    assert [s.name for s in feature_params(disagg)] == [
        "used_gpu_ratio", "prefill_share", "prefill_log2_gpus_per_engine", "decode_log2_gpus_per_engine",
    ]


def test_moe_feature_params_has_modes_and_mixed_fractions(deepseek_branches: tuple) -> None:
    agg = next(b for b in deepseek_branches if b.mode == "agg")
    specs = {s.name: s for s in feature_params(agg)}
    assert specs["attention_mode"].choices == ("dp", "tp", "tp+dp")
    assert specs["ffn_mode"].kind == "categorical"
    assert (specs["attention_tp_fraction"].low, specs["attention_tp_fraction"].high) == (0.0, 1.0)
    assert (specs["log2_gpus_per_engine"].low, specs["log2_gpus_per_engine"].high) == (3, 4)


def test_modes_match_before_distance(deepseek_branches: tuple) -> None:
    agg = next(b for b in deepseek_branches if b.mode == "agg")
    point = {"attention_mode": "dp", "ffn_mode": "ep", "used_gpu_ratio": 0.5, "log2_gpus_per_engine": 3}
    for backend in agg.backends:
        shape = project(agg, backend, point).pools[0].shape
        assert (shape.attention_mode, shape.ffn_mode) == ("dp", "ep")


def test_ties_go_to_the_fewest_gpus(qwen_branches: tuple) -> None:
    for branch in qwen_branches:
        chosen = project(branch, "vllm", {})
        assert chosen is branch.configs_for("vllm")[0]
        assert chosen.used_gpus == min(c.used_gpus for c in branch.configs)


def test_a_single_pinned_config_bypasses_projection(qwen_branches: tuple) -> None:
    (branch,) = enumerate_branches(
        SpaceRequest("Qwen/Qwen3-32B-FP8", "h200_sxm", modes=("agg",), gpu_budget=8, context_length=4096,
                     pinned_parallel_configs=({"tp": 4},))
    )
    assert feature_params(branch) == ()
    assert project(branch, "vllm", {"used_gpu_ratio": 0.1}).pools[0].shape == WorkerShape(tp=4)


def test_projection_for_a_backend_outside_the_branch_is_an_error(qwen_branches: tuple) -> None:
    with pytest.raises(ValueError) as error:
        project(qwen_branches[0], "trtllm", {})
    assert str(error.value) == "backend: 'trtllm' has no config in the agg branch (has: ['vllm', 'sglang'])"
