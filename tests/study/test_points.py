"""spica.study.points: a candidate set's features and keys are Vizier's own for every point,
however they are computed."""

from __future__ import annotations

import numpy as np
from vizier import pyvizier as vz

from spica.study.params import Objective, Param
from spica.study.points import PointSet, feature_converter, features_of, parameter_key
from spica.study.vizier_space import problem_statement, to_vizier

PARAMS = [
    Param("kv_load_ratio", "double", low=0.1, high=2.0),
    Param("log2_gpus", "integer", low=0, high=3),
    Param("max_num_seqs", "discrete", (1, 8, 64, 256)),
    Param("backend", "categorical", ("vllm", "sglang", "trtllm")),
    Param("router", "categorical", ("round_robin", "kv")),
]


def test_the_features_and_keys_of_every_point_are_vizier_s_own():
    rng = np.random.default_rng(0)
    points = [
        to_vizier(PARAMS, {
            "kv_load_ratio": float(rng.uniform(0.1, 2.0)), "log2_gpus": int(rng.integers(0, 4)),
            "max_num_seqs": int(rng.choice([1, 8, 64, 256])), "backend": str(rng.choice(["vllm", "sglang", "trtllm"])),
            "router": str(rng.choice(["round_robin", "kv"])),
        })
        for _ in range(300)
    ]
    problem = problem_statement(PARAMS, [Objective("throughput", "maximize")])
    candidates = PointSet.build(problem, points)

    parameters = [vz.ParameterDict(point) for point in points]
    expected = features_of(feature_converter(problem), [vz.TrialSuggestion(p) for p in parameters])
    np.testing.assert_array_equal(candidates.features.continuous, expected.continuous)
    np.testing.assert_array_equal(candidates.features.categorical, expected.categorical)
    assert candidates.features.categorical.dtype == expected.categorical.dtype
    assert candidates.keys == tuple(parameter_key(p, candidates.names) for p in parameters)
    assert candidates.parameters_at(7) == parameters[7]
    assert len(candidates) == 300
