"""The distributed engine: a real search whose candidate replays run as SLURM job arrays."""

from __future__ import annotations

import pytest

from spica.cli.search import evaluation_pool
from spica.config import ConfigError, SmartSearchConfig
from spica.config.app import EvaluationSettings, split_app_settings
from spica.search import run_smart_search

pytestmark = pytest.mark.e2e

CONFIG = {
    "search_space": {"model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "gpu_budget": 2,
                     "context_length": 4096, "deployment_mode": ["agg"], "backend": ["vllm"],
                     "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [64],
                     "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
    "workload": {"isl": 512, "osl": 32, "concurrency": 8, "num_request_ratio": 2},
    "goal": {"target": "throughput_per_gpu"},
    "sweep": {"algorithm": "grid", "parallel_evals": 2},
}


def _search_on_slurm(tmp_path, settings: EvaluationSettings):
    pool = evaluation_pool(settings, str(tmp_path))
    try:
        results = run_smart_search(SmartSearchConfig.from_mapping(CONFIG), results_dir=tmp_path / "results", pool=pool)
    finally:
        pool.close()
    assert len(results.ledger) == 3  # TP1 x1, TP1 x2, TP2 x1 under a budget of 2
    assert all(candidate.feasible for candidate in results.ledger)
    assert list((tmp_path / "slurm").rglob("*_result.pkl")), "the replays ran as SLURM jobs"
    return results


def test_candidate_evaluations_fan_out_over_slurm_on_the_host(tmp_path, slurm_partition):
    _search_on_slurm(tmp_path, EvaluationSettings(executor="slurm", slurm_partition=slurm_partition, max_parallel=2,
                                                  container_image=None))


def test_slurm_workers_run_in_the_self_contained_image(tmp_path, slurm_partition, runtime_image):
    settings = EvaluationSettings(executor="slurm", slurm_partition=slurm_partition, max_parallel=2,
                                  container_image=runtime_image)
    _search_on_slurm(tmp_path, settings)
    sbatch = "".join(path.read_text() for path in (tmp_path / "slurm").rglob("*_submission.sh"))
    assert f"--entrypoint=/opt/spica/bin/python {runtime_image}" in sbatch


def test_unknown_executor_is_a_config_error():
    base = {"search_space": {"model_name": "m", "hardware_sku": "h"},
            "workload": {"isl": 1, "osl": 1, "concurrency": 1, "num_request_ratio": 1}}
    with pytest.raises(ConfigError, match="evaluation.executor: 'k8s' is not one of local, slurm"):
        split_app_settings({**base, "evaluation": {"executor": "k8s"}})
