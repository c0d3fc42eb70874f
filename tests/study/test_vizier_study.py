"""VizierStudy against a real in-process Vizier service (SQLite under tmp_path).

The fast designer's GP runs for real; studies share one space and pool so JAX traces once.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spica.study import exported, fast_designer
from spica.study.base import AskPlan
from spica.study.params import Objective, Param
from spica.study.vizier_study import VizierStudy

REPO = Path(__file__).resolve().parents[2]
PARAMS = [
    Param("backend", "categorical", ("vllm", "sglang", "trtllm")),
    Param("tp", "discrete", (1, 2, 4, 8)),
    Param("replicas", "integer", low=1, high=4),
    Param("max_num_seqs", "discrete", (256, 1024)),
]
POOL = [
    {"backend": b, "tp": tp, "replicas": r, "max_num_seqs": s}
    for b in ("vllm", "sglang", "trtllm")
    for tp in (1, 2, 4, 8)
    for r in (1, 2, 3, 4)
    for s in (256, 1024)
    if tp * r <= 8
]
THROUGHPUT = [Objective("throughput")]


def throughput(p):
    return {"throughput": p["tp"] * p["replicas"] * (1.2 if p["backend"] == "trtllm" else 1.0) + p["max_num_seqs"] / 1024}


def study(tmp_path, params=PARAMS, **overrides):
    kwargs = dict(seed=7, storage_dir=tmp_path, fingerprint="plan1", candidates=POOL)
    kwargs.update(overrides)
    return VizierStudy("branch-agg", params, THROUGHPUT, **kwargs)


def run_rounds(s, rounds, per_round=2):
    asked = []
    for _ in range(rounds):
        batch = s.ask(per_round)
        asked.append([x.params for x in batch])
        for x in batch:
            s.tell(x.trial_id, throughput(x.params))
    return asked


def test_same_seed_gives_same_suggestions_through_the_gp_phase(tmp_path):
    first = run_rounds(study(tmp_path / "a"), 3)
    second = run_rounds(study(tmp_path / "b"), 3)
    other_seed = run_rounds(study(tmp_path / "c", seed=8), 1)
    assert first == second
    assert other_seed[0] != first[0]


def test_background_warm_up_leaves_the_suggestions_unchanged(tmp_path, monkeypatch):
    monkeypatch.setattr(fast_designer, "_WARMED", set())  # as in a new process
    warmed = study(tmp_path / "a", asks=AskPlan((2, 2, 2), 0))
    assert warmed._warming is not None  # started as the study opens: rounds 2 and 3 are model-based
    first = warmed.ask(2)
    for suggestion in first:
        warmed.tell(suggestion.trial_id, throughput(suggestion.params))
    plain = study(tmp_path / "b")
    assert [[x.params for x in first]] + run_rounds(warmed, 2) == run_rounds(plain, 3)
    single = study(tmp_path / "c", asks=AskPlan((2,), 0))
    assert single._warming is None  # one round: nothing model-based to prepare


def test_the_warm_up_loads_every_function_the_model_based_asks_call(tmp_path, monkeypatch):
    exported._LOADED.clear()  # as in a new process
    monkeypatch.setattr(fast_designer, "_WARMED", set())
    warmed = study(tmp_path, asks=AskPlan((2, 2, 16), 0))  # the last ask wider: more rows than the others
    warmed._warming.result()
    loaded = set(exported._LOADED)
    run_rounds(warmed, 2)
    run_rounds(warmed, 1, per_round=16)
    assert loaded and set(exported._LOADED) == loaded  # the asks found every (function, shape) ready


def test_the_warm_up_scores_one_block_of_a_larger_pool_and_still_loads_every_function(tmp_path, monkeypatch):
    """The real asks score every block of the pool; the warm-up, only the first (same shape)."""
    exported._LOADED.clear()
    monkeypatch.setattr(fast_designer, "_WARMED", set())
    ratios = [0.05 + 0.75 * step / 24 for step in range(25)]
    pool = [{**point, "kv_load_ratio": ratio} for point in POOL for ratio in ratios]
    assert len(pool) > fast_designer._BLOCK * fast_designer._CHUNK
    params = PARAMS + [Param("kv_load_ratio", "double", low=0.05, high=0.8)]
    warmed = study(tmp_path, asks=AskPlan((2, 2, 2), 0), candidates=pool, params=params)
    warmed._warming.result()
    loaded = set(exported._LOADED)
    run_rounds(warmed, 3)
    assert loaded and set(exported._LOADED) == loaded


def test_no_garbage_collection_runs_while_a_warm_up_does(tmp_path, monkeypatch):
    """Two studies warming up at once: collection is off until the last of them ends, then on."""
    import gc

    monkeypatch.setattr(fast_designer, "_WARMED", set())
    first, second = study(tmp_path / "a", asks=AskPlan((2, 2, 2), 0)), study(tmp_path / "b", asks=AskPlan((8,) * 4, 0))  # more rows: warmed too
    assert not gc.isenabled()
    warm_ups = [first._warming, second._warming]
    warm_ups[0].result()
    assert not gc.isenabled() or warm_ups[1].done()
    warm_ups[1].result()
    assert gc.isenabled()


def test_integer_and_discrete_params_come_back_as_python_ints(tmp_path):
    for algorithm, candidates in (("fast", POOL), ("default", None)):
        s = study(tmp_path / algorithm, algorithm=algorithm, candidates=candidates)
        for suggestion in s.ask(2):
            assert type(suggestion.params["replicas"]) is int
            assert type(suggestion.params["tp"]) is int
            assert suggestion.params["backend"] in ("vllm", "sglang", "trtllm")


def test_infeasible_is_recorded_as_infeasible_and_the_gp_keeps_suggesting(tmp_path):
    s = study(tmp_path)
    for x in s.ask(2):
        s.tell(x.trial_id, None, "kv cache does not fit")
    second = s.ask(2)  # a GP over infeasible-only history (NSGA2 crashes here; ours must not)
    for x in second:
        s.tell(x.trial_id, throughput(x.params))
    third = s.ask(2)
    assert len(second) == len(third) == 2
    reopened = study(tmp_path)  # what Vizier stored, not what this object remembers
    statuses = [(t.status, t.infeasible_reason) for t in reopened.trials()]
    assert statuses[:2] == [("infeasible", "kv cache does not fit")] * 2
    assert [t.status for t in reopened.trials()[2:4]] == ["completed", "completed"]
    assert reopened.best()[0].metrics["throughput"] == max(t.metrics["throughput"] for t in reopened.trials()[2:4])


def test_pool_aware_study_suggests_each_candidate_once_then_runs_dry(tmp_path):
    pool = POOL[:5]
    s = study(tmp_path, candidates=pool, algorithm="quasi_random")
    asked = s.ask(3) + s.ask(3)
    assert len(asked) == 5
    assert sorted(map(repr, (x.params for x in asked))) == sorted(map(repr, pool))
    assert s.ask(1) == []


def test_changed_fingerprint_never_reuses_an_old_study(tmp_path):
    old = study(tmp_path, algorithm="random")
    old.ask(2)
    fresh = study(tmp_path, algorithm="random", fingerprint="plan2")
    assert fresh.trials() == [] and fresh.vizier_study_id != old.vizier_study_id


RESUME_SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from tests.study.test_vizier_study import study
s = study(Path({storage!r}), algorithm="quasi_random")
before = [(t.trial_id, t.status) for t in s.trials()]
after = [x.trial_id for x in s.ask(2)]
print(json.dumps({{"before": before, "ask": after}}))
"""


