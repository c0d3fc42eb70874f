"""The fit finds a cluster it is shown: measurements made by Spica's own replays at known timing
factors, client start and request overhead are fitted back to those numbers, and held-out points
are then predicted within a few percent."""

from __future__ import annotations

import dataclasses

import pytest

from spica.calibrate.fit import cross_validate, fit, predictors
from spica.calibrate.measurements import Measurement, read_silicon_csv
from spica.search.pool import local_pool
from tests.calibrate.test_calibrate_command import qwen_rows, subset

pytestmark = pytest.mark.e2e
CLUSTER = {"prefill": 1.3, "prefill_exponent": 0.0, "decode": 0.8, "decode_exponent": 0.0}
OVERHEAD_MS = 40.0


@pytest.fixture(scope="module")
def runs():
    pool = local_pool(2, 2)
    yield predictors(pool)
    pool.close()


@pytest.fixture(scope="module")
def cluster_points(runs, tmp_path_factory):
    """The 12 silicon configurations of qwen_rows, "measured" on a cluster whose prefill is 1.3x and
    decode 0.8x AIS, whose clients drift apart, and whose frontend answers 40 ms late."""
    source = subset(tmp_path_factory.mktemp("fit") / "cluster.csv", qwen_rows)
    points = [item for item in read_silicon_csv(source) if isinstance(item, Measurement)]
    truth = runs["staggered"](points, CLUSTER)
    assert all(item.status == "feasible" for item in truth)
    return [dataclasses.replace(item.measurement, ttft_ms=item.ttft_ms + OVERHEAD_MS, tpot_ms=item.tpot_ms) for item in truth]


def test_the_fit_recovers_the_clusters_timing_client_start_and_overhead(runs, cluster_points):
    found = fit(cluster_points, runs)
    assert found.client_start == "staggered"
    assert found.factors["decode"] == pytest.approx(0.8, rel=0.06)
    assert found.factors["ttft_overhead_ms"] == pytest.approx(OVERHEAD_MS, abs=15.0)
    assert found.error < 0.05


def test_held_out_points_of_that_cluster_are_predicted_within_a_few_percent(runs, cluster_points):
    validation = cross_validate(cluster_points, runs, folds=3)
    assert validation.before.ttft_median_ape > 0.2  # uncalibrated Spica: lock-step, no overhead, AIS's timing
    assert validation.after.ttft_median_ape < 0.06 and validation.after.tpot_median_ape < 0.04
    assert validation.improves
