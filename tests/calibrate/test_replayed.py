"""A measured configuration pinned as measured and replayed by Spica's own evaluation."""

from __future__ import annotations

import pytest

from spica.calibrate.measurements import Measurement
from spica.calibrate.replayed import bundled_name, measured_candidate, nearest_version
from spica.core.errors import UserError
from spica.space.branches import RolePool
from spica.space.shapes import WorkerShape


def point(model="Qwen/Qwen3-32B", system="h100_sxm", backend="vllm", version="0.12.0", shape=WorkerShape(tp=2), **fields) -> Measurement:
    base = dict(source="m.csv:2", model=model, system=system, backend=backend, backend_version=version, mode="agg", isl=1024,
                osl=128, concurrency=16, pools=(RolePool("agg", shape, 1),), ttft_ms=188.0, tpot_ms=22.2)
    return Measurement(**{**base, **fields})


@pytest.mark.parametrize("measured, available, expected", [
    ("0.12.0", ("0.19.0", "0.24.0"), "0.19.0"),  # none at or below: the oldest above
    ("0.19.1", ("0.12.0", "0.19.0", "0.24.0"), "0.19.0"),
    ("1.2.0rc6.post2", ("1.0.0rc3", "1.2.0rc5", "1.3.0rc20"), "1.2.0rc5"),
    ("nightly-dev", ("0.5.9", "0.5.14"), "0.5.14"),
    (None, ("0.5.9", "0.5.14"), "0.5.14"),
])
def test_the_perf_data_version_nearest_the_measured_engine(measured, available, expected):
    assert nearest_version(measured, available) == expected


def test_measured_spellings_of_a_model_are_ai_configurators():
    assert bundled_name("meta-llama/Llama-3.1-70B") == "meta-llama/Meta-Llama-3.1-70B"
    assert bundled_name("zhipuai/GLM-5") == "zai-org/GLM-5"
    assert bundled_name("Qwen/Qwen3-32B") == "Qwen/Qwen3-32B"


@pytest.mark.e2e
def test_a_measured_point_is_replayed_at_its_shape_and_load(predict_in_worker):
    predicted = predict_in_worker(point())
    assert predicted.status == "feasible" and predicted.backend_version == "0.24.0"
    assert 0.3 < predicted.ttft_ms / 188.0 < 3 and 0.7 < predicted.tpot_ms / 22.2 < 1.3
    assert predicted.tokens_per_s_per_gpu > 0


@pytest.mark.e2e
def test_what_cannot_be_pinned_is_counted_by_category(predict_in_worker):
    wide = predict_in_worker(point(model="deepseek-ai/DeepSeek-V3", system="b200_sxm", backend="sglang", version="0.5.9",
                         shape=WorkerShape(tp=64, moe_tp=8, moe_ep=8)))
    assert wide.status == "unexpressible" and wide.reason.startswith("worker_too_wide: ")
    unknown = predict_in_worker(point(model="example/NoSuchModel-7B"))
    assert unknown.status == "unexpressible" and unknown.reason.startswith("unknown_model: ")
    untimed = predict_in_worker(point(model="openai/gpt-oss-120b", system="h200_sxm", backend="trtllm", version="1.3.0rc20",
                            shape=WorkerShape(tp=4, moe_tp=4)))
    assert untimed.status == "unexpressible" and untimed.reason.startswith("no_perf_data: ") and "MoE data missing" in untimed.reason


def test_a_wide_expert_parallel_point_is_pinned_on_an_nvl72_rack_only():
    """A DEP32 measured on GB200 is pinned as measured once its context attention is timed in
    bfloat16 (all AIS holds for DeepSeek's context MLA there); on an 8-GPU-node system it is too wide."""
    dep32 = dict(model="deepseek-ai/DeepSeek-R1", backend="trtllm", version="1.3.0rc5",
                 shape=WorkerShape(attention_dp=32, moe_ep=32), quant=(("moe_quant_mode", "nvfp4"),))
    config, candidate = measured_candidate(point(system="gb200", **dep32), unmeasured={"fmha_quant_mode": "bfloat16"})
    assert config.search_space.fmha_quant_mode == ["bfloat16"]
    assert (candidate["attention_dp"], candidate["moe_ep"], candidate["fmha_quant_mode"]) == (32, 32, "bfloat16")
    with pytest.raises(UserError, match="^no_perf_data: .*context MLA data missing"):
        measured_candidate(point(system="gb200", **dep32))
    with pytest.raises(UserError, match="^worker_too_wide: .*beyond_nvlink_domain: a 32-GPU wide-EP worker"):
        measured_candidate(point(system="b200_sxm", **dep32), unmeasured={"fmha_quant_mode": "bfloat16"})


