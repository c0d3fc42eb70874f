"""search_space.backend_version: which perf-data version scores a backend, checked against what
AI Configurator (KV capacity) and AIS (timing) both hold on this machine."""

from __future__ import annotations

from typing import Any

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.search.branches import branches_for, format_branches
from spica.space import capacity


def config(backend_version: Any, backend: list[str] = ["vllm", "trtllm"]) -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "backend": backend, "gpu_budget": 2,
            "deployment_mode": ["agg"], "context_length": 4096, "backend_version": backend_version,
        },
        "workload": {"concurrency": 8, "isl": 100, "osl": 100, "num_request_ratio": 2},
    })


def test_the_default_is_ai_configurators_latest_and_a_pin_is_used_for_its_backend_only() -> None:
    (default,) = branches_for(config(None))
    assert default.backend_version("trtllm") == capacity.perf_data_version("h200_sxm", "trtllm")
    newest = capacity.perf_data_versions("h200_sxm", "trtllm")[-1]
    (pinned,) = branches_for(config({"trtllm": newest}))
    assert pinned.backend_version("trtllm") == newest
    assert pinned.backend_version("vllm") == default.backend_version("vllm")
    assert f"trtllm {newest} (perf data scorable: " in format_branches([pinned])


def test_a_version_either_perf_data_lacks_is_one_line_naming_the_allowed_ones() -> None:
    allowed = ", ".join(capacity.perf_data_versions("h200_sxm", "vllm"))
    with pytest.raises(ConfigError) as caught:
        branches_for(config("0.1.0", ["vllm"]))
    assert caught.value.lines == [
        f"search_space.backend_version: '0.1.0' is not a vllm perf-data version on h200_sxm that both "
        f"AI Configurator and AIS hold; allowed: {allowed}"
    ]


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ({"sglang": "0.5.14"}, "search_space.backend_version: sglang is not among backend (vllm, trtllm); give versions for those only"),
        ({"tgi": "1"}, "search_space.backend_version: 'tgi' is not a backend; keys are among vllm, sglang, trtllm"),
        (5, "search_space.backend_version: 5 must be a version string, or a dict of one per backend"),
        ({"vllm": ""}, "search_space.backend_version: vllm: '' must be a version string, e.g. 0.24.0"),
    ],
)
def test_bad_forms_are_refused_before_any_lookup(value: Any, line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        config(value)
    assert caught.value.lines == [line]
