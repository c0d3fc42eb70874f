"""Enumeration against the real AI Configurator 0.12 memory model."""

from __future__ import annotations

import itertools
import logging

import pytest

from spica.space import (
    InvalidPinnedParallelConfig,
    NoViableParallelConfig,
    SpaceRequest,
    WorkerShape,
    enumerate_branches,
    format_pool_table,
)
from spica.space import capacity

QWEN = "Qwen/Qwen3-32B-FP8"
DEEPSEEK = "deepseek-ai/DeepSeek-V3"
AGG_SETTINGS = capacity.MemorySettings(0.9, 32768)  # SpaceRequest's agg defaults


def rank_tokens(model: str, backend: str, shape: WorkerShape, system: str = "h200_sxm") -> int:
    version = capacity.perf_data_version(system, backend)
    return capacity.rank_capacities(model, system, backend, version, AGG_SETTINGS, [shape])[shape].tokens


def by_mode(branches: tuple) -> dict:
    return {branch.mode: branch for branch in branches}


# --- acceptance -------------------------------------------------------------------------


def test_qwen_pools_hold_the_context_on_both_backends(qwen_branches: tuple) -> None:
    branches = by_mode(qwen_branches)
    assert set(branches) == {"agg", "disagg"}
    gpus = (1, 2, 4, 8)
    assert len(branches["agg"].configs) == sum(8 // g for g in gpus)
    disagg_pairs = sum(
        1
        for gp, gd in itertools.product(gpus, gpus)
        for rp, rd in itertools.product(range(1, 9), range(1, 9))
        if gp * rp + gd * rd <= 8
    )
    assert len(branches["disagg"].configs) == disagg_pairs
    for branch in branches.values():
        assert branch.backends == ("vllm", "sglang")
        for config in branch.configs:
            assert config.backends == ("vllm", "sglang")
            for backend, pool in itertools.product(config.backends, config.pools):
                tokens = config.kv_tokens(backend, pool.role)
                assert tokens is not None and tokens >= 4096
                assert config.num_gpu_blocks(backend, pool.role) == tokens // 64


def test_qwen_table_lists_kv_tokens_per_shape(qwen_branches: tuple) -> None:
    table = format_pool_table(qwen_branches)
    agg = by_mode(qwen_branches)["agg"]
    tp2 = next(a for a in agg.assessments if a.backend == "sglang" and a.shape == WorkerShape(tp=2))
    assert "[agg] 15 configs; backends: vllm" in table
    assert "vllm kv_tokens / blocks  sglang kv_tokens / blocks" in table
    assert f"{tp2.kv_tokens:,} / {tp2.num_gpu_blocks:,}" in table
    assert "context_length 4096; gpu budget [1, 8]" in table


def test_deepseek_has_no_shape_under_eight_gpus(deepseek_branches: tuple) -> None:
    for branch in deepseek_branches:
        assert all(pool.shape.gpus >= 8 for config in branch.configs for pool in config.pools)
        assert not any(a.viable for a in branch.assessments if a.shape.gpus < 8)


def test_deepseek_tep_and_dep_shapes_wherever_legal(deepseek_branches: tuple) -> None:
    agg = by_mode(deepseek_branches)["agg"]
    tagged: dict[WorkerShape, set[str]] = {}
    for config in agg.configs:
        tagged.setdefault(config.pools[0].shape, set()).update(config.backends)
    for shape in (WorkerShape(tp=8, moe_ep=8), WorkerShape(tp=16, moe_ep=16), WorkerShape(attention_dp=8, moe_ep=8),
                  WorkerShape(attention_dp=16, moe_ep=16)):
        viable = {a.backend for a in agg.assessments if a.shape == shape and a.viable}
        assert tagged.get(shape, set()) == viable
    assert tagged[WorkerShape(tp=8, moe_ep=8)] == {"vllm", "sglang", "trtllm"}
    assert tagged[WorkerShape(attention_dp=16, moe_ep=16)] == {"vllm", "sglang", "trtllm"}


def test_deepseek_backend_rules_are_applied_and_visible(deepseek_branches: tuple) -> None:
    for branch in deepseek_branches:
        for config in branch.configs:
            shapes = [pool.shape for pool in config.pools]
            if any(s.tp > 1 and s.attention_dp > 1 for s in shapes):
                assert "trtllm" not in config.backends
            if any(s.moe_tp > 1 and s.moe_ep > 1 for s in shapes):
                assert "vllm" not in config.backends
    agg = by_mode(deepseek_branches)["agg"]
    mixed = WorkerShape(tp=2, attention_dp=8, moe_ep=16)
    assert any(c.pools[0].shape == mixed and c.backends == ("vllm", "sglang") for c in agg.configs)
    trtllm = next(a for a in agg.assessments if a.backend == "trtllm" and a.shape == mixed)
    assert trtllm.excluded_by == "trtllm_no_tp_with_attention_dp: trtllm forbids tp > 1 together with attention_dp > 1"
    table = format_pool_table(deepseek_branches)
    assert "trtllm_no_tp_with_attention_dp [trtllm]: trtllm forbids tp > 1 together with attention_dp > 1" in table
    assert "excluded: trtllm_no_tp_with_attention_dp" in table


def test_llama_70b_tp1_is_rejected_for_a_long_context_despite_positive_capacity() -> None:
    llama = "meta-llama/Meta-Llama-3.1-70B"
    tokens = rank_tokens(llama, "trtllm", WorkerShape())
    assert 0 < tokens < 32768
    (branch,) = enumerate_branches(
        SpaceRequest(llama, "h200_sxm", backends=("trtllm",), modes=("agg",), gpu_budget=8, context_length=32768)
    )
    tp1 = next(a for a in branch.assessments if a.shape == WorkerShape())
    assert tp1.rank_kv_tokens == tokens
    assert tp1.excluded_by == f"kv_below_context: KV holds {tokens} tokens per attention rank < context_length 32768"
    assert all(config.pools[0].shape.gpus > 1 for config in branch.configs)
    with pytest.raises(InvalidPinnedParallelConfig) as pinned:
        enumerate_branches(
            SpaceRequest(llama, "h200_sxm", backends=("trtllm",), modes=("agg",), gpu_budget=8, context_length=32768,
                         pinned_parallel_configs=({"tp": 1},))
        )
    assert str(pinned.value) == (
        "parallel_configs[0] {'tp': 1} is legal for no backend: trtllm: kv_below_context: "
        f"KV holds {tokens} tokens per attention rank < context_length 32768"
    )


# --- drop / skip / error paths ------------------------------------------------------------


def test_backend_without_perf_data_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "spica.space")
    (branch,) = enumerate_branches(
        SpaceRequest("Qwen/Qwen3-0.6B", "b60", backends=("vllm", "sglang"), modes=("agg",), gpu_budget=2,
                     context_length=4096)
    )
    reason = f"no AI Configurator {capacity.aic_version()} perf data for b60"
    assert branch.backends == ("vllm",)
    assert branch.dropped == (("sglang", reason),)
    assert caplog.messages == [f"backend sglang dropped from agg: {reason}"]


