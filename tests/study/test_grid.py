import pytest

from spica.study.base import Trial, best_trials
from spica.study.grid import GridStudy
from spica.study.params import Objective

CANDIDATES = [{"tp": tp, "replicas": r} for tp in (1, 2, 4) for r in (1, 2)]


def test_grid_hands_out_every_candidate_once_in_order_then_nothing():
    study = GridStudy(CANDIDATES + [CANDIDATES[0]], [Objective("throughput")])
    asked = study.ask(4) + study.ask(4)
    assert [s.params for s in asked] == CANDIDATES
    assert [s.trial_id for s in asked] == [1, 2, 3, 4, 5, 6]
    assert study.ask(3) == []
    assert study.remaining == 0


def test_grid_best_ignores_infeasible_and_pending():
    study = GridStudy(CANDIDATES, [Objective("throughput")])
    first, second, third = study.ask(3)
    study.tell(first.trial_id, {"throughput": 10.0})
    study.tell(second.trial_id, None, "out of memory")
    assert [t.trial_id for t in study.best()] == [first.trial_id]
    assert study.trials()[1] == Trial(second.trial_id, second.params, "infeasible", {}, "out of memory")
    assert study.trials()[2].status == "pending"


def test_tell_validates_ids_metrics_and_double_tells():
    study = GridStudy(CANDIDATES, [Objective("throughput")])
    (s,) = study.ask(1)
    with pytest.raises(KeyError, match="unknown trial id 7"):
        study.tell(7, {"throughput": 1.0})
    with pytest.raises(ValueError, match=r"metrics lack objectives \['throughput'\]"):
        study.tell(s.trial_id, {"latency": 1.0})
    with pytest.raises(ValueError, match=r"metrics \['throughput'\] are not finite; tell it as infeasible"):
        study.tell(s.trial_id, {"throughput": float("nan")})
    with pytest.raises(ValueError, match="got both metrics and infeasible_reason"):
        study.tell(s.trial_id, {"throughput": 1.0}, "oom")
    study.tell(s.trial_id, {"throughput": 1.0})
    with pytest.raises(ValueError, match="was already told"):
        study.tell(s.trial_id, {"throughput": 2.0})


def test_ask_count_must_be_positive():
    with pytest.raises(ValueError, match="ask: n must be a positive integer, got 0"):
        GridStudy(CANDIDATES, [Objective("throughput")]).ask(0)


def test_best_is_the_pareto_set_for_several_objectives():
    objectives = [Objective("throughput_per_gpu"), Objective("e2e_latency", "minimize")]
    trials = [
        Trial(1, {}, "completed", {"throughput_per_gpu": 10, "e2e_latency": 5}),
        Trial(2, {}, "completed", {"throughput_per_gpu": 8, "e2e_latency": 3}),
        Trial(3, {}, "completed", {"throughput_per_gpu": 7, "e2e_latency": 6}),  # dominated by both
        Trial(4, {}, "infeasible", {}, "oom"),
    ]
    assert [t.trial_id for t in best_trials(trials, objectives)] == [1, 2]


def test_single_objective_best_minimises_and_breaks_ties_to_lower_id():
    objectives = [Objective("e2e_latency", "minimize")]
    trials = [Trial(i, {}, "completed", {"e2e_latency": v}) for i, v in ((1, 4.0), (2, 3.0), (3, 3.0))]
    assert [t.trial_id for t in best_trials(trials, objectives)] == [2]
