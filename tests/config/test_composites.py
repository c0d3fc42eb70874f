"""Composite knobs: preset ids or complete dicts; a dict replaces the preset, no merging."""

from __future__ import annotations

import pytest

from spica.config import ConfigError, SmartSearchConfig, presets


def config(**space):
    return SmartSearchConfig.from_mapping(
        {"search_space": {"model_name": "m", "hardware_sku": "h", **space}, "workload": {"isl": 1, "osl": 1, "concurrency": 1, "num_request_ratio": 10}}
    )


def error(**space) -> str:
    with pytest.raises(ConfigError) as info:
        config(**space)
    return info.value.lines[0]


def test_presets_resolve_to_their_fields():
    space = config(planner_scaling_policy=["hybrid_180_5", "disabled"]).search_space
    assert space.scaling_policies() == [
        ("hybrid_180_5", {"enable_throughput_scaling": True, "enable_load_scaling": True,
                          "throughput_adjustment_interval_seconds": 180, "load_adjustment_interval_seconds": 5}),
        ("disabled", {"enable_throughput_scaling": False, "enable_load_scaling": False}),
    ]
    assert len(space.load_predictors()) == 11


def test_dict_replaces_preset_without_merging():
    policy = {"enable_throughput_scaling": False, "enable_load_scaling": True,
              "throughput_adjustment_interval_seconds": 600, "load_adjustment_interval_seconds": 30}
    space = config(planner_scaling_policy=["disabled", policy], planner_load_sensitivity=[{"load_scaling_down_sensitivity": 50, "load_min_observations": 2}]).search_space
    assert space.scaling_policies()[1] == ("custom_1", policy)
    assert space.load_sensitivities() == [("custom_0", {"load_scaling_down_sensitivity": 50, "load_min_observations": 2})]


def test_predictor_dict_keeps_its_family_fields_and_ignores_the_others(config_warnings):
    space = config(load_predictor_candidates=[{"load_predictor": "kalman", "kalman_r": 3.0}, "arima_raw"]).search_space
    assert space.load_predictors()[0] == ("custom_0", {"load_predictor": "kalman", "kalman_r": 3.0})
    space = config(load_predictor_candidates=[{"load_predictor": "arima", "kalman_r": 3.0}]).search_space
    assert space.load_predictors()[0] == ("custom_0", {"load_predictor": "arima"})
    assert "kalman_r does not apply to the arima predictor and is ignored" in config_warnings.text
    assert error(load_predictor_candidates=[{"load_predictor": "arima", "window": 3}]).startswith(
        "search_space.load_predictor_candidates[0]: unknown key 'window'; allowed: kalman_min_points,"
    )
    assert error(load_predictor_candidates=[{"load_predictor": "lstm"}]) == (
        "search_space.load_predictor_candidates[0]: load_predictor: 'lstm' is not one of constant, arima, prophet, kalman"
    )


@pytest.mark.parametrize(
    "space, expected",
    [
        ({"planner_scaling_policy": ["turbo"]}, "search_space.planner_scaling_policy[0]: 'turbo' is not one of disabled, throughput_180_5, throughput_600_5, load_180_5, load_180_10, hybrid_180_5, hybrid_600_5 (or a complete dict)"),
        ({"planner_scaling_policy": [{"enable_throughput_scaling": True, "enable_load_scaling": False, "throughput_adjustment_interval_seconds": 60}]}, "search_space.planner_scaling_policy[0]: missing key 'load_adjustment_interval_seconds'; a dict entry must be complete: enable_load_scaling, enable_throughput_scaling, load_adjustment_interval_seconds, throughput_adjustment_interval_seconds"),
        ({"planner_scaling_policy": [{"enable_throughput_scaling": True, "enable_load_scaling": False, "throughput_adjustment_interval_seconds": 0, "load_adjustment_interval_seconds": 5}]}, "search_space.planner_scaling_policy[0]: throughput_adjustment_interval_seconds: 0 must be a positive integer"),
        ({"planner_scaling_policy": [{"enable_throughput_scaling": False, "enable_load_scaling": False, "speed": 1}]}, "search_space.planner_scaling_policy[0]: unknown key 'speed'; allowed: enable_load_scaling, enable_throughput_scaling, load_adjustment_interval_seconds, throughput_adjustment_interval_seconds"),
        ({"planner_scaling_policy": [{"enable_throughput_scaling": "yes", "enable_load_scaling": False, "throughput_adjustment_interval_seconds": 60, "load_adjustment_interval_seconds": 5}]}, "search_space.planner_scaling_policy[0]: enable_throughput_scaling: 'yes' must be true or false"),
        ({"planner_fpm_sampling": [{"max_num_fpm_samples": 64, "fpm_sample_bucket_size": 10}]}, "search_space.planner_fpm_sampling[0]: fpm_sample_bucket_size: 10 must be a perfect square (4, 16, 64, ...)"),
        ({"planner_fpm_sampling": ["tiny"]}, "search_space.planner_fpm_sampling[0]: 'tiny' is not one of small, default, large, fine (or a complete dict)"),
        ({"planner_load_sensitivity": [{"load_scaling_down_sensitivity": 150, "load_min_observations": 5}]}, "search_space.planner_load_sensitivity[0]: load_scaling_down_sensitivity: 150 must be an integer in 0..100"),
        ({"planner_load_sensitivity": [{"load_scaling_down_sensitivity": 50}]}, "search_space.planner_load_sensitivity[0]: missing key 'load_min_observations'; a dict entry must be complete: load_min_observations, load_scaling_down_sensitivity"),
    ],
)
def test_bad_entries(space, expected):
    assert error(**space) == expected


def test_preset_tables_match_spec():
    assert presets.PLANNER_FPM_SAMPLING["small"] == {"max_num_fpm_samples": 32, "fpm_sample_bucket_size": 4}
    assert presets.PLANNER_LOAD_SENSITIVITY["conservative"] == {"load_scaling_down_sensitivity": 90, "load_min_observations": 8}
    assert presets.LOAD_PREDICTORS["kalman_reactive_log1p"]["kalman_q_level"] == 10.0
    assert presets.PLANNER_SCALING_POLICIES["throughput_600_5"]["throughput_adjustment_interval_seconds"] == 600