@pytest.mark.e2e
def test_resume_from_sqlite_in_a_new_process(tmp_path):
    s = study(tmp_path, algorithm="quasi_random")
    asked = s.ask(3)
    for x in asked[:2]:
        s.tell(x.trial_id, throughput(x.params))
    script = RESUME_SCRIPT.format(repo=str(REPO), storage=str(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["before"] == [[1, "completed"], [2, "completed"], [3, "pending"]]
    assert result["ask"] == [3, 4]  # the interrupted trial first, then a new one


def test_multi_objective_study_with_a_continuous_dimension(tmp_path):
    params = [Param("tp", "discrete", (1, 2, 4, 8)), Param("kv_load_ratio", "double", low=0.2, high=0.9)]
    objectives = [Objective("throughput_per_gpu"), Objective("ttft_ms", "minimize")]
    s = VizierStudy("pareto", params, objectives, seed=1, storage_dir=tmp_path, fingerprint="p")
    for _ in range(3):
        for x in s.ask(2):
            assert 0.2 <= x.params["kv_load_ratio"] <= 0.9
            load, tp = x.params["kv_load_ratio"], x.params["tp"]
            s.tell(x.trial_id, {"throughput_per_gpu": load * 100 / tp**0.3, "ttft_ms": 50 * load / tp})
    front = s.best()
    assert front and all(t.status == "completed" for t in front)
    assert len(s.trials()) == 6


def test_invalid_arguments_name_the_field(tmp_path):
    with pytest.raises(ValueError, match=r"algorithm: 'nsga2' is not one of \['fast', 'default', 'random', 'quasi_random'\]"):
        study(tmp_path, algorithm="nsga2")
    with pytest.raises(ValueError, match="fingerprint: 'a/b' must be a non-empty string without '/'"):
        study(tmp_path, fingerprint="a/b")
    with pytest.raises(ValueError, match=r"candidate .*missing params \['max_num_seqs'\]"):
        study(tmp_path, candidates=[{"backend": "vllm", "tp": 1, "replicas": 1}])


def test_in_memory_study_asks_what_a_study_on_disk_asks(tmp_path):
    assert run_rounds(study(None, storage_dir=None), 3) == run_rounds(study(tmp_path), 3)


def test_a_feasibility_study_with_fewer_candidates_left_than_asked_answers_fewer(tmp_path):
    """min_gpus / min_cost: once nothing left can beat the best feasible, the designer has fewer
    picks than asked (Vizier's service popped past them: an IndexError on B200, where small
    deployments meet the SLA) and then none, which ends the branch."""
    params = [Param("gpus", "discrete", (1, 2, 3, 4, 5, 6))]
    s = VizierStudy("branch-agg", params, [Objective("gpus", "minimize", "gpus")], seed=7, storage_dir=tmp_path,
                    fingerprint="plan1", candidates=[{"gpus": g} for g in (1, 2, 3, 4, 5, 6)])
    asked = []
    while batch := s.ask(3):
        asked.append(sorted(x.params["gpus"] for x in batch))
        for x in batch:
            s.tell(x.trial_id, {"gpus": x.params["gpus"]})  # every deployment meets the SLA
    assert len(asked[-1]) < 3 and min(map(min, asked)) == 1


class KeptAnswers:
    """An AskRecord in memory, as AskJournal keeps one in a results folder."""

    def __init__(self, answers=None):
        self.answers = dict(answers or {})
        self.recalled = []

    def recall(self, moment):
        if moment in self.answers:
            self.recalled.append(moment)
        return self.answers.get(moment)

    def keep(self, moment, points):
        self.answers[moment] = points


def test_a_study_takes_back_its_designers_answers_at_the_same_moments_only(tmp_path):
    record = KeptAnswers()
    first = run_rounds(study(None, storage_dir=None, record=record), 4)
    assert len(record.answers) == 4 and not record.recalled
    again = KeptAnswers(record.answers)
    assert run_rounds(study(None, storage_dir=None, record=again), 4) == first and len(again.recalled) == 4

    # an answer is taken as kept (here: changed), which shows the designer was not asked again ...
    changed = {moment: list(reversed(points)) for moment, points in record.answers.items()}
    taken = run_rounds(study(None, storage_dir=None, record=KeptAnswers(changed)), 1)
    assert taken == [list(reversed(first[0]))]
    # ... and never at another moment: another seed's study, or one told other results, asks its designer
    other_seed = KeptAnswers(record.answers)
    run_rounds(study(None, storage_dir=None, seed=8, record=other_seed), 2)
    assert not other_seed.recalled
    told_otherwise = KeptAnswers(record.answers)
    s = study(None, storage_dir=None, record=told_otherwise)
    for x in s.ask(2):
        s.tell(x.trial_id, {"throughput": 1.0})
    s.ask(2)
    assert len(told_otherwise.recalled) == 1  # the first ask's moment only
