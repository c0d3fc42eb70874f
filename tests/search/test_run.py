"""The points a branch's study scores: the whole grid where it can be listed, else a seeded
sample of the same grid, so that every point scored is a real config."""

from __future__ import annotations

import math

from spica.search.branches import branches_for
from spica.search.dimensions import branch_knobs
from spica.search.run import _grid_points, study_params
from tests.search.test_scale_free import config


def _disagg():
    cfg = config({"deployment_mode": ["disagg"], "backend": ["vllm", "sglang"], "prefill_max_num_seqs": [1, 2, 4]})
    branch = branches_for(cfg)[0]
    knobs = branch_knobs(cfg, branch.mode, branch.quant_knobs())
    return cfg, branch, knobs, study_params(cfg, branch, knobs)


def _key(point):
    return tuple(sorted(point.items()))


def test_a_sampled_grid_holds_only_points_of_the_listed_grid_drawn_by_the_seed():
    cfg, branch, knobs, params = _disagg()
    listed = _grid_points(branch, knobs, cfg, params)
    combos = math.prod(len(knob.values) for knob in knobs)
    assert len(listed) == 5 * combos * sum(len(parallel.backends) for parallel in branch.configs)  # 5 load levels
    sample = _grid_points(branch, knobs, cfg, params, (100, 7))
    assert len(sample) == len({_key(point) for point in sample}) == 100
    assert {_key(point) for point in sample} <= {_key(point) for point in listed}
    assert sample == _grid_points(branch, knobs, cfg, params, (100, 7))
    assert sample != _grid_points(branch, knobs, cfg, params, (100, 8))
    assert _grid_points(branch, knobs, cfg, params, (len(listed) + 1, 7)) == listed  # a sample as large as the grid is the grid