def test_backend_whose_shapes_cannot_hold_the_context_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    vllm, sglang = (rank_tokens(QWEN, backend, WorkerShape()) for backend in ("vllm", "sglang"))
    assert vllm > sglang + 128
    context = (vllm + sglang) // 2
    caplog.set_level(logging.WARNING, "spica.space")
    (branch,) = enumerate_branches(
        SpaceRequest(QWEN, "h200_sxm", backends=("vllm", "sglang"), modes=("agg",), gpu_budget=1,
                     context_length=context)
    )
    reason = f"no legal agg shape holds a {context}-token sequence (largest: tp1 with {sglang} KV tokens per attention rank)"
    assert [c.backends for c in branch.configs] == [("vllm",)]
    assert caplog.messages == [f"backend sglang dropped from agg: {reason}"]


def test_mode_without_a_viable_backend_is_skipped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "spica.space")
    branches = enumerate_branches(SpaceRequest(QWEN, "h200_sxm", gpu_budget=1, context_length=4096))
    assert [b.mode for b in branches] == ["agg"]
    reason = "no config fits the gpu budget [1, 1] (smallest viable: 2 GPUs)"
    assert caplog.messages == [
        f"backend vllm dropped from disagg: {reason}",
        f"mode disagg skipped: no backend has a viable parallel config (vllm: {reason})",
    ]


def test_no_viable_mode_names_model_hardware_budget_and_why(deepseek_branches: tuple) -> None:
    with pytest.raises(NoViableParallelConfig) as error:
        enumerate_branches(SpaceRequest(DEEPSEEK, "h200_sxm", modes=("agg",), gpu_budget=12, min_gpu_budget=9))
    assert str(error.value) == (
        "no viable parallel config for deepseek-ai/DeepSeek-V3 on h200_sxm within gpu budget [9, 12] at "
        "context_length 163840: agg: vllm: no config fits the gpu budget [9, 12] (smallest viable: 8 GPUs)"
    )
    with pytest.raises(NoViableParallelConfig) as small:
        enumerate_branches(SpaceRequest(DEEPSEEK, "h200_sxm", modes=("agg",), gpu_budget=4))
    assert str(small.value).startswith(
        "no viable parallel config for deepseek-ai/DeepSeek-V3 on h200_sxm within gpu budget [1, 4] at "
        "context_length 163840: agg: vllm: no legal agg shape leaves room for KV (no_kv_room: memory model says "
        "no KV budget: non-KV memory ("
    )


