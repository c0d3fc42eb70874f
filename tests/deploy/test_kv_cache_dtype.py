"""The candidate's kvcache_quant_mode is deployed as its engine's own KV-cache dtype setting
(spellings from spica.backends); an unset mode leaves the engine's default."""

from __future__ import annotations

import json

import pytest
from dgd_checks import candidate, components, main_container, unrolled

from spica.deploy.manifest import dynamo_manifest


def worker_args(mode: str, backend: str, kvcache: str | None) -> list[str]:
    u = unrolled(mode, backend, "off", False, False)
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
    assert kv_dtype(backend, worker_args(mode, backend, None)) is None
