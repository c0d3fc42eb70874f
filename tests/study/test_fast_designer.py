"""spica.study.fast_designer: the pool is scored in blocks of one shape, with the same picks as
scored whole; a study whose functions an earlier study's warm-up loaded is not warmed up again."""

from __future__ import annotations

import numpy as np
from vizier import algorithms as vza
from vizier import pyvizier as vz

from spica.study import fast_designer
from spica.study.base import AskPlan
from spica.study.fast_designer import FastDesigner, FastSettings, warm_up
from spica.study.params import Objective, Param
from spica.study.points import PointSet, quasi_random_suggestions
from spica.study.vizier_space import problem_statement, to_vizier

PARAMS = [
    Param("ratio", "double", low=0.1, high=2.0),
    Param("log2_gpus", "integer", low=0, high=5),
    Param("max_num_seqs", "discrete", (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)),
    Param("backend", "categorical", ("vllm", "sglang", "trtllm")),
]


def _pool(size: int) -> tuple[vz.ProblemStatement, PointSet]:
    rng = np.random.default_rng(1)
    points = [
        to_vizier(PARAMS, {"ratio": float(rng.uniform(0.1, 2.0)), "log2_gpus": int(rng.integers(0, 6)),
                           "max_num_seqs": int(rng.choice(PARAMS[2].choices)), "backend": str(rng.choice(PARAMS[3].choices))})
        for _ in range(size)
    ]
    problem = problem_statement(PARAMS, [Objective("throughput", "maximize")])
    return problem, PointSet.build(problem, points)


def _picks(problem: vz.ProblemStatement, candidates: PointSet) -> list[int]:
    """Four model-based picks after six results of a smooth made-up objective, two still pending."""
    suggestions = quasi_random_suggestions(problem, candidates, set(), 8, seed=3, offset=0)
    trials = []
    for number, suggestion in enumerate(suggestions, 1):
        trial = vz.Trial(parameters=suggestion.parameters, id=number)
        if number <= 6:
            values = suggestion.parameters
            trial.complete(vz.Measurement(metrics={"throughput": -(float(values["ratio"].value) - 1.2) ** 2 + 0.1 * float(values["log2_gpus"].value)}))
        trials.append(trial)
    designer = FastDesigner(problem, candidates, seed=5, salt=8)
    designer.update(vza.CompletedTrials(trials[:6]), vza.ActiveTrials(trials[6:]))
    return candidates.rows_of(designer.suggest(4))


def test_the_pool_scored_in_blocks_gives_the_picks_it_gives_scored_whole(monkeypatch):
    problem, candidates = _pool(2500)  # three blocks of 1,024, the last one mostly padding
    in_blocks = _picks(problem, candidates)
    monkeypatch.setattr(fast_designer, "_BLOCK", 4096 // fast_designer._CHUNK)  # one block holds the whole pool
    assert _picks(problem, candidates) == in_blocks
    assert len(set(in_blocks)) == 4 and None not in in_blocks


def test_a_study_whose_functions_an_earlier_warm_up_loaded_is_not_warmed_up_again(monkeypatch):
    monkeypatch.setattr(fast_designer, "_WARMED", set())
    problem, candidates = _pool(300)
    first = warm_up(problem, candidates, asks=AskPlan((2,) * 4, 2), seed=0)
    assert first is not None
    first.result()
    assert warm_up(problem, _pool(900)[1], asks=AskPlan((2,) * 4, 2), seed=1) is None  # same widths, rows and block
    assert warm_up(problem, candidates, asks=AskPlan((8,) * 4, 8), seed=0) is not None  # more rows
    wider = problem_statement([*PARAMS, *(Param(f"knob{i}", "double", low=0.0, high=1.0) for i in range(6))], [Objective("throughput", "maximize")])
    assert warm_up(wider, None, asks=AskPlan((2,) * 4, 2), seed=0) is not None  # 16 continuous columns, not 8


def test_trials_are_padded_to_at_most_half_again_the_rows_they_fill_with_two_sizes_per_doubling():
    """The GP's cost is cubic in its rows: padded to powers of two alone, 17 trials cost as 32."""
    rows = [fast_designer._padded_rows(n, FastSettings()) for n in range(700)]
    assert all(size > n for n, size in enumerate(rows))  # always padded: a spare row
    assert all(size <= max(16, 1.5 * (n + 1)) for n, size in enumerate(rows))
    assert sorted(set(rows)) == [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768]
