"""Fitting Vizier's GP hyperparameters (ARD) quickly, the way GP-UCB-PE does it.

Same model, priors, fixed start and random restarts as Vizier's GP-UCB-PE; what changes
is the mechanics: restarts run as independent SciPy L-BFGS-B fits in log coordinates, stepping
in lockstep over one jitted, vmapped loss-and-gradient (one thread, no per-run overhead), and host-side work stays in NumPy (every eager JAX
op costs a trace and a compile per process).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402
from scipy.optimize import _lbfgsb  # noqa: E402  (the L-BFGS-B routine minimize drives)
from vizier._src.jax import stochastic_process_model as sp  # noqa: E402
from vizier._src.jax import types  # noqa: E402
from vizier._src.jax.models import tuned_gp_models  # noqa: E402

from spica.study import exported  # noqa: E402


def pad_rows(array: np.ndarray, rows: int, fill: float) -> types.PaddedArray:
    """Pads rows in NumPy (an eager jnp.pad compiles per shape) with a finite fill: a NaN
    fill leaks NaN into gradients through the masked entries."""
    array = np.asarray(array)
    padded = np.full((rows, array.shape[1]), fill, dtype=array.dtype)
    padded[: len(array)] = array
    mask = np.zeros(padded.shape, dtype=bool)
    mask[: len(array)] = True
    return types.PaddedArray(
        padded,
        fill_value=np.asarray(fill, dtype=array.dtype),
        _original_shape=np.asarray(array.shape),
        _mask=mask,
        _nopadding_done=False,
    )


def fit_gp(
    data: types.ModelData, rng: np.random.Generator, *, restarts: int, max_iterations: int
) -> sp.StochasticProcessWithCoroutine:
    """ARD as in GP-UCB-PE: Vizier's fixed start plus random restarts, each refined by
    L-BFGS-B (in lockstep, see `lockstep_lbfgsb`), the lowest loss kept.

    The search runs in log coordinates: every hyperparameter is a positive scale with bounds
    spanning decades (Vizier draws them log-uniformly too), and there L-BFGS-B converges in
    about a tenth of the steps it needs on the raw values, to optima as good or better
    (figures in benchmarks/bench_gp_fit.py), so more random restarts fit in less time.

    Host-side work stays in NumPy: every eager JAX op costs a trace and a compile per
    process, which dominated the first suggestion.
    """
    coroutine = tuned_gp_models.VizierGaussianProcess.build_model(data).coroutine
    per_metric = tuned_gp_models.VizierGaussianProcess(
        _dim=types.ContinuousAndCategorical(data.features.continuous.shape[-1], data.features.categorical.shape[-1]),
        _num_metrics=1,
    )
    labels = np.asarray(data.labels.unpad())
    rows = data.labels.shape[0]
    metric_data = tuple(
        types.ModelData(data.features, pad_rows(labels[:, i : i + 1], rows, 0.0)) for i in range(labels.shape[1])
    )
    fixed = _fixed_start(data)
    layout = tuple((name, np.shape(value)) for name, value in sorted(fixed.items()))
    lower, upper = (_flatten(bound, layout) for bound in _bounds(per_metric))

    static = (("per_metric", per_metric), ("layout", layout))

    def losses_and_grads(log_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.exp(log_points)
        losses, grads = exported.call(_batched_loss_and_grad, (points, metric_data), static)
        finite = np.isfinite(np.asarray(losses))
        # d loss / d log(x) = x * d loss / dx
        return np.where(finite, losses, 1e10), np.where(finite[:, None], np.asarray(grads) * points, 0.0)

    log_lower, log_upper = np.log(lower), np.log(upper)
    # Vizier's initialisers draw every GP hyperparameter log-uniformly within its bounds.
    random_starts = rng.uniform(log_lower, log_upper, size=(restarts, lower.size))
    initial = np.vstack([np.log(np.clip(_flatten(fixed, layout), lower, upper))[None], random_starts])
    solutions = lockstep_lbfgsb(losses_and_grads, initial, log_lower, log_upper, max_iterations)
    best = np.exp(solutions[int(np.argmin(losses_and_grads(solutions)[0]))])
    return sp.StochasticProcessWithCoroutine(coroutine, _unflatten(best, layout))


def _bounds(per_metric: sp.ModelCoroutine) -> tuple[dict[str, Any], dict[str, Any]]:
    """Vizier's (lower, upper) hyperparameter bounds (running the coroutine is slow: cached)."""
    lower, upper = exported.call(_constraint_bounds, (), (("per_metric", per_metric),))
    return {name: np.asarray(value) for name, value in lower.items()}, {name: np.asarray(value) for name, value in upper.items()}


def _constraint_bounds(per_metric: sp.ModelCoroutine) -> tuple[dict[str, Any], dict[str, Any]]:
    return sp.get_constraints(sp.StochasticProcessModel(per_metric)).bounds


def lockstep_lbfgsb(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    starts: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    iterations: int,
) -> np.ndarray:
    """One independent L-BFGS-B run per start, stepping in lockstep so that every round of
    their evaluations is a single batched call.

    Each run is SciPy's own L-BFGS-B routine driven through its reverse-communication
    interface with `scipy.optimize.minimize`'s defaults, so it takes exactly the steps
    minimize would (tests/study/test_gp_fit.py checks this), at about the cost of the
    longest run and without a thread per run. Finished runs keep their row at the last
    point so the batch shape, and thus the jitted function, never changes.
    """
    runs = [_LbfgsbRun(start, lower, upper, iterations) for start in starts]
    points = np.array([run.x for run in runs])
    with threadpoolctl.threadpool_limits(1, user_api="blas"):  # threaded BLAS on tiny vectors: 5x slower
        while True:
            for run in runs:
                run.advance()
            if all(run.finished for run in runs):
                return np.array([run.x for run in runs])
            for index, run in enumerate(runs):
                points[index] = run.x
            losses, grads = losses_and_grads(points)
            for index, run in enumerate(runs):
                if not run.finished:
                    run.receive(float(losses[index]), grads[index])