def test_pin_legal_for_no_backend_is_a_hard_error(deepseek_branches: tuple) -> None:
    with pytest.raises(InvalidPinnedParallelConfig) as rule:
        enumerate_branches(
            SpaceRequest(DEEPSEEK, "h200_sxm", backends=("trtllm",), modes=("agg",), gpu_budget=16,
                         pinned_parallel_configs=({"tp": 2, "attention_dp": 2, "moe_ep": 4},))
        )
    assert str(rule.value) == (
        "parallel_configs[0] {'tp': 2, 'attention_dp': 2, 'moe_ep': 4} is legal for no backend: "
        "trtllm: trtllm_no_tp_with_attention_dp: trtllm forbids tp > 1 together with attention_dp > 1"
    )
    pin = {"prefill": {"tp": 4, "replicas": 2}, "decode": {"tp": 2}}
    with pytest.raises(InvalidPinnedParallelConfig) as budget:
        enumerate_branches(
            SpaceRequest(QWEN, "h200_sxm", modes=("disagg",), gpu_budget=8, context_length=4096,
                         pinned_parallel_configs=(pin,))
        )
    assert str(budget.value) == f"parallel_configs[0] {pin} is legal for no backend: vllm: uses 10 GPUs, outside the gpu budget [1, 8]"
    with pytest.raises(ValueError) as data:  # no backend asked for has data for the system at all
        enumerate_branches(
            SpaceRequest("Qwen/Qwen3-0.6B", "b60", backends=("sglang",), modes=("agg",), gpu_budget=2,
                         pinned_parallel_configs=({"tp": 1},))
        )
    assert str(data.value).startswith(
        f"search_space.hardware_sku: 'b60' has no AI Configurator {capacity.aic_version()} perf data for sglang; systems it knows: "
    )


def test_wide_expert_parallel_workers_on_an_nvl72_rack_and_not_beyond_a_node_elsewhere() -> None:
    """DeepSeek on GB200 (NVL72): DEP32 and DEP64 workers are enumerated, sized and timed (AIS holds
    its context MLA there in bfloat16 only); on h200_sxm a pinned DEP32 is refused, with why."""
    request = SpaceRequest("deepseek-ai/DeepSeek-R1", "gb200", backends=("trtllm",), modes=("agg",), gpu_budget=64,
                           context_length=2048, quant_modes={"fmha_quant_mode": ("bfloat16",)})
    (branch,) = enumerate_branches(request)
    wide = {(c.pools[0].shape.label, c.pools[0].replicas) for c in branch.configs if c.pools[0].shape.gpus > 16}
    assert wide == {("tp1 dp32 etp1 ep32", 1), ("tp1 dp32 etp1 ep32", 2), ("tp1 dp64 etp1 ep64", 1)}
    dep32 = next(c for c in branch.configs if c.pools[0].shape.gpus == 32)
    assert dep32.kv_tokens("trtllm", "agg") > 32 * next(c for c in branch.configs if c.pools[0].shape.gpus == 8).kv_tokens("trtllm", "agg") / 8
    with pytest.raises(InvalidPinnedParallelConfig) as narrow:
        enumerate_branches(
            SpaceRequest(DEEPSEEK, "h200_sxm", backends=("sglang",), modes=("agg",), gpu_budget=32,
                         pinned_parallel_configs=({"attention_dp": 32, "moe_ep": 32},))
        )
    assert str(narrow.value) == (
        "parallel_configs[0] {'attention_dp': 32, 'moe_ep': 32} is legal for no backend: sglang: beyond_nvlink_domain: "
        "a 32-GPU wide-EP worker needs one NVLink domain of as many GPUs; h200_sxm joins 8"
    )


def test_a_backend_whose_fitting_shapes_ais_cannot_time_says_so_not_that_they_are_too_small() -> None:
    with pytest.raises(NoViableParallelConfig) as error:
        enumerate_branches(SpaceRequest("deepseek-ai/DeepSeek-R1", "gb200", backends=("trtllm",), modes=("agg",),
                                        gpu_budget=16, context_length=2048))
    assert "trtllm: every legal agg shape that holds a 2048-token sequence is excluded (e.g. tp16 dp1 etp1 ep16: " \
        "no_perf_data: perf database error: context MLA data missing" in str(error.value)


