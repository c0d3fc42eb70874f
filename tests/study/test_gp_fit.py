import numpy as np
import pytest
import scipy.optimize

from spica.study import gp_fit
from spica.study.gp_fit import lockstep_lbfgsb


def test_lockstep_runs_match_independent_scipy_runs_exactly():
    """Batching the restarts must not change any run: each sees only its own function."""
    rng = np.random.default_rng(0)
    centers = rng.uniform(-2, 2, size=(4, 3))
    scales = rng.uniform(0.5, 3, size=(4, 3))
    lower, upper = np.full(3, -1.5), np.full(3, 1.5)

    def one(x, k):
        return float(np.sum(scales[k] * (x - centers[k]) ** 2 + np.sin(3 * x))), 2 * scales[k] * (x - centers[k]) + 3 * np.cos(3 * x)

    def batched(points):
        values = [one(points[k], k) for k in range(len(points))]
        return np.array([v for v, _ in values]), np.stack([g for _, g in values])

    starts = rng.uniform(-1, 1, size=(4, 3))
    widths = []
    batched = _recording(batched, widths)
    together = lockstep_lbfgsb(batched, starts, lower, upper, iterations=100)
    for k in range(4):
        alone = scipy.optimize.minimize(
            lambda x, k=k: one(x, k), starts[k], jac=True, method="L-BFGS-B",
            bounds=list(zip(lower, upper)), options={"maxiter": 100},
        )
        np.testing.assert_array_equal(together[k], alone.x)
    assert set(widths) == {4}  # finished runs keep their row: one batch shape throughout


def test_without_greenlet_the_runs_go_one_after_another_to_the_same_optima(monkeypatch):
    def one(x):
        return float(np.sum((x - 0.3) ** 2 + np.sin(3 * x))), 2 * (x - 0.3) + 3 * np.cos(3 * x)

    def batched(points):
        values = [one(x) for x in points]
        return np.array([v for v, _ in values]), np.stack([g for _, g in values])

    starts = np.random.default_rng(1).uniform(-1, 1, size=(3, 2))
    lower, upper = np.full(2, -1.5), np.full(2, 1.5)
    together = lockstep_lbfgsb(batched, starts, lower, upper, iterations=50)
    monkeypatch.setattr(gp_fit, "greenlet", None)
    widths = []
    apart = lockstep_lbfgsb(_recording(batched, widths), starts, lower, upper, iterations=50)
    np.testing.assert_array_equal(apart, together)
    assert set(widths) == {1}


def _recording(batched, widths):
    def recorded(points):
        widths.append(len(points))
        return batched(points)

    return recorded


def test_a_failing_batch_raises_instead_of_hanging_the_runs():
    def broken(points):
        raise FloatingPointError("loss blew up")

    starts = np.zeros((3, 2))
    with pytest.raises(FloatingPointError, match="loss blew up"):
        lockstep_lbfgsb(broken, starts, np.full(2, -1.0), np.full(2, 1.0), iterations=10)



def test_padded_feature_columns_fit_the_same_model():
    """fast_designer pads feature columns so that branches share functions: the fit must not see
    the padding (same hyperparameters for the real columns, the padded ones at the prior's centre)."""
    from spica.study.vizier_internals import types

    rng = np.random.default_rng(3)
    x, c = rng.random((7, 4)), rng.integers(0, 3, (7, 1)).astype(types.INT_DTYPE)
    y = np.sin(3 * x[:, :1]) + (c == 1) + 0.1 * rng.standard_normal((7, 1))

    def fit(columns, categories):
        features = types.ModelInput(gp_fit.pad_rows(x, 16, 0.0, columns), gp_fit.pad_rows(c, 16, 0, categories))
        data = types.ModelData(features, gp_fit.pad_rows((y - y.mean()) / y.std(), 16, 0.0))
        return gp_fit.fit_gp(data, np.random.default_rng(0), restarts=4, max_iterations=200).params

    unpadded, padded = fit(4, 1), fit(8, 2)
    for name, value in unpadded.items():
        np.testing.assert_allclose(np.ravel(padded[name])[: np.size(value)], np.ravel(value), rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(padded["continuous_length_scale_squared"])[4:], 0.5)
    np.testing.assert_array_equal(np.asarray(padded["categorical_length_scale_squared"])[1:], 0.5)
