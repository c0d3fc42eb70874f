"""Kept kv_router draws (spica/search/draws.py): told again to a search that asks for the same
replay, so a seeded search with kv_router in its space repeats its ledger and its answer."""

from __future__ import annotations

import json

import pytest

from spica.config import ConfigError
from spica.evaluation.evaluate import Evaluation
from spica.search import run_smart_search
from spica.search.draws import Draws

from tests.search.test_search import CountingPool, small

KV = {"router_mode": "kv_router"}
DRAW = Evaluation("feasible", objectives={"throughput_per_gpu": 101.5}, metrics={"mean_ttft_ms": 12.0}, seconds=0.4)


def test_a_kept_draw_is_told_again_and_the_first_kept_wins(tmp_path):
    draws = Draws(tmp_path, "plan-a")
    draws.keep("k1", 0, KV, DRAW)
    draws.keep("k1", 0, KV, Evaluation("feasible", objectives={"throughput_per_gpu": 99.0}))  # a later draw of the same
    again = Draws(tmp_path, "plan-a")
    assert again.get("k1", 0) == DRAW and again.get("k1", 1) is None and len(again) == 1
    assert Draws(tmp_path, "plan-b").get("k1", 0) is None  # another workload, goal, timing or versions


def test_only_draws_are_kept(tmp_path):
    draws = Draws(tmp_path, "plan")
    draws.keep("rr", 0, {"router_mode": "round_robin"}, DRAW)  # identical run to run: replayed, never kept
    draws.keep("failed", 0, KV, Evaluation("failed", reason="error: boom"))
    draws.keep("overran", 0, KV, Evaluation("infeasible", reason="exceed runtime: 30 s"))
    draws.keep("slow", 0, KV, Evaluation("infeasible", reason="sla: ttft 2,400 ms > 2,000 ms"))
    assert [key for key in ("rr", "failed", "overran", "slow") if Draws(tmp_path, "plan").get(key, 0)] == ["slow"]


def test_a_line_torn_by_an_interruption_loses_only_itself(tmp_path):
    draws = Draws(tmp_path, "plan")
    draws.keep("k1", 0, KV, DRAW)
    with draws.path.open("a") as handle:
        handle.write('{"key": "k2", "draw": 0, "evalu')  # killed mid-write
    Draws(tmp_path, "plan").keep("k3", 0, KV, DRAW)
    again = Draws(tmp_path, "plan")
    assert again.get("k1", 0) == DRAW and again.get("k3", 0) == DRAW and again.get("k2", 0) is None


def test_draws_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path / "cache"))
    assert Draws.at("off", "plan") is None and Draws.at(None, "plan") is None
    assert Draws.at("cache", "plan").folder == tmp_path / "cache" / "draws"
    assert Draws.at(str(tmp_path / "mine"), "plan").folder == tmp_path / "mine"
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(ConfigError, match="evaluation.draws: .*a-file cannot hold kept draws"):
        Draws.at(str(tmp_path / "a-file"), "plan")
    with pytest.raises(ConfigError, match="evaluation.draws: empty; give cache, a folder, or off"):
        Draws.at("", "plan")  # as `spica run-plan --draws ''` passes it


@pytest.mark.e2e
def test_a_seeded_kv_router_search_repeats_its_ledger_and_spread_with_kept_draws(tmp_path):
    config = small(
        search_space={"router_mode": ["kv_router", "round_robin"], "parallel_configs": [{"tp": 1}]},
        workload={"isl": 2000, "concurrency": 32, "shared_prefix_ratio": 0.5, "num_prefix_groups": 4},
    )
    folder = tmp_path / "draws"
    first = run_smart_search(config, results_dir=tmp_path / "a", draws=str(folder), pool=CountingPool())
    kv = [c for c in first.ledger if c.unrolled["router_mode"] == "kv_router"]
    rr = [c for c in first.ledger if c.unrolled["router_mode"] == "round_robin"]
    assert kv and rr and first.tallies["kept_draws"] == 0

    pool = CountingPool()
    second = run_smart_search(config, results_dir=tmp_path / "b", draws=str(folder), pool=pool)
    assert second.tallies["kept_draws"] == len({c.key for c in kv})
    replayed = [json.loads(unrolled)["router_mode"] for unrolled in pool.replayed]
    assert replayed == ["round_robin"] * len(replayed) and len(replayed) == len({c.key for c in rr})  # draws told, not drawn
    assert [(c.key, c.metrics) for c in second.ledger] == [(c.key, c.metrics) for c in first.ledger]
    assert [c.key for c in second] == [c.key for c in first]  # the same answer
    assert [c.provenance.get("spread") for c in second] == [c.provenance.get("spread") for c in first]

    fresh = CountingPool()
    run_smart_search(config, results_dir=tmp_path / "c", draws="off", pool=fresh)
    assert len(fresh.replayed) >= len(first.ledger)  # off: every kv_router candidate is drawn anew


def test_off_spelled_in_yaml_is_off(tmp_path):
    """YAML reads `off` as false: `evaluation.draws=off` after --config-file, or `draws: off` in a
    config file's app block, still means off (it was refused as 'input should be a valid string')."""
    from spica.cli.config_file import config_from_file

    config = tmp_path / "c.yaml"
    config.write_text("search_space: {model_name: Qwen/Qwen3-32B, hardware_sku: h200_sxm}\n"
                      "workload: {isl: 100, osl: 10, concurrency: 4, num_request_ratio: 2}\n")
    assert config_from_file(str(config), ["evaluation.draws=off"])[1].evaluation.draws == "off"
    config.write_text(config.read_text() + "evaluation: {draws: off}\n")
    assert config_from_file(str(config), [])[1].evaluation.draws == "off"
