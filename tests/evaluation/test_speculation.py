"""aic_nextn with nextn_accepted: AIS prices a step with the drafts, Replay's mocker accepts them
at the rates nextn_accepted implies, and the manifest deploys the MTP flags."""

from __future__ import annotations

import pytest

from spica.config import ConfigError, SmartSearchConfig
from spica.evaluation.deployment import WorkloadSpec, accept_rates, build_replay_call, engine_args
from spica.evaluation.replay import run_replay


@pytest.mark.parametrize(("nextn", "accepted"), [(1, 0.8), (2, 1.4), (3, 0.0), (3, 3.0), (5, 2.5)])
def test_the_rates_accept_nextn_accepted_drafts_per_step_on_average(nextn: int, accepted: float) -> None:
    rates = accept_rates(nextn, accepted)
    expected, reached = 0.0, 1.0
    for rate in rates:  # draft i counts only when every earlier one was accepted
        reached *= rate
        expected += reached
    assert len(rates) == nextn and expected == pytest.approx(accepted, abs=1e-9)


def test_the_mocker_gets_the_rates_and_the_drafts(agg_candidate) -> None:
    engine = engine_args(agg_candidate(aic_nextn=2, nextn_accepted=1.4), "agg")["engine"]
    assert engine["aic_nextn"] == 2 and engine["timing_model"]["config"]["nextn"] == 2
    assert [float(rate) for rate in engine["aic_nextn_accept_rates"].split(",")] == pytest.approx([0.7845] * 2, abs=1e-4)
    assert "aic_nextn_accept_rates" not in engine_args(agg_candidate(aic_nextn=2), "agg")["engine"]


@pytest.mark.parametrize(
    ("space", "line"),
    [
        ({"nextn_accepted": 1.0}, "search_space.nextn_accepted: 1.0 draft tokens accepted per step needs aic_nextn >= it (aic_nextn is None)"),
        ({"aic_nextn": 2, "nextn_accepted": 2.5}, "search_space.nextn_accepted: 2.5 draft tokens accepted per step needs aic_nextn >= it (aic_nextn is 2)"),
        ({"aic_nextn": 2, "nextn_accepted": -1}, "search_space.nextn_accepted: -1: input should be greater than or equal to 0"),
    ],
)
def test_nextn_accepted_beyond_the_drafts_is_one_line(space: dict, line: str) -> None:
    with pytest.raises(ConfigError) as caught:
        SmartSearchConfig.from_mapping({
            "search_space": {"model_name": "m", "hardware_sku": "h200_sxm", **space},
            "workload": {"concurrency": 1, "isl": 1, "osl": 1, "num_request_ratio": 1},
        })
    assert caught.value.lines[0].startswith(line)


@pytest.mark.e2e
def test_more_accepted_drafts_give_more_output_per_second(agg_candidate) -> None:
    workload = WorkloadSpec(kind="synthetic", isl=512, osl=64, request_count=64, concurrency=16)
    throughput = {}
    for accepted in (0.4, 1.8):
        outcome = run_replay(build_replay_call(agg_candidate(tp=1, replicas=1, aic_nextn=2, nextn_accepted=accepted), workload))
        assert outcome.status == "ok", outcome.message
        throughput[accepted] = outcome.summary["output_throughput_tok_s"]
    assert throughput[1.8] > 1.2 * throughput[0.4]