def test_pins_are_tagged_with_the_backends_that_allow_them(deepseek_branches: tuple) -> None:
    (branch,) = enumerate_branches(
        SpaceRequest(DEEPSEEK, "h200_sxm", backends=("vllm", "trtllm"), modes=("agg",), gpu_budget=16,
                     pinned_parallel_configs=({"tp": 2, "attention_dp": 4, "moe_ep": 8},
                                              {"tp": 8, "moe_ep": 8, "replicas": 2}))
    )
    assert branch.pinned
    assert [(c.used_gpus, c.backends) for c in branch.configs] == [(8, ("vllm",)), (16, ("vllm", "trtllm"))]


def test_single_pin_round_trips_and_unrolls(qwen_branches: tuple) -> None:
    (branch,) = enumerate_branches(
        SpaceRequest(QWEN, "h200_sxm", backends=("vllm", "sglang"), modes=("agg",), gpu_budget=8,
                     context_length=4096, pinned_parallel_configs=({"tp": 2, "replicas": 2},))
    )
    (config,) = branch.configs
    assert config.to_dict() == {"tp": 2, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "replicas": 2}
    assert config.unrolled("sglang") == {
        "deployment_mode": "agg",
        "backend": "sglang",
        "backend_version": capacity.perf_data_version("h200_sxm", "sglang"),
        "used_gpus": 4,
        "tp": 2, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "strategy": "tp", "replicas": 2,
        "agg_kv_capacity_tokens": config.kv_tokens("sglang", "agg"),
        "agg_num_gpu_blocks": config.kv_tokens("sglang", "agg") // 64,
    }


def test_disagg_config_unrolls_with_role_prefixes(qwen_branches: tuple) -> None:
    disagg = by_mode(qwen_branches)["disagg"]
    config = next(c for c in disagg.configs if c.pool("prefill").shape.tp == 2 and c.pool("decode").replicas == 3)
    assert config.to_dict() == {
        "prefill": {"tp": 2, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "replicas": 1},
        "decode": {"tp": 1, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "replicas": 3},
    }
    flat = config.unrolled("vllm")
    assert flat["used_gpus"] == 5 and flat["prefill_strategy"] == "tp" and flat["decode_replicas"] == 3
    assert flat["decode_num_gpu_blocks"] == flat["decode_kv_capacity_tokens"] // 64
    assert {k for k in flat if k.startswith("prefill_")} == {
        f"prefill_{k}" for k in ("tp", "pp", "attention_dp", "moe_tp", "moe_ep", "strategy", "replicas",
                                 "kv_capacity_tokens", "num_gpu_blocks")
    }


def test_kv_load_workloads_run_when_the_memory_model_exists(qwen_branches: tuple) -> None:
    branches = enumerate_branches(
        SpaceRequest(QWEN, "h200_sxm", modes=("agg",), gpu_budget=2, context_length=4096, needs_kv_capacity=True)
    )
    assert branches[0].kv_known


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pinned_parallel_configs": ({"tp": 1},)},
         "parallel_configs: pinning needs exactly one deployment_mode, got ['agg', 'disagg']"),
        ({"backends": ("vllm", "foo")}, "backend: unknown value 'foo' (allowed: vllm, sglang, trtllm)"),
        ({"gpu_budget": 8, "min_gpu_budget": 9}, "gpu budget: need 0 < min_gpu_budget <= gpu_budget, got 9 and 8"),
        ({"decode_gpu_memory_utilization": 1.5}, "decode_gpu_memory_utilization: must be in (0, 1]"),
    ],
)
def test_request_validation(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        SpaceRequest(QWEN, "h200_sxm", **kwargs)
    assert str(error.value) == message


def test_disagg_pin_needs_both_roles() -> None:
    with pytest.raises(ValueError) as error:
        enumerate_branches(SpaceRequest(QWEN, "h200_sxm", modes=("disagg",),
                                        pinned_parallel_configs=({"prefill": {"tp": 1}},)))
    assert str(error.value) == "parallel_configs[0]: a disagg pin needs exactly the keys prefill and decode, got ['prefill']"


def test_backend_allowing_no_pin_is_dropped_with_the_pins_reasons(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "spica.space")
    (branch,) = enumerate_branches(
        SpaceRequest(DEEPSEEK, "h200_sxm", backends=("vllm", "trtllm"), modes=("agg",), gpu_budget=16,
                     pinned_parallel_configs=({"tp": 2, "attention_dp": 4, "moe_ep": 8},))
    )
    assert branch.backends == ("vllm",)
    assert caplog.messages == [
        "backend trtllm dropped from agg: no pinned config is legal (parallel_configs[0]: "
        "trtllm_no_tp_with_attention_dp: trtllm forbids tp > 1 together with attention_dp > 1)"
    ]
