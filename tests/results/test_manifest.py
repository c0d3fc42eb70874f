"""The DynamoGraphDeployment of a candidate carries its engine, counts, router and planner over.

Flag names are checked with Dynamo's own argument parsers where they are installed (frontend,
TRT-LLM wrapper, vLLM wrapper) and the Planner's `--config` with Dynamo's `PlannerConfig`.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import warnings
from typing import Any

import pytest
import yaml

from spica.results.ledger import Candidate
from spica.results.manifest import dynamo_manifest, manifest_yaml

COMMON = {
    "backend_version": "0.11.0",
    "hardware_sku": "h200_sxm",
    "gpu_budget": 16,
    "min_gpu_budget": 2,
    "min_endpoint": 1,
    "context_length": 8192,
    "startup_time": 120.0,
    "aic_nextn": 0,
    "planner_scaling_policy": "disabled",
    "enable_throughput_scaling": False,
    "enable_load_scaling": False,
    "planner_optimization_target": "throughput",
    "concurrency": 64,
}
AGG_VLLM = {
    **COMMON,
    "deployment_mode": "agg", "backend": "vllm", "model_name": "Qwen/Qwen3-32B-FP8", "used_gpus": 8,
    "tp": 2, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "strategy": "tp", "replicas": 4,
    "agg_max_num_batched_tokens": 8192, "agg_max_num_seqs": 256, "agg_block_size": 16,
    "agg_gpu_memory_utilization": 0.9, "agg_enable_prefix_caching": True,
    "agg_kv_tokens": 775_000, "agg_num_gpu_blocks": 48_437,
    "router_mode": "kv_router", "overlap_score_credit": 0.8, "prefill_load_scale": 1.25, "router_temperature": 0.1,
}
DISAGG_SGLANG = {
    **COMMON,
    "deployment_mode": "disagg", "backend": "sglang", "model_name": "Qwen/Qwen3-30B-A3B", "used_gpus": 8,
    "prefill_tp": 4, "prefill_pp": 1, "prefill_attention_dp": 1, "prefill_moe_tp": 1, "prefill_moe_ep": 4,
    "prefill_strategy": "tep", "prefill_replicas": 1,
    "decode_tp": 1, "decode_pp": 1, "decode_attention_dp": 4, "decode_moe_tp": 1, "decode_moe_ep": 4,
    "decode_strategy": "dep", "decode_replicas": 1,
    "prefill_max_num_batched_tokens": 16384, "prefill_max_num_seqs": 8, "prefill_block_size": 64,
    "prefill_gpu_memory_utilization": 0.85, "prefill_enable_prefix_caching": True,
    "prefill_kv_tokens": 1_200_000, "prefill_num_gpu_blocks": 18_750,
    "decode_max_num_batched_tokens": 512, "decode_max_num_seqs": 128, "decode_block_size": 64,
    "decode_gpu_memory_utilization": 0.85, "decode_enable_prefix_caching": False,
    "decode_kv_tokens": 2_400_000, "decode_num_gpu_blocks": 37_500,
    "router_mode": "round_robin",
    "planner_scaling_policy": "throughput_and_load", "enable_throughput_scaling": True, "enable_load_scaling": True,
    "planner_optimization_target": "sla", "max_num_fpm_samples": 64, "fpm_sample_bucket_size": 16,
    "throughput_adjustment_interval_seconds": 60, "load_predictor": "kalman",
    "kalman_q_level": 1.0, "kalman_q_trend": 0.1, "kalman_r": 10.0, "kalman_min_points": 5,
    "load_adjustment_interval_seconds": 5, "load_scaling_down_sensitivity": 80, "load_min_observations": 5,
}
AGG_TRTLLM = {
    **COMMON,
    "deployment_mode": "agg", "backend": "trtllm", "backend_version": "1.0.0", "model_name": "deepseek-ai/DeepSeek-V3",
    "used_gpus": 8, "aic_nextn": 1,
    "tp": 1, "pp": 1, "attention_dp": 8, "moe_tp": 1, "moe_ep": 8, "strategy": "dep", "replicas": 1,
    "agg_max_num_batched_tokens": 4096, "agg_max_num_seqs": 64, "agg_block_size": 32,
    "agg_gpu_memory_utilization": 0.8, "agg_enable_prefix_caching": True,
    "agg_kv_tokens": 1_600_000, "agg_num_gpu_blocks": 50_000,
    "num_g2_blocks": 20_000, "kv_bytes_per_token": 70_272, "bandwidth_g1_to_g2_gbps": 50.0,
    "bandwidth_g2_to_g1_gbps": 50.0, "offload_batch_size": 32,
    "router_mode": "kv_router", "overlap_score_credit": 1.0, "prefill_load_scale": 1.0, "router_temperature": 0.0,
    "host_cache_hit_weight": 0.75, "disk_cache_hit_weight": 0.25, "router_queue_threshold": 0.9,
    "planner_scaling_policy": "load", "enable_load_scaling": True, "max_num_fpm_samples": 64,
    "fpm_sample_bucket_size": 16, "load_adjustment_interval_seconds": 5, "load_scaling_down_sensitivity": 80,
    "load_min_observations": 5,
}


def candidate(unrolled: dict[str, Any], **changes: Any) -> Candidate:
    return Candidate(
        key="a1b2c3d4e5f60718",
        branch="b0",
        round=1,
        status="feasible",
        unrolled={**unrolled, **changes},
        objectives={"throughput_per_gpu": 812.5},
        score=812.5,
        replay_input={"function": "run_synthetic_trace_replay", "args": [4000, 500, 1000],
                      "kwargs": {"sla_ttft_ms": 800.0, "sla_itl_ms": 25.0, "replay_concurrency": 64}},
    )


def flags(words: list[str]) -> dict[str, Any]:
    """`--flag value` words as a dict; a flag without a value maps to True."""
    parsed: dict[str, Any] = {}
    for index, word in enumerate(words):
        if word.startswith("--"):
            value = words[index + 1] if index + 1 < len(words) and not words[index + 1].startswith("--") else True
            parsed[word] = value
    return parsed


def container(service: dict[str, Any]) -> dict[str, Any]:
    return service["extraPodSpec"]["mainContainer"]


def test_agg_vllm_worker_carries_engine_flags_and_counts() -> None:
    manifest = dynamo_manifest(candidate(AGG_VLLM))
    assert manifest["apiVersion"] == "nvidia.com/v1alpha1" and manifest["kind"] == "DynamoGraphDeployment"
    assert manifest["metadata"]["name"] == "spica-agg-vllm-a1b2c3d4"
    services = manifest["spec"]["services"]
    assert list(services) == ["Frontend", "worker"]  # planner disabled: no Planner component
    worker = services["worker"]
    assert worker["componentType"] == "worker" and "subComponentType" not in worker
    assert worker["replicas"] == 4 and worker["resources"] == {"limits": {"gpu": "2"}}
    assert "envs" not in worker  # no planner, no offload
    main = container(worker)
    assert main["image"].startswith("nvcr.io/nvidia/ai-dynamo/vllm-runtime:")
    assert main["command"] == ["python3", "-m", "dynamo.vllm"]
    args = flags(main["args"])
    assert args["--model"] == args["--served-model-name"] == "Qwen/Qwen3-32B-FP8"
    assert (args["--tensor-parallel-size"], args["--pipeline-parallel-size"], args["--data-parallel-size"]) == ("2", "1", "1")
    assert (args["--max-num-seqs"], args["--max-num-batched-tokens"], args["--block-size"]) == ("256", "8192", "16")
    assert args["--gpu-memory-utilization"] == "0.9" and args["--max-model-len"] == "8192"
    assert args["--enable-prefix-caching"] is True and "--no-enable-prefix-caching" not in args
    assert json.loads(args["--kv-events-config"])["enable_kv_cache_events"] is True
    for absent in ("--enable-expert-parallel", "--disaggregation-mode", "--kv-transfer-config", "--speculative-config"):
        assert absent not in args


def test_disagg_vllm_with_offload_uses_kvbm_and_nixl_on_prefill_only() -> None:
    unrolled = {**DISAGG_SGLANG, "backend": "vllm", "num_g2_blocks": 4096, "kv_bytes_per_token": 98_304}
    services = dynamo_manifest(candidate(unrolled))["spec"]["services"]
    prefill, decode = flags(container(services["prefill"])["args"]), flags(container(services["decode"])["args"])
    assert prefill["--disaggregation-mode"] == "prefill" and decode["--disaggregation-mode"] == "decode"
    assert prefill["--enable-expert-parallel"] is True and prefill["--tensor-parallel-size"] == "4"
    assert decode["--data-parallel-size"] == "4" and decode["--tensor-parallel-size"] == "1"
    assert decode["--no-enable-prefix-caching"] is True
    connectors = json.loads(prefill["--kv-transfer-config"])["kv_connector_extra_config"]["connectors"]
    assert [c["kv_connector"] for c in connectors] == ["DynamoConnector", "NixlConnector"]
    assert json.loads(decode["--kv-transfer-config"]) == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert {"name": "DYN_KVBM_CPU_CACHE_OVERRIDE_NUM_BLOCKS", "value": "4096"} in services["prefill"]["envs"]
    assert all(env["name"] != "DYN_KVBM_CPU_CACHE_OVERRIDE_NUM_BLOCKS" for env in services["decode"]["envs"])
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.vllm.backend_args import DynamoVllmArgGroup

    parser = argparse.ArgumentParser()
    DynamoRuntimeArgGroup().add_arguments(parser)
    DynamoVllmArgGroup().add_arguments(parser)
    known, _engine_flags = parser.parse_known_args(container(services["decode"])["args"])
    assert known.disaggregation_mode == "decode"  # Dynamo's own vLLM wrapper accepts the role


def test_disagg_sglang_pools_and_planner() -> None:
    services = dynamo_manifest(candidate(DISAGG_SGLANG))["spec"]["services"]
    assert list(services) == ["Frontend", "Planner", "prefill", "decode"]
    for role in ("prefill", "decode"):
        assert services[role]["subComponentType"] == role and services[role]["replicas"] == 1
        assert services[role]["resources"] == {"limits": {"gpu": "4"}}
        assert {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": "20380"} in services[role]["envs"]
    prefill, decode = flags(container(services["prefill"])["args"]), flags(container(services["decode"])["args"])
    assert container(services["decode"])["command"] == ["python3", "-m", "dynamo.sglang"]
    assert (prefill["--tp"], prefill["--ep"], prefill["--page-size"]) == ("4", "4", "64")
    assert "--dp" not in prefill and "--enable-dp-attention" not in prefill and "--disable-radix-cache" not in prefill
    assert (prefill["--chunked-prefill-size"], prefill["--max-prefill-tokens"]) == ("16384", "16384")
    # DEP4 decode: SGLang's --tp spans the attention-DP ranks, request budgets are global.
    assert (decode["--tp"], decode["--dp"], decode["--ep"], decode["--enable-dp-attention"]) == ("4", "4", "4", True)
    assert decode["--max-running-requests"] == "512" and decode["--chunked-prefill-size"] == "2048"
    assert decode["--mem-fraction-static"] == "0.85" and decode["--disable-radix-cache"] is True
    for args, role in ((prefill, "prefill"), (decode, "decode")):
        assert args["--disaggregation-mode"] == role and args["--disaggregation-transfer-backend"] == "nixl"
        assert "--kv-events-config" not in args  # round robin needs no cache events
    assert flags(container(services["Frontend"])["args"]) == {"--router-mode": "round-robin"}


def test_planner_config_is_valid_for_dynamo_planner() -> None:
    from dynamo.planner.config.planner_config import PlannerConfig

    planner = dynamo_manifest(candidate(DISAGG_SGLANG))["spec"]["services"]["Planner"]
    main = container(planner)
    assert main["command"] == ["python3", "-m", "dynamo.planner"] and main["args"][0] == "--config"
    assert main["image"].startswith("nvcr.io/nvidia/ai-dynamo/dynamo-planner:")
    config = PlannerConfig.from_config_arg(main["args"][1])
    assert (config.environment, config.backend, config.mode, config.model_name) == ("kubernetes", "sglang", "disagg", "Qwen/Qwen3-30B-A3B")
    assert config.optimization_target == "sla" and (config.ttft_ms, config.itl_ms) == (800.0, 25.0)
    assert config.enable_throughput_scaling and config.enable_load_scaling
    assert (config.throughput_adjustment_interval_seconds, config.load_adjustment_interval_seconds) == (60, 5)
    assert (config.load_predictor, config.kalman_r, config.kalman_min_points) == ("kalman", 10.0, 5)
    assert (config.max_num_fpm_samples, config.fpm_sample_bucket_size, config.load_scaling_down_sensitivity) == (64, 16, 80)
    assert (config.max_gpu_budget, config.min_gpu_budget, config.min_endpoint) == (16, 2, 1)


@pytest.fixture
def trtllm_parser(monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """Dynamo's real TRT-LLM worker parser. It reads three defaults from TensorRT-LLM's
    BuildConfig, which is not installed here: only that class is stood in for."""
    from pydantic import BaseModel

    class BuildConfig(BaseModel):
        max_batch_size: int = 2048
        max_num_tokens: int = 8192
        max_seq_len: int | None = None
        max_beam_width: int = 1

    llmapi = types.ModuleType("tensorrt_llm.llmapi")
    llmapi.BuildConfig = BuildConfig  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tensorrt_llm", types.ModuleType("tensorrt_llm"))
    monkeypatch.setitem(sys.modules, "tensorrt_llm.llmapi", llmapi)
    monkeypatch.delitem(sys.modules, "dynamo.trtllm.backend_args", raising=False)
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.trtllm.backend_args import DynamoTrtllmArgGroup

    parser = argparse.ArgumentParser()
    DynamoRuntimeArgGroup().add_arguments(parser)
    DynamoTrtllmArgGroup().add_arguments(parser)
    return parser


def test_trtllm_dep_worker_parses_with_dynamo_parser(trtllm_parser: argparse.ArgumentParser) -> None:
    services = dynamo_manifest(candidate(AGG_TRTLLM))["spec"]["services"]
    worker = services["worker"]
    assert worker["resources"] == {"limits": {"gpu": "8"}} and worker["replicas"] == 1
    assert {"name": "DYN_KVBM_CPU_CACHE_OVERRIDE_NUM_BLOCKS", "value": "20000"} in worker["envs"]
    assert {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": "20380"} in worker["envs"]  # load planner on
    main = container(worker)
    assert main["image"].startswith("nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:")
    parsed = trtllm_parser.parse_args(main["args"])  # every flag must be a real dynamo.trtllm flag
    assert parsed.model == parsed.served_model_name == "deepseek-ai/DeepSeek-V3"
    assert (parsed.tensor_parallel_size, parsed.pipeline_parallel_size, parsed.expert_parallel_size) == (8, 1, 8)
    assert parsed.enable_attention_dp is True and parsed.disaggregation_mode == "agg"
    assert (parsed.max_batch_size, parsed.max_num_tokens, parsed.max_seq_len) == (64, 4096, 8192)
    assert (parsed.kv_block_size, parsed.free_gpu_memory_fraction) == (32, 0.8)
    assert parsed.publish_kv_events is True and parsed.connector == ["kvbm"]
    engine = json.loads(parsed.override_engine_args)
    assert engine["kv_cache_config"] == {"free_gpu_memory_fraction": 0.8, "tokens_per_block": 32, "enable_block_reuse": True}
    assert engine["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 1}
    planner = json.loads(container(services["Planner"])["args"][1])
    assert planner["optimization_target"] == "throughput" and planner["speculative_nextn"] == 1
    assert planner["enable_load_scaling"] is True and planner["enable_throughput_scaling"] is False


def test_frontend_router_flags_parse_with_dynamo_frontend() -> None:
    from dynamo.frontend.frontend_args import FrontendArgGroup, FrontendConfig

    parser = argparse.ArgumentParser()
    FrontendArgGroup().add_arguments(parser)
    frontend = dynamo_manifest(candidate(AGG_TRTLLM))["spec"]["services"]["Frontend"]
    assert frontend["componentType"] == "frontend" and container(frontend)["command"] == ["python3", "-m", "dynamo.frontend"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # knob flags move to --router-policy-config in v1.7
        config = FrontendConfig.from_cli_args(parser.parse_args(container(frontend)["args"]))
    config.validate()
    assert config.router_mode == "kv"
    assert (config.overlap_score_credit, config.prefill_load_scale, config.router_temperature) == (1.0, 1.0, 0.0)
    assert (config.host_cache_hit_weight, config.disk_cache_hit_weight, config.router_queue_threshold) == (0.75, 0.25, 0.9)
    vllm_frontend = flags(container(dynamo_manifest(candidate(AGG_VLLM))["spec"]["services"]["Frontend"])["args"])
    assert vllm_frontend == {
        "--router-mode": "kv",
        "--router-kv-overlap-score-credit": "0.8",
        "--router-prefill-load-scale": "1.25",
        "--router-temperature": "0.1",
    }


def test_worker_wider_than_a_node_spans_equal_pods() -> None:
    h200 = dynamo_manifest(candidate(AGG_VLLM, tp=16, replicas=1))["spec"]["services"]["worker"]
    assert h200["resources"] == {"limits": {"gpu": "8"}} and h200["multinode"] == {"nodeCount": 2}
    gb200 = dynamo_manifest(candidate(AGG_VLLM, hardware_sku="gb200", tp=8))["spec"]["services"]["worker"]
    assert gb200["resources"] == {"limits": {"gpu": "4"}} and gb200["multinode"] == {"nodeCount": 2}
    assert "multinode" not in dynamo_manifest(candidate(AGG_VLLM))["spec"]["services"]["worker"]


@pytest.mark.parametrize("unrolled", [AGG_VLLM, DISAGG_SGLANG, AGG_TRTLLM], ids=["vllm", "sglang", "trtllm"])
def test_yaml_round_trips(unrolled: dict[str, Any]) -> None:
    chosen = candidate(unrolled)
    text = manifest_yaml(chosen, namespace="serving", name="best-one")
    assert text.startswith("# Spica candidate a1b2c3d4e5f60718: ")
    loaded = yaml.safe_load(text)
    assert loaded == dynamo_manifest(chosen, namespace="serving", name="best-one")
    assert loaded["metadata"]["namespace"] == "serving" and loaded["metadata"]["name"] == "best-one"
    assert loaded["metadata"]["annotations"]["spica/candidate"] == "a1b2c3d4e5f60718"


def test_user_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"^backend: 'tgi' is not one of vllm, sglang, trtllm$"):
        dynamo_manifest(candidate(AGG_VLLM, backend="tgi"))
    with pytest.raises(ValueError, match=r"^name: 'Best_One' is not a Kubernetes name"):
        dynamo_manifest(candidate(AGG_VLLM), name="Best_One")
    with pytest.raises(ValueError, match=r"^a worker of 9 GPUs cannot be split evenly over 2 nodes of 8 GPUs$"):
        dynamo_manifest(candidate(AGG_VLLM, tp=9))
