"""What an open-loop search's study sees of each config's prefill capacity (spica/search/prefill_capacity.py)."""

from __future__ import annotations

import math

import pytest

from spica.search import prefill_capacity
from spica.search.branches import branches_for, searched_branch
from spica.search.dimensions import branch_knobs
from spica.search.run import _grid_points, study_params
from tests.search.test_scale_free import config

OPEN_LOOP = {"isl": 2048, "osl": 64, "request_rate": 4.0, "num_request_ratio": 1}
CLOSED_LOOP = {"isl": 2048, "osl": 64, "concurrency": 16, "num_request_ratio": 1}
GOODPUT = {"target": "goodput_per_gpu", "sla": {"ttft_ms": 2000, "itl_ms": 50}}


def _branch(workload, mode="agg", goal=GOODPUT):
    cfg = config({"deployment_mode": [mode], "backend": ["vllm"]}, workload, goal)
    return cfg, searched_branch(cfg, branches_for(cfg)[0])


def test_capacity_grows_with_engines_and_with_their_width_but_less_than_their_gpus():
    cfg, branch = _branch(OPEN_LOOP)
    found = prefill_capacity.prefill_capacities(cfg, branch)
    by_shape = {(parallel.pools[0].shape.tp, parallel.pools[0].replicas): found[index, "vllm"] for index, parallel in enumerate(branch.configs)}
    assert by_shape[1, 4] - by_shape[1, 1] == math.log2(4)  # four engines take in four times the tokens
    assert by_shape[1, 1] < by_shape[2, 1] < by_shape[4, 1] < by_shape[8, 1]  # a wider engine prefills faster
    assert by_shape[8, 1] < by_shape[1, 8]  # but eight engines of one GPU outpace one of eight


@pytest.mark.parametrize("workload, goal, sees", [
    (OPEN_LOOP, GOODPUT, True),
    (OPEN_LOOP, {"target": "throughput_per_gpu", "sla": {"ttft_ms": 2000}, "strict_sla": True}, True),  # only SLA-meeting candidates count
    (OPEN_LOOP, {"target": "throughput_per_gpu"}, False),  # an overloaded deployment still serves its capacity
    (CLOSED_LOOP, GOODPUT, False),  # a closed loop paces itself to the deployment
])
def test_only_an_open_loop_judged_by_an_sla_studies_capacity_and_its_points_carry_it(workload, goal, sees):
    cfg, branch = _branch(workload, goal=goal)
    knobs = branch_knobs(cfg, branch.mode, branch.quant_knobs())
    params = study_params(cfg, branch, knobs)
    assert (prefill_capacity.FEATURE in [param.name for param in params]) is sees
    found = prefill_capacity.prefill_capacities(cfg, branch)
    assert bool(found) is sees
    if sees:
        assert {point[prefill_capacity.FEATURE] for point in _grid_points(branch, knobs, cfg, params)} == set(found.values())


def test_a_disagg_config_is_as_fast_as_its_prefill_pool():
    cfg, branch = _branch(OPEN_LOOP, "disagg")
    found = prefill_capacity.prefill_capacities(cfg, branch)
    same_prefill: dict[tuple, set[float]] = {}
    for index, parallel in enumerate(branch.configs):
        prefill = parallel.pool("prefill")
        same_prefill.setdefault((prefill.shape, prefill.replicas), set()).add(found[index, "vllm"])
    assert len(same_prefill) > 1 and all(len(values) == 1 for values in same_prefill.values())  # decode pools do not count
