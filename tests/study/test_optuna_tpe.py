"""The optuna_tpe study: Optuna's real TPE sampler behind Spica's Study protocol."""

from __future__ import annotations

import statistics

import optuna
import pytest

from spica.study.optuna_tpe import OptunaTpeStudy
from spica.study.params import Objective, Param

MIXED = [
    Param("engine", "categorical", choices=("vllm", "sglang", 3)),
    Param("seqs", "discrete", choices=(16, 1, 4, 64, 256)),  # given unordered: discrete values are ordered
    Param("replicas", "integer", low=1, high=8),
    Param("ratio", "double", low=0.0, high=1.0),
]


def bowl(p) -> float:
    """Best (1.0) at sglang, 16 seqs, 6 replicas, ratio 0.3."""
    return (p["engine"] == "sglang") - (p["seqs"] in (4, 64)) * 0.3 - (p["seqs"] in (1, 256)) - (p["replicas"] - 6) ** 2 / 4 - 10 * (p["ratio"] - 0.3) ** 2


def drive(study: OptunaTpeStudy, rounds: int, batch: int, f=bowl) -> list[dict]:
    asked = []
    for _ in range(rounds):
        for suggestion in study.ask(batch):
            asked.append(suggestion.params)
            study.tell(suggestion.trial_id, {"score": f(suggestion.params)})
    return asked


def test_tpe_gets_near_the_optimum_where_its_random_start_up_alone_does_not():
    """40 trials on a mixed space, 6 seeds: TPE after 4 random points against 40 random points."""
    modelled, random_only = [], []
    for seed in range(6):
        for startup, scores in ((4, modelled), (40, random_only)):
            study = OptunaTpeStudy(MIXED, [Objective("score")], seed=seed, startup_trials=startup)
            drive(study, rounds=10, batch=4)
            scores.append(study.best()[0].metrics["score"])
    assert all(m > r for m, r in zip(modelled, random_only)), (modelled, random_only)
    assert statistics.median(modelled) >= 0.85 > 0.5 > statistics.median(random_only)


def test_same_seed_same_suggestions_and_another_seed_others():
    def run(seed):
        return drive(OptunaTpeStudy(MIXED, [Objective("score")], seed=seed, startup_trials=2), rounds=4, batch=3)

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_values_come_back_in_each_params_own_type():
    study = OptunaTpeStudy(MIXED, [Objective("score")], seed=0, startup_trials=1)
    for params in drive(study, rounds=5, batch=4):
        assert params["engine"] in ("vllm", "sglang", 3)
        assert params["seqs"] in (1, 4, 16, 64, 256) and type(params["seqs"]) is int
        assert type(params["replicas"]) is int and 1 <= params["replicas"] <= 8
        assert type(params["ratio"]) is float and 0.0 <= params["ratio"] <= 1.0


def test_infeasible_trials_are_failed_in_optuna_never_scored():
    study = OptunaTpeStudy(MIXED, [Objective("score")], seed=0, startup_trials=2)
    first, second = study.ask(2)
    study.tell(first.trial_id, None, "infeasible: exceed runtime")
    study.tell(second.trial_id, {"score": 0.5})
    trials = study.trials()
    assert [(t.status, t.infeasible_reason) for t in trials] == [("infeasible", "infeasible: exceed runtime"), ("completed", None)]
    assert [t.state for t in study._study.trials] == [optuna.trial.TrialState.FAIL, optuna.trial.TrialState.COMPLETE]
    assert [t.trial_id for t in study.best()] == [second.trial_id]


def test_a_pareto_study_keeps_the_non_dominated_trials():
    objectives = [Objective("throughput"), Objective("latency", "minimize")]
    study = OptunaTpeStudy([Param("x", "double", low=0.0, high=1.0)], objectives, seed=0, startup_trials=2)
    a, b, c = study.ask(3)
    study.tell(a.trial_id, {"throughput": 10.0, "latency": 5.0})
    study.tell(b.trial_id, {"throughput": 8.0, "latency": 1.0})
    study.tell(c.trial_id, {"throughput": 7.0, "latency": 6.0})  # worse than a on both
    assert [t.trial_id for t in study.best()] == [a.trial_id, b.trial_id]
    assert study._study.directions == [optuna.study.StudyDirection.MAXIMIZE, optuna.study.StudyDirection.MINIMIZE]