class _LbfgsbRun:
    """One L-BFGS-B minimisation, advanced until it needs the next loss and gradient.

    Mirrors scipy.optimize._lbfgsb_py._minimize_lbfgsb (SciPy 1.17.1, pinned) with its
    default options; only the evaluation of f and g is handed back to the caller.
    """

    _CORRECTIONS = 10  # maxcor
    _FACTR = 2.2204460492503131e-09 / np.finfo(float).eps  # ftol / eps
    _PGTOL = 1e-5  # gtol
    _MAX_LINE_SEARCH = 20  # maxls
    _MAX_EVALUATIONS = 15000  # maxfun
    _FG, _NEW_X = 3, 1  # task codes: evaluate f and g at x; an iteration finished

    def __init__(self, start: np.ndarray, lower: np.ndarray, upper: np.ndarray, iterations: int) -> None:
        n = len(start)
        m = self._CORRECTIONS
        self.x = np.clip(np.array(start, dtype=np.float64), lower, upper)
        self.finished = False
        self._lower, self._upper = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
        self._bound_kinds = np.full(n, 2, dtype=np.int32)  # both bounds, finite, on every variable
        self._iterations, self._max_iterations, self._evaluations = 0, iterations, 0
        self._f = np.array(0.0)
        self._g = np.zeros(n)
        self._wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
        self._iwa = np.zeros(3 * n, dtype=np.int32)
        self._task = np.zeros(2, dtype=np.int32)
        self._ln_task = np.zeros(2, dtype=np.int32)
        self._lsave = np.zeros(4, dtype=np.int32)
        self._isave = np.zeros(44, dtype=np.int32)
        self._dsave = np.zeros(29)
        self._needs_evaluation = False

    def advance(self) -> None:
        """Runs the routine until it asks for f and g at self.x, or stops."""
        while not self.finished and not self._needs_evaluation:
            _lbfgsb.setulb(
                self._CORRECTIONS, self.x, self._lower, self._upper, self._bound_kinds, self._f, self._g,
                self._FACTR, self._PGTOL, self._wa, self._iwa, self._task, self._lsave, self._isave,
                self._dsave, self._MAX_LINE_SEARCH, self._ln_task,
            )
            if self._task[0] == self._FG:
                self._needs_evaluation = True
            elif self._task[0] == self._NEW_X:
                self._iterations += 1
                if self._iterations >= self._max_iterations:
                    self._task[:] = (5, 504)  # STOP: iteration limit (what minimize writes)
                elif self._evaluations > self._MAX_EVALUATIONS:
                    self._task[:] = (5, 502)  # STOP: evaluation limit
            else:
                self.finished = True

    def receive(self, loss: float, grad: np.ndarray) -> None:
        self._f = np.array(loss, dtype=np.float64)
        self._g = np.asarray(grad, dtype=np.float64).copy()
        self._evaluations += 1
        self._needs_evaluation = False


def _fixed_start(data: types.ModelData) -> dict[str, np.ndarray]:
    """GP-UCB-PE's hand-picked initial hyperparameters."""
    return {
        "signal_variance": np.asarray(0.039),
        "observation_noise_variance": np.asarray(0.0039),
        "continuous_length_scale_squared": np.ones(data.features.continuous.shape[-1]),
        "categorical_length_scale_squared": np.ones(data.features.categorical.shape[-1]),
    }


def _flatten(params: Mapping[str, Any], layout: tuple[tuple[str, tuple[int, ...]], ...]) -> np.ndarray:
    return np.concatenate(
        [np.broadcast_to(np.asarray(params[name], dtype=np.float64), shape).ravel() for name, shape in layout]
    )


def _unflatten(flat: Any, layout: tuple[tuple[str, tuple[int, ...]], ...]) -> dict[str, Any]:
    """Works on NumPy arrays (host) and JAX arrays (inside jit) alike."""
    params, offset = {}, 0
    for name, shape in layout:
        size = math.prod(shape)
        params[name] = flat[offset : offset + size].reshape(shape)
        offset += size
    return params


def _batched_loss_and_grad(
    starts: jax.Array, metric_data: tuple[types.ModelData, ...], per_metric: sp.ModelCoroutine, layout: tuple
) -> tuple[jax.Array, jax.Array]:
    """Per-start negative log marginal likelihood (+ Vizier's priors) and its gradient.

    Vizier's multi-metric GP shares one kernel across metrics (INDEPENDENT), so its
    likelihood is the sum of per-metric ones; summing masked single-metric likelihoods
    keeps padding usable where Vizier's multi-task log_prob cannot mask padded rows.
    """

    def loss(flat_params: jax.Array) -> jax.Array:
        params = _unflatten(flat_params, layout)
        total, prior = 0.0, 0.0
        for data in metric_data:
            value, aux = sp.CoroutineWithData(per_metric, data).loss_with_aux(params)
            prior = jax.tree_util.tree_reduce(jnp.add, aux["losses"])
            total = total + value - prior
        return total + prior

    return jax.vmap(jax.value_and_grad(loss))(starts)
