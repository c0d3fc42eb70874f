"""Timing-table cache: keys, grid, atomic reuse, and that the tables are really TP-aware."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from spica.evaluation.deployment import engine_args
from spica.space.timeable import ais_perf_config
from spica.evaluation.timing import (
    _geometric_grid,
    ensure_table,
    _prefill_pass,
    kv_bound,
    materialize_engine_args,
    mean_token_position,
    table_key,
)


def test_key_ignores_dict_order_and_small_capacity_changes_but_not_the_shape(agg_candidate):
    config = ais_perf_config(agg_candidate(tp=1), "agg")
    reordered = dict(reversed(list(config.items())))
    assert table_key(config, 261_000) == table_key(reordered, 262_144)
    assert table_key(config, 261_000) != table_key(config, 300_000)
    assert table_key(config, 261_000) != table_key({**config, "tp": 2}, 261_000)
    assert table_key(config, 261_000) != table_key({**config, "backend_version": "0.25.0"}, 261_000)
    assert table_key(config, 261_000, 1500) != table_key(config, 261_000, 6000)


def test_prefill_entries_sit_at_the_workloads_mean_token_position():
    assert mean_token_position([3000]) == 1500
    assert mean_token_position([1000, 3000]) == 1250  # (1000² + 3000²) / 2 / 4000: long prompts weigh more
    assert mean_token_position([]) is None
    assert _prefill_pass(1000, 1500) == {"num_prefill_requests": 1, "sum_prefill_tokens": 1000, "sum_prefill_kv_tokens": 1000}
    assert _prefill_pass(9000, 1500) == {"num_prefill_requests": 3, "sum_prefill_tokens": 9000, "sum_prefill_kv_tokens": 0}
    assert _prefill_pass(9000, None) == {"num_prefill_requests": 1, "sum_prefill_tokens": 9000, "sum_prefill_kv_tokens": 0}


def test_kv_bound_and_grid():
    assert (kv_bound(1), kv_bound(261_000), kv_bound(262_144), kv_bound(262_145)) == (4096, 262_144, 262_144, 524_288)
    grid = _geometric_grid(1 << 10, 3)
    assert grid[0] == 1 and grid[-1] == 1 << 10
    assert np.all(np.diff(grid) > 0)


def test_ais_mode_and_non_ais_timing_are_left_alone(agg_candidate):
    args = engine_args(agg_candidate(), "agg")
    assert materialize_engine_args(args, "ais") == args
    speculative = engine_args(agg_candidate(aic_nextn=2), "agg")
    assert materialize_engine_args(speculative, "table") == speculative  # no NPZ axis for nextn
    fixed = copy.deepcopy(args)
    fixed["engine"]["timing_model"] = {"type": "fixed", "prefill_ms": 1.0, "decode_ms": 1.0}
    assert materialize_engine_args(fixed, "table") == fixed


@pytest.mark.e2e
def test_table_is_built_once_atomically_and_shared(agg_candidate, timing_cache):
    args = engine_args(agg_candidate(tp=1), "agg")
    resolved = materialize_engine_args(args, "table")
    path = Path(resolved["engine"]["timing_model"]["config"]["path"])
    assert resolved["engine"]["timing_model"]["provider"] == "dynamo_profile"
    assert args["engine"]["timing_model"]["provider"] == "ais"  # the input is not mutated
    assert path.parent == timing_cache
    modified = path.stat().st_mtime_ns
    again = materialize_engine_args(args, "table")["engine"]["timing_model"]["config"]["path"]
    assert again == str(path) and path.stat().st_mtime_ns == modified
    assert not list(timing_cache.glob("*.tmp"))
    with np.load(path) as table:
        assert set(table.files) == {"prefill_isl", "prefill_ttft_ms", "decode_active_kv_tokens", "decode_context_length", "decode_itl"}
        assert table["decode_itl"].shape == (table["decode_active_kv_tokens"].size, table["decode_context_length"].size)
        compute_bound = table["prefill_isl"] >= 256  # below that AIS is flat (weights-bound) with ~1 ms jitter
        assert np.all(np.diff(table["prefill_ttft_ms"][compute_bound]) > 0)


@pytest.mark.e2e
def test_tables_are_tp_aware(agg_candidate):
    def decode_ms_at_64_requests_of_4k(tp: int) -> float:
        config = ais_perf_config(agg_candidate(tp=tp), "agg")
        with np.load(ensure_table(config, tp * 261_000)) as table:
            kv = table["decode_active_kv_tokens"]
            row = int(np.searchsorted(kv, 64 * 4096))
            column = int(np.searchsorted(table["decode_context_length"], 4096))
            return float(table["decode_itl"][row, column])

    assert decode_ms_at_64_requests_of_4k(1) > decode_ms_at_64_requests_of_4k(2)


def test_unknown_system_fails_with_the_identity_in_the_message(agg_candidate):
    config = ais_perf_config(agg_candidate(hardware_sku="no_such_gpu"), "agg")
    with pytest.raises(ValueError, match="no_such_gpu"):
        ensure_table(config, 261_000)
