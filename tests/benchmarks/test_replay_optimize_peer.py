"""bench_peer.py scores Dynamo's replay_optimize by turning its best state into Spica's candidate:
that candidate must be the deployment the peer replayed (shape, workers, router, engine knobs), or
the two tools' answers would not be compared on one deployment."""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

from dynamo.profiler.utils.replay_optimize import DenseAggReplayState, DenseReplayState

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from bench_search import load  # noqa: E402
from peer.replay_optimize import candidate, spec  # noqa: E402


def test_an_agg_state_is_the_same_deployment_with_the_engine_knobs_the_peer_ran():
    config = load("s1")
    state = DenseAggReplayState(tp=4, workers=2, router_mode="round_robin", overlap_score_credit=0.0)
    unrolled = candidate(config, {"mode": "agg", "backend": "sglang", "best": asdict(state)})
    assert (unrolled["deployment_mode"], unrolled["backend"], unrolled["tp"], unrolled["replicas"]) == ("agg", "sglang", 4, 2)
    assert unrolled["router_mode"] == "round_robin" and unrolled["used_gpus"] == 8
    engine = spec(config, "agg", "sglang").engine.baseEngineArgs["engine"]
    assert (unrolled["agg_max_num_seqs"], unrolled["agg_max_num_batched_tokens"]) == (engine["max_num_seqs"], engine["max_num_batched_tokens"])


def test_a_disagg_kv_router_state_keeps_its_roles_and_router_weights():
    config = load("s2")
    state = DenseReplayState(prefill_tp=2, decode_tp=4, prefill_workers=3, decode_workers=2, overlap_score_credit=0.5,
                             router_mode="kv_router", prefill_load_scale=2.0)
    unrolled = candidate(config, {"mode": "disagg", "backend": "vllm", "best": asdict(state)})
    assert [(unrolled[f"{role}_tp"], unrolled[f"{role}_replicas"]) for role in ("prefill", "decode")] == [(2, 3), (4, 2)]
    assert unrolled["used_gpus"] == 14
    assert (unrolled["router_mode"], unrolled["overlap_score_credit"], unrolled["prefill_load_scale"]) == ("kv_router", 0.5, 2.0)
    engine = spec(config, "disagg", "vllm").engine.basePrefillEngineArgs["engine"]
    assert unrolled["prefill_max_num_seqs"] == engine["max_num_seqs"] == 8  # the mocker's 256 is not in S2's list: its nearest, 8
