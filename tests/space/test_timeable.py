"""Enumeration offers only shapes AIS can time: the others are dropped with AIS's reason, never replayed to fail."""

from __future__ import annotations

from spica.space import SpaceRequest, enumerate_branches
from spica.space.shapes import WorkerShape
from spica.space.table import format_pool_table
from spica.space.timeable import untimeable


def test_gpt_oss_pure_tp_moe_shapes_are_dropped_on_trtllm_where_ais_has_no_data():
    request = SpaceRequest(model_name="openai/gpt-oss-120b", hardware_sku="h200_sxm", backends=("trtllm",), modes=("agg",), gpu_budget=8)
    (branch,) = enumerate_branches(request)
    untimed = {a.shape for a in branch.assessments if "no_perf_data" in a.exclusion_codes}
    kept = {pool.shape for config in branch.configs for pool in config.pools}
    assert untimed and all(shape.moe_tp > 1 for shape in untimed)
    assert kept and all(shape.moe_tp == 1 for shape in kept)
    assert WorkerShape(tp=1, attention_dp=8, moe_tp=1, moe_ep=8) in kept
    reason = next(part for a in branch.assessments for part in a.exclusions if part.startswith("no_perf_data"))
    assert "MoE data missing" in reason and "w4a16_mxfp4" in reason
    assert "trtllm agg shapes AIS cannot time: " in format_pool_table([branch])


def test_every_dense_tp_shape_is_timeable():
    shapes = [WorkerShape(tp=tp) for tp in (1, 2, 4, 8)]
    assert untimeable("Qwen/Qwen3-32B", "h200_sxm", "vllm", "0.24.0", "agg", shapes, 64, moe=False) == {}
