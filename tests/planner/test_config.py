"""Unrolled planner fields (docs/unrolled-candidate.md) and the Replay PlannerConfig built from them."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from spica.config.presets import LOAD_PREDICTORS, PLANNER_FPM_SAMPLING, PLANNER_LOAD_SENSITIVITY, PLANNER_SCALING_POLICIES
from spica.planner.config import SEARCH_SAFE, PlannerConfigError, planner_config, unroll_planner_fields

SLA = SimpleNamespace(ttft_ms=500.0, itl_ms=30.0, e2e_ms=None)
AGG = {
    "deployment_mode": "agg", "backend": "vllm", "model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm",
    "gpu_budget": 16, "min_gpu_budget": 1, "min_endpoint": 1, "backend_version": "0.24.0",
    "tp": 2, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "replicas": 4, "agg_block_size": 64,
}  # fmt: skip
DISAGG = {
    **{key: AGG[key] for key in ("backend", "model_name", "hardware_sku", "gpu_budget", "min_gpu_budget", "min_endpoint", "backend_version")},
    "deployment_mode": "disagg",
    "prefill_tp": 1, "prefill_pp": 1, "prefill_attention_dp": 1, "prefill_replicas": 2,
    "decode_tp": 4, "decode_pp": 1, "decode_attention_dp": 2, "decode_replicas": 1,
    "prefill_block_size": 64, "decode_block_size": 64,
}  # fmt: skip


def unrolled(policy: str, target: str, predictor: str = "kalman_reactive_log1p") -> dict:
    return unroll_planner_fields(
        policy,
        PLANNER_SCALING_POLICIES[policy],
        PLANNER_FPM_SAMPLING["small"],
        PLANNER_LOAD_SENSITIVITY["aggressive"],
        predictor,
        LOAD_PREDICTORS[predictor],
        target,
    )


def test_disabled_policy_unrolls_to_flags_and_target_only():
    assert unrolled("disabled", "throughput") == {
        "planner_scaling_policy": "disabled",
        "enable_throughput_scaling": False,
        "enable_load_scaling": False,
        "planner_optimization_target": "throughput",
    }


def test_throughput_policy_carries_both_intervals_fpm_sensitivity_and_the_winning_predictor():
    assert unrolled("throughput_600_5", "sla") == {
        "planner_scaling_policy": "throughput_600_5",
        "enable_throughput_scaling": True,
        "enable_load_scaling": False,
        "planner_optimization_target": "sla",
        "max_num_fpm_samples": 32,
        "fpm_sample_bucket_size": 4,
        "load_scaling_down_sensitivity": 70,
        "load_min_observations": 3,
        "throughput_adjustment_interval_seconds": 600,
        "load_adjustment_interval_seconds": 5,
        "load_predictor": "kalman",
        "load_predictor_log1p": True,
        "kalman_q_level": 10.0,
        "kalman_q_trend": 1.0,
        "kalman_r": 5.0,
        "kalman_min_points": 3,
    }


def test_load_policy_carries_both_intervals_fpm_and_sensitivity_but_no_predictor():
    assert unrolled("load_180_10", "throughput") == {
        "planner_scaling_policy": "load_180_10",
        "enable_throughput_scaling": False,
        "enable_load_scaling": True,
        "planner_optimization_target": "throughput",
        "max_num_fpm_samples": 32,
        "fpm_sample_bucket_size": 4,
        "throughput_adjustment_interval_seconds": 180,
        "load_adjustment_interval_seconds": 10,
        "load_scaling_down_sensitivity": 70,
        "load_min_observations": 3,
    }


def test_a_dict_policy_is_carried_as_given_and_a_dict_predictor_gets_dynamo_family_defaults():
    policy = dict(PLANNER_SCALING_POLICIES["hybrid_180_5"])
    fields = unroll_planner_fields(
        policy,
        policy,
        PLANNER_FPM_SAMPLING["default"],
        PLANNER_LOAD_SENSITIVITY["default"],
        "custom_0",
        {"load_predictor": "prophet"},
        "sla",
    )
    assert {key: fields[key] for key in ("load_predictor", "prophet_window_size", "load_predictor_log1p")} == {
        "load_predictor": "prophet",
        "prophet_window_size": 50,
        "load_predictor_log1p": False,
    }
    assert fields["load_adjustment_interval_seconds"] == 5 and fields["throughput_adjustment_interval_seconds"] == 180
    assert fields["planner_scaling_policy"] == policy  # the entry as given: the dict itself


def test_throughput_policy_without_a_predictor_winner_is_a_one_line_error():
    with pytest.raises(ValueError, match=r"^planner_scaling_policy throughput_180_5: no load predictor chosen for its 180 s throughput interval$"):
        unroll_planner_fields(
            "throughput_180_5", PLANNER_SCALING_POLICIES["throughput_180_5"], PLANNER_FPM_SAMPLING["default"],
            PLANNER_LOAD_SENSITIVITY["default"], None, {}, "sla",
        )


def test_the_deployed_planner_is_the_replayed_one():
    replayed = planner_config({**DISAGG, **unrolled("hybrid_180_5", "sla")}, SLA)
    deployed = planner_config({**DISAGG, **unrolled("hybrid_180_5", "sla")}, SLA, "kubernetes")
    assert set(replayed) - set(deployed) == set(SEARCH_SAFE) and deployed["environment"] == "kubernetes"
    assert {key: deployed[key] for key in replayed if key not in SEARCH_SAFE} == {key: replayed[key] for key in replayed if key not in SEARCH_SAFE}
    assert set(deployed["ais_perf_model"]["roles"]) == {"prefill", "decode"}
    with pytest.raises(ValueError, match=r"^runtime: 'cloud' is not one of replay, kubernetes$"):
        planner_config(DISAGG, SLA, "cloud")  # type: ignore[arg-type]


def test_unset_pinned_scalars_keep_dynamo_defaults():
    config = planner_config({**AGG, **unrolled("load_180_5", "throughput"), "min_gpu_budget": None, "min_endpoint": None, "aic_nextn": None}, SLA)
    assert "min_gpu_budget" not in config and "min_endpoint" not in config and "speculative_nextn" not in config


def test_static_candidate_has_no_planner_config():
    assert planner_config({**AGG, **unrolled("disabled", "sla")}, SLA) is None


def test_agg_throughput_config_for_replay():
    config = planner_config({**AGG, **unrolled("throughput_180_5", "sla")}, SLA)
    assert config == {
        "mode": "agg",
        "backend": "vllm",
        "model_name": "Qwen/Qwen3-32B",
        "optimization_target": "sla",
        "enable_throughput_scaling": True,
        "enable_load_scaling": False,
        "max_num_fpm_samples": 32,
        "fpm_sample_bucket_size": 4,
        "throughput_adjustment_interval_seconds": 180,
        "load_adjustment_interval_seconds": 5,
        "load_scaling_down_sensitivity": 70,
        "load_min_observations": 3,
        "load_predictor": "kalman",
        "kalman_min_points": 3,
        "kalman_q_level": 10.0,
        "kalman_q_trend": 1.0,
        "kalman_r": 5.0,
        "load_predictor_log1p": True,
        "max_gpu_budget": 16,
        "min_gpu_budget": 1,
        "min_endpoint": 1,
        "report_interval_hours": None,
        "live_dashboard_port": 0,
        "control_api_port": 0,
        "metric_reporting_prometheus_port": 0,
        "decode_engine_num_gpu": 2,
        "ais_perf_model": {"roles": {"aggregated": {
            "model": "Qwen/Qwen3-32B", "system": "h200_sxm", "backend": "vllm", "backend_version": "0.24.0",
            "worker_type": "aggregated", "tp": 2, "pp": 1, "attention_dp": 1, "kv_block_size": 64,
        }}},  # the engine's AIS identity: the Planner's perf model in the replay and in the cluster
        "ttft_ms": 500.0,
        "itl_ms": 30.0,
    }


def test_disagg_load_config_prices_each_role_and_leaves_sla_out_of_easy_mode():
    config = planner_config({**DISAGG, **unrolled("load_180_5", "latency")}, SLA)
    assert (config["prefill_engine_num_gpu"], config["decode_engine_num_gpu"]) == (1, 8)
    assert config["optimization_target"] == "latency"
    assert "ttft_ms" not in config and "load_predictor" not in config


def test_planner_config_validation_errors_are_one_line():
    candidate = {**AGG, **unrolled("load_180_5", "throughput"), "fpm_sample_bucket_size": 10}
    with pytest.raises(PlannerConfigError) as error:
        planner_config(candidate, SLA)
    assert str(error.value) == "planner config: Value error, fpm_sample_bucket_size must be a perfect square, got 10"
    hybrid = {**AGG, **unrolled("hybrid_180_5", "sla"), "load_adjustment_interval_seconds": 180}
    with pytest.raises(PlannerConfigError, match=r"^planner config: Value error, load_adjustment_interval_seconds \(180s\) must be shorter than"):
        planner_config(hybrid, SLA)


def test_throughput_scaling_needs_the_sla_target_and_its_bounds():
    with pytest.raises(PlannerConfigError, match=r"^planner_scaling_policy throughput_180_5: throughput scaling needs planner target 'sla'"):
        planner_config({**AGG, **unrolled("throughput_180_5", "sla"), "planner_optimization_target": "throughput"}, SLA)
    with pytest.raises(PlannerConfigError, match=r"^planner target 'sla' needs goal.sla.ttft_ms and goal.sla.itl_ms$"):
        planner_config({**AGG, **unrolled("load_180_5", "sla")}, SimpleNamespace(ttft_ms=None, itl_ms=None, e2e_ms=900.0))


def test_importing_dynamos_planner_leaves_nothing_in_the_temporary_folder(tmp_path):
    """Dynamo's planner configures SGLang's logging on import by writing a JSON file it never
    removes; Spica's package root turns that off for every process it starts."""
    import subprocess
    import sys

    code = "import spica, dynamo.planner.connectors.virtual"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    env.pop("DYN_SKIP_SGLANG_LOG_FORMATTING", None)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
