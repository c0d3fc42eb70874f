from __future__ import annotations

import pytest

from spica.space.shapes import (
    ModelInfo,
    WorkerShape,
    broken_rules,
    enumerate_shapes,
    load_model_info,
    parse_shape,
)

DENSE = ModelInfo("dense", "LlamaForCausalLM", is_moe=False, max_context=131072)
MOE = ModelInfo("moe", "DeepseekV3ForCausalLM", is_moe=True, max_context=163840)


def names(shape: WorkerShape, model: ModelInfo, backend: str) -> list[str]:
    return [rule.name for rule in broken_rules(shape, model, backend)]


def test_dense_models_get_tensor_parallel_shapes_only() -> None:
    assert enumerate_shapes(DENSE, 8) == tuple(WorkerShape(tp=g) for g in (1, 2, 4, 8))


def test_moe_shapes_cover_every_split_of_the_width() -> None:
    shapes = enumerate_shapes(MOE, 16)
    # per width w: (number of divisors of w)^2 splits -> 1 + 4 + 9 + 16 + 25
    assert len(shapes) == 55
    assert all(s.tp * s.attention_dp == s.moe_tp * s.moe_ep for s in shapes)
    eight = {s.strategy for s in shapes if s.gpus == 8}
    assert {"tp", "tep", "dep", "tp+dp/ep", "dp/tp"} <= eight


def test_wide_expert_parallel_shapes_only_within_an_nvlink_domain() -> None:
    assert enumerate_shapes(MOE, 72) == enumerate_shapes(MOE, 16)  # a node-scale system: nothing wider than 16
    rack = enumerate_shapes(MOE, 72, nvlink_domain=72)
    wide = [s for s in rack if s.gpus > 16]
    assert [(s.gpus, s.tp) for s in wide] == [(32, 1), (32, 2), (32, 4), (32, 8), (64, 1), (64, 2), (64, 4), (64, 8)]
    assert all(s.moe_tp == 1 and s.moe_ep == s.gpus and s.is_wide_ep for s in wide)
    assert max(s.gpus for s in enumerate_shapes(MOE, 48, nvlink_domain=72)) == 32  # the budget still caps the width
    assert enumerate_shapes(DENSE, 72, nvlink_domain=72) == enumerate_shapes(DENSE, 16)


def test_wide_workers_are_legal_for_expert_parallel_moe_on_trtllm_and_sglang_only() -> None:
    dep32 = WorkerShape(attention_dp=32, moe_ep=32)
    assert names(dep32, MOE, "trtllm") == names(dep32, MOE, "sglang") == []
    assert names(dep32, MOE, "vllm") == ["vllm_no_wide_ep"]
    assert names(WorkerShape(tp=8, attention_dp=8, moe_ep=64), MOE, "sglang") == []
    assert names(WorkerShape(tp=32, moe_tp=32), MOE, "sglang") == ["gpus_per_worker"]  # wide, but TP experts
    assert names(WorkerShape(tp=16, attention_dp=2, moe_ep=32), MOE, "sglang") == ["gpus_per_worker"]  # attention TP > 8
    assert names(WorkerShape(tp=32), DENSE, "sglang") == ["gpus_per_worker"]
    assert names(WorkerShape(attention_dp=72, moe_ep=72), MOE, "sglang") == ["gpus_per_worker"]


@pytest.mark.parametrize(
    ("shape", "strategy", "attention", "ffn"),
    [
        (WorkerShape(tp=8, moe_tp=8), "tp", "tp", "tp"),
        (WorkerShape(tp=8, moe_ep=8), "tep", "tp", "ep"),
        (WorkerShape(attention_dp=8, moe_ep=8), "dep", "dp", "ep"),
        (WorkerShape(tp=2, attention_dp=4, moe_tp=2, moe_ep=4), "tp+dp/tp+ep", "tp+dp", "tp+ep"),
        (WorkerShape(), "tp", "tp", "tp"),
    ],
)
def test_strategy_names(shape: WorkerShape, strategy: str, attention: str, ffn: str) -> None:
    assert (shape.strategy, shape.attention_mode, shape.ffn_mode) == (strategy, attention, ffn)


def test_trtllm_forbids_tp_with_attention_dp_and_vllm_forbids_moe_tp_with_ep() -> None:
    mixed_attention = WorkerShape(tp=2, attention_dp=4, moe_ep=8)
    mixed_ffn = WorkerShape(tp=8, moe_tp=2, moe_ep=4)
    assert names(mixed_attention, MOE, "trtllm") == ["trtllm_no_tp_with_attention_dp"]
    assert names(mixed_attention, MOE, "vllm") == []
    assert names(mixed_ffn, MOE, "vllm") == ["vllm_no_moe_tp_with_moe_ep"]
    assert names(mixed_ffn, MOE, "trtllm") == []
    assert names(mixed_ffn, MOE, "sglang") == []


def test_general_rules() -> None:
    assert names(WorkerShape(tp=3), DENSE, "vllm") == ["gpus_per_worker"]
    assert names(WorkerShape(tp=2, pp=2), DENSE, "vllm") == ["no_pipeline_parallel"]
    assert names(WorkerShape(attention_dp=2), DENSE, "sglang") == ["dense_is_tp"]
    assert names(WorkerShape(tp=4, moe_ep=2), MOE, "sglang") == ["moe_width"]


def test_parse_shape_defaults_and_errors() -> None:
    assert parse_shape({"tp": 2, "replicas": 3}, "x", extra_keys=("replicas",)) == WorkerShape(tp=2)
    with pytest.raises(ValueError) as unknown:
        parse_shape({"tp": 2, "dp": 2}, "parallel_configs[0]")
    assert str(unknown.value) == (
        "parallel_configs[0]: unknown key 'dp' (allowed: tp, pp, attention_dp, moe_tp, moe_ep)"
    )
    with pytest.raises(ValueError) as bad:
        parse_shape({"tp": 0}, "parallel_configs[1]")
    assert str(bad.value) == "parallel_configs[1].tp: must be a positive integer, got 0"


def test_model_info_comes_from_aiconfigurator_configs() -> None:
    assert load_model_info("Qwen/Qwen3-32B-FP8") == ModelInfo("Qwen/Qwen3-32B-FP8", "Qwen3ForCausalLM", False, 40960)
    deepseek = load_model_info("deepseek-ai/DeepSeek-V3")
    assert (deepseek.is_moe, deepseek.max_context) == (True, 163840)


def test_an_unknown_model_names_close_bundled_ones_without_trying_the_network() -> None:
    with pytest.raises(ValueError) as error:
        load_model_info("Qwen/Qwen3-33B")
    message = str(error.value)
    assert message.startswith("search_space.model_name: 'Qwen/Qwen3-33B' is not among AI Configurator's ")
    assert "bundled models and is not a local folder with a config.json; close names: Qwen/Qwen3-32B" in message
    assert "\n" not in message and "HuggingFace" not in message
    with pytest.raises(ValueError, match=r"^search_space.model_name: '/nonexistent/model' is not among"):
        load_model_info("/nonexistent/model")


def test_an_unknown_system_lists_the_known_ones() -> None:
    from spica.space import SpaceRequest, enumerate_branches

    with pytest.raises(ValueError) as error:
        enumerate_branches(SpaceRequest(model_name="Qwen/Qwen3-32B", hardware_sku="h999_sxm", modes=("agg",)))
    assert str(error.value).startswith("search_space.hardware_sku: 'h999_sxm' has no AI Configurator ")
    assert "perf data for vllm; systems it knows: " in str(error.value) and "h200_sxm" in str(error.value)
