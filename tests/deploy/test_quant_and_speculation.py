"""The candidate's kvcache_quant_mode is deployed as its engine's own KV-cache dtype setting
(spellings from spica.backends); an unset mode deploys the checkpoint's mode AI Configurator sized
the KV cache with. MTP drafts are deployed as flags, the acceptance Replay assumed as an annotation."""

from __future__ import annotations

import json

import pytest
from dgd_checks import candidate, components, main_container, unrolled

from spica.deploy.manifest import dynamo_manifest


def worker_args(mode: str, backend: str, kvcache: str | None, model: str | None = None) -> list[str]:
    u = unrolled(mode, backend, "off", False, False) | ({"model_name": model} if model else {})
    if kvcache is not None:
        u["kvcache_quant_mode"] = kvcache
    role = "worker" if mode == "agg" else "decode"
    return main_container(components(dynamo_manifest(candidate(u)))[role])["args"]


def kv_dtype(backend: str, args: list[str]) -> str | None:
    if backend == "trtllm":
        engine = json.loads(args[args.index("--override-engine-args") + 1])
        return engine["kv_cache_config"].get("dtype")
    return args[args.index("--kv-cache-dtype") + 1] if "--kv-cache-dtype" in args else None


@pytest.mark.parametrize(
    ("backend", "fp8", "bfloat16"), [("vllm", "fp8", "bfloat16"), ("sglang", "fp8_e4m3", "bfloat16"), ("trtllm", "fp8", "auto")]
)
@pytest.mark.parametrize("mode", ["agg", "disagg"])
def test_kv_cache_dtype_per_engine(mode: str, backend: str, fp8: str, bfloat16: str) -> None:
    assert kv_dtype(backend, worker_args(mode, backend, "fp8")) == fp8
    assert kv_dtype(backend, worker_args(mode, backend, "bfloat16")) == bfloat16
    assert kv_dtype(backend, worker_args(mode, backend, None)) == bfloat16  # Qwen3-30B-A3B: a bf16 checkpoint
    assert kv_dtype(backend, worker_args(mode, backend, None, "Qwen/Qwen3-32B-FP8")) == fp8  # AIC sizes its KV as fp8


def test_mtp_drafts_are_deployed_and_the_assumed_acceptance_annotated() -> None:
    u = unrolled("agg", "vllm", "off", False, False) | {"aic_nextn": 2, "nextn_accepted": 1.4}
    manifest = dynamo_manifest(candidate(u))
    args = main_container(components(manifest)["worker"])["args"]
    assert json.loads(args[args.index("--speculative-config") + 1]) == {"method": "mtp", "num_speculative_tokens": 2}
    assert manifest["metadata"]["annotations"]["spica/speculation"] == "MTP 2 drafts per step, 1.4 accepted per step"
    plain = dynamo_manifest(candidate(unrolled("agg", "vllm", "off", False, False)))["metadata"]["annotations"]
    assert "spica/speculation" not in plain
    assert plain["spica/quantization"] == "kvcache_quant_mode=bfloat16 (AI Configurator's for the checkpoint)"