def test_a_branch_with_every_knob_pinned_has_one_empty_point():
    study = OptunaTpeStudy([], [Objective("score")], seed=0, startup_trials=1)
    assert [s.params for s in study.ask(2)] == [{}, {}]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"seed": -1}, r"^optuna_tpe: seed must be an integer in \[0, 2\*\*32\), got -1$"),
        ({"seed": 2**32}, r"^optuna_tpe: seed must be an integer in \[0, 2\*\*32\), got 4294967296$"),
        ({"startup_trials": 0}, r"^optuna_tpe: startup_trials must be a positive integer, got 0$"),
        ({"startup_trials": True}, r"^optuna_tpe: startup_trials must be a positive integer, got True$"),
    ],
)
def test_bad_settings_are_one_line_naming_the_setting(settings, message):
    with pytest.raises(ValueError, match=message):
        OptunaTpeStudy(MIXED, [Objective("score")], **({"seed": 0, "startup_trials": 2} | settings))


def test_bad_tells_are_refused():
    study = OptunaTpeStudy(MIXED, [Objective("score")], seed=0, startup_trials=2)
    [suggestion] = study.ask(1)
    with pytest.raises(KeyError, match="unknown trial id 9"):
        study.tell(9, {"score": 1.0})
    with pytest.raises(ValueError, match="lack objectives"):
        study.tell(suggestion.trial_id, {"other": 1.0})
    study.tell(suggestion.trial_id, {"score": 1.0})
    with pytest.raises(ValueError, match="already told"):
        study.tell(suggestion.trial_id, {"score": 2.0})
    with pytest.raises(ValueError, match="positive integer"):
        study.ask(0)


@pytest.mark.e2e
def test_a_real_search_reaches_the_grid_optimum_with_fewer_replays_and_repeats_its_ledger(tmp_path):
    """Real Replay over 7 agg shapes x 2 max_num_seqs: 4 rounds x 2 of TPE. Both values hold the 8
    requests in flight, so they replay alike and the grid replays each shape once (TPE, which
    does not pick from the grid, may try both)."""
    from spica.search import run_smart_search
    from tests.search.test_search import small

    space = {"agg_max_num_seqs": [8, 64]}
    grid = run_smart_search(small(search_space=space, sweep={"algorithm": "grid"}), results_dir=tmp_path / "grid")
    config = small(search_space=space, sweep={"algorithm": "optuna_tpe", "max_rounds": 4})
    first = run_smart_search(config, results_dir=tmp_path / "a")
    second = run_smart_search(config, results_dir=tmp_path / "b")
    assert [c.key for c in first.ledger] == [c.key for c in second.ledger]
    assert [c.objectives for c in first.ledger] == [c.objectives for c in second.ledger]
    assert len(grid.ledger) == 7 and len(first.ledger) <= 8
    assert first[0].score >= 0.99 * grid[0].score


def test_a_plan_pins_the_optuna_it_was_compiled_with_and_shares_scores_with_a_vizier_plan(tmp_path):
    import yaml

    from spica.config import SmartSearchConfig
    from spica.plan import PlanError, _fingerprint, compile_plan, load_plan

    def plan(algorithm):
        return compile_plan(SmartSearchConfig.from_mapping({
            "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 8},
            "workload": {"isl": 1024, "osl": 128, "concurrency": 32, "num_request_ratio": 10},
            "sweep": {"algorithm": algorithm},
        }))

    tpe, vizier = plan("optuna_tpe"), plan("vizier")
    assert tpe.versions["optuna"] == optuna.__version__ and "optuna" not in vizier.versions
    assert tpe.scores_fingerprint == vizier.scores_fingerprint  # the algorithm never changes a score
    data = yaml.safe_load(tpe.write(tmp_path / "plan.yaml").read_text())
    data["versions"]["optuna"] = "4.0.0"
    data.pop("fingerprint")
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump({"fingerprint": _fingerprint(data), **data}))
    with pytest.raises(PlanError, match=rf"made with other versions: optuna 4.0.0 \(installed {optuna.__version__}\)"):
        load_plan(tmp_path / "plan.yaml")
