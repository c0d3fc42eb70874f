"""Real results folders to open (small real searches: Replay, AI Configurator, the study), and
one real headless Chromium for the whole session to open them in."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from headless import Chromium

from spica.config import SmartSearchConfig
from spica.search import run_smart_search


def search_config(**overrides: Any) -> SmartSearchConfig:
    """Qwen3-32B-FP8 on up to 4 H200s, agg and disagg vLLM, a TTFT bound that about a third of
    the candidates miss (11 feasible and 5 infeasible with seed 3)."""
    data: dict[str, Any] = {
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 4, "context_length": 4096,
            "deployment_mode": ["agg", "disagg"], "backend": ["vllm"], "agg_max_num_batched_tokens": [8192],
            "agg_max_num_seqs": [64], "prefill_max_num_seqs": [4], "decode_max_num_seqs": [64],
            "prefill_max_num_batched_tokens": [8192], "decode_max_num_batched_tokens": [8192],
            "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
        },
        "workload": {"isl": 2048, "osl": 64, "concurrency": 16, "num_request_ratio": 3},
        "goal": {"target": "throughput_per_gpu", "strict_sla": True, "sla": {"ttft_ms": 600.0}},
        "sweep": {"max_rounds": 3, "candidates_per_round": 3, "parallel_evals": 1, "random_seed": 3, "designer": "quasi_random"},
    }
    for block, fields in overrides.items():
        data[block] = {**data[block], **fields} if fields is not None else None
    return SmartSearchConfig.from_mapping(data)


@pytest.fixture(scope="session")
def sla_search(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scalar goal under an SLA: feasible candidates and candidates that missed it."""
    folder = tmp_path_factory.mktemp("sla-search")
    run_smart_search(search_config(), results_dir=folder)
    return folder


@pytest.fixture(scope="session")
def pareto_search(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Pareto goal over the load: a front of several points."""
    folder = tmp_path_factory.mktemp("pareto-search")
    config = search_config(workload={"concurrency": [2, 32]}, goal={"target": "pareto", "strict_sla": False, "sla": None},
                           sweep={"max_rounds": 4})
    run_smart_search(config, results_dir=folder)
    return folder


@pytest.fixture(scope="session")
def screened_search(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Pareto search with screening (docs/search.md step 5): its replays of 3 requests per
    client count as costly, so each is screened at 1 first and the best are replayed in full."""
    from spica.evaluation import screening

    folder = tmp_path_factory.mktemp("screened-search")
    config = search_config(workload={"concurrency": [2, 32]}, goal={"target": "pareto", "strict_sla": False, "sla": None},
                           sweep={"max_rounds": 4, "screen_request_ratio": 1})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(screening, "MIN_SCREENED_REQUESTS", 1)
        run_smart_search(config, results_dir=folder)
    return folder


@pytest.fixture(scope="session")
def browser(chromium: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    session = Chromium(tmp_path_factory.mktemp("chromium-profile"))
    yield session
    session.close()
