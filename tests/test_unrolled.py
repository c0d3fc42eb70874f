"""The typed view of an unrolled candidate: each pool's system, shape, GPUs and engine knobs read once."""

from __future__ import annotations

import pytest

from spica.core.unrolled import Unrolled

DISAGG = {
    "deployment_mode": "disagg", "backend": "vllm", "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm",
    "prefill_tp": 2, "prefill_pp": 1, "prefill_attention_dp": 1, "prefill_strategy": "tp", "prefill_replicas": 2,
    "decode_tp": 1, "decode_pp": 1, "decode_attention_dp": 4, "decode_moe_tp": 1, "decode_moe_ep": 4,
    "decode_strategy": "dep", "decode_replicas": 1, "prefill_block_size": 64, "prefill_max_num_seqs": 4,
    "prefill_num_gpu_blocks": 100, "router_mode": "kv_router", "overlap_score_credit": 1, "used_gpus": 8,
}  # fmt: skip


def test_pools_follow_their_roles_system_and_count_their_gpus() -> None:
    view = Unrolled.of(DISAGG)
    prefill, decode = view.pools
    assert (prefill.hardware_sku, decode.hardware_sku, view.mixed_hardware) == ("h200_sxm", "h200_sxm", False)
    assert (prefill.gpus, prefill.total_gpus, decode.gpus, decode.moe) == (2, 4, 4, True)
    assert (prefill.block_size, prefill.max_num_seqs, decode.block_size) == (64, 4, None)  # a record's absent knobs
    assert view.router.knobs == {"overlap_score_credit": 1.0} and view.label == "disagg vllm P 2xtp2 + D 1xdep4"
    mixed = Unrolled.of({**DISAGG, "prefill_hardware_sku": "h100_sxm", "decode_hardware_sku": "h200_sxm"})
    assert mixed.hardware_skus == ("h100_sxm", "h200_sxm") and mixed.pool("prefill").hardware_sku == "h100_sxm"
    assert mixed.label == "disagg vllm P 2xtp2 @h100_sxm + D 1xdep4 @h200_sxm"
    assert Unrolled.of(mixed) is mixed


def test_roles_a_candidate_lacks_are_named() -> None:
    view = Unrolled.of(DISAGG)
    with pytest.raises(ValueError, match=r"^role 'agg' does not exist in a disagg candidate$"):
        view.pool("agg")
    with pytest.raises(ValueError, match=r"^role: 'mixed' is not one of agg, prefill, decode$"):
        view.pool("mixed")
    with pytest.raises(ValueError, match=r"^mode: 'split' is not one of agg, disagg$"):
        Unrolled.of({**DISAGG, "deployment_mode": "split"})
