"""Disagg pools on their own systems: each role sized by its system's memory model, within per-system budgets."""

from __future__ import annotations

import pytest

from spica.core.errors import UserError
from spica.space import SpaceRequest, enumerate_branches

MIXED = dict(
    model_name="Qwen/Qwen3-32B-FP8", hardware_sku="h200_sxm", prefill_hardware_sku="h100_sxm", backends=("vllm",),
    modes=("disagg",), context_length=4096, gpu_budget=6, gpu_budget_per_sku={"h100_sxm": 2, "h200_sxm": 4},
)


def test_roles_and_budgets_per_system() -> None:
    request = SpaceRequest(**MIXED)
    assert (request.sku("prefill"), request.sku("decode"), request.skus) == ("h100_sxm", "h200_sxm", ("h100_sxm", "h200_sxm"))
    assert (request.sku_budget("h100_sxm"), request.sku_budget("h200_sxm")) == (2, 4)
    assert request.within_sku_budgets(("prefill", "decode"), (2, 4))
    assert not request.within_sku_budgets(("prefill", "decode"), (4, 2))
    same = SpaceRequest(**{**MIXED, "prefill_hardware_sku": None, "gpu_budget_per_sku": {"h200_sxm": 3}})
    assert same.skus == ("h200_sxm",) and not same.within_sku_budgets(("prefill", "decode"), (2, 2))


def test_each_role_is_sized_on_its_system_and_stays_in_its_budget() -> None:
    (branch,) = enumerate_branches(SpaceRequest(**MIXED))
    assert dict(branch.role_skus) == {"prefill": "h100_sxm", "decode": "h200_sxm"}
    for config in branch.configs:
        assert config.pool("prefill").gpus <= 2 and config.pool("decode").gpus <= 4
    kv = {(a.role, a.shape.tp): a.kv_tokens for a in branch.assessments if a.kv_tokens}
    assert kv[("decode", 1)] > 2 * kv[("prefill", 1)]  # an H200 (141 GB) holds far more KV than an H100 (80 GB)
    over = next(a for a in branch.assessments if a.role == "prefill" and a.shape.tp == 4)
    assert over.exclusions == ("over_budget: needs 4 GPUs > gpu_budget_per_sku h100_sxm 2",)


def test_an_unknown_role_system_names_its_field() -> None:
    with pytest.raises(UserError) as info:
        enumerate_branches(SpaceRequest(**{**MIXED, "decode_hardware_sku": "h999_sxm", "gpu_budget_per_sku": {}}))
    assert info.value.lines[0].startswith(
        "search_space.decode_hardware_sku: 'h999_sxm' has no AI Configurator 0.12.0 perf data for vllm; systems it knows: ")