@pytest.mark.parametrize("precision, unmeasured, expected, kv_tokens", [
    ("fp8", {}, ("fp8", "fp8"), 318_208),  # an fp8 checkpoint's KV cache: twice the tokens of bfloat16 on the same memory
    ("fp4", {}, ("fp8", "fp8"), 318_208),
    ("bf16", {}, ("bfloat16", "bfloat16"), 159_104),
    (None, {}, (None, None), 159_104),  # no precision: the checkpoint's own (Qwen3-32B: bfloat16)
    ("fp8", {"kvcache_quant_mode": "bfloat16", "fmha_quant_mode": "bfloat16"}, ("bfloat16", "bfloat16"), 159_104),  # the user's modes win
])
def test_a_silicon_rows_precision_sets_the_kv_cache_it_was_measured_with(precision, unmeasured, expected, kv_tokens):
    """Qwen3-32B fp8 on one H100 with TensorRT-LLM: the pool a measured row ran with (AIC's memory model)."""
    measured = point(backend="trtllm", version="1.0.0rc3", shape=WorkerShape(tp=1), precision=precision,
                     quant=(("gemm_quant_mode", "fp8"),))
    _, candidate = measured_candidate(measured, unmeasured=unmeasured)
    modes = (candidate.get("kvcache_quant_mode"), candidate.get("fmha_quant_mode"))
    assert (modes, candidate["agg_kv_capacity_tokens"]) == (expected, kv_tokens)


def test_of_what_a_precision_implies_a_row_takes_as_much_as_ais_can_time():
    """DeepSeek-V3 fp8 on h200_sxm with SGLang: AIS holds no fp8 context MLA there, so the row keeps
    the fp8 KV cache and its checkpoint's context attention; Llama-3.1-8B there is timed with both."""
    deepseek = point(model="deepseek-ai/DeepSeek-V3", system="h200_sxm", backend="sglang", version="0.5.9", precision="fp8",
                     shape=WorkerShape(tp=8, moe_tp=8), quant=(("gemm_quant_mode", "fp8"), ("moe_quant_mode", "fp8_block")))
    _, candidate = measured_candidate(deepseek)
    assert (candidate.get("kvcache_quant_mode"), candidate.get("fmha_quant_mode")) == ("fp8", None)
    llama = point(model="meta-llama/Llama-3.1-8B-Instruct", system="h200_sxm", backend="sglang", version="0.5.6.post2",
                  precision="fp8", shape=WorkerShape(tp=1), quant=(("gemm_quant_mode", "fp8_block"),))
    _, candidate = measured_candidate(llama)
    assert (candidate.get("kvcache_quant_mode"), candidate.get("fmha_quant_mode")) == ("fp8", "fp8")


@pytest.mark.parametrize("model, system, backend, version, shape, batched", [
    ("meta-llama/Llama-3.1-8B-Instruct", "b200_sxm", "sglang", "0.5.9", WorkerShape(tp=1), 16_384),  # 180 GiB: SGLang's largest
    ("meta-llama/Llama-3.1-8B-Instruct", "h200_sxm", "sglang", "0.5.9", WorkerShape(tp=1), 8_192),  # 141 GiB
    ("meta-llama/Llama-3.1-8B-Instruct", "b200_sxm", "vllm", "0.12.0", WorkerShape(tp=1), 8_192),
    ("deepseek-ai/DeepSeek-V3", "b200_sxm", "sglang", "0.5.9", WorkerShape(attention_dp=8, moe_tp=8), 2_048),  # each DP rank's share
])
def test_a_row_is_replayed_with_the_batching_its_engine_defaults_to_on_that_gpu(model, system, backend, version, shape, batched):
    _, candidate = measured_candidate(point(model=model, system=system, backend=backend, version=version, shape=shape))
    assert (candidate["agg_max_num_batched_tokens"], candidate["agg_max_num_seqs"]) == (batched, 1024)
