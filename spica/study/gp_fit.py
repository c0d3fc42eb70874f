"""Fitting Vizier's GP hyperparameters (ARD) quickly, the way GP-UCB-PE does it.

Same model, priors, fixed start and random restarts as Vizier's GP-UCB-PE; what changes
is the mechanics: restarts run as independent SciPy L-BFGS-B fits in log coordinates, stepping
in lockstep over one jitted, vmapped loss-and-gradient (one thread, no per-run overhead), and
host-side work stays in NumPy (every eager JAX op costs a trace and a compile per process).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Mapping

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import threadpoolctl  # noqa: E402
from vizier.jax import models  # noqa: E402

from spica.study import exported  # noqa: E402
from spica.study.vizier_internals import stochastic_process_model as sp  # noqa: E402
from spica.study.vizier_internals import types  # noqa: E402

try:
    import greenlet
except ImportError:  # a platform without its wheel: the restarts run one after another
    greenlet = None


def pad_rows(array: np.ndarray, rows: int, fill: float, columns: int | None = None) -> types.PaddedArray:
    """Pads rows (and to `columns` columns) in NumPy (an eager jnp.pad compiles per shape) with
    a finite fill: a NaN fill leaks NaN into gradients through the masked entries. Vizier's GP
    masks padded feature columns itself (its kernel drops the dimensions past the original shape)."""
    array = np.asarray(array)
    padded = np.full((rows, array.shape[1] if columns is None else columns), fill, dtype=array.dtype)
    padded[: len(array), : array.shape[1]] = array
    mask = np.zeros(padded.shape, dtype=bool)
    mask[: len(array), : array.shape[1]] = True
    fields = {"padded_array": padded, "fill_value": np.asarray(fill, dtype=array.dtype),
              "_original_shape": np.asarray(array.shape), "_mask": mask, "_nopadding_done": False}
    # Its fields stay NumPy arrays: the class's converters would copy each to the device first
    # (about 1 ms per array, 11 ms of each model-based ask), and the exported functions take NumPy.
    result = object.__new__(types.PaddedArray)
    for name, value in fields.items():
        object.__setattr__(result, name, value)
    return result


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
    coroutine = models.VizierGaussianProcess.build_model(data).coroutine
    per_metric = models.VizierGaussianProcess(
        _dim=types.ContinuousAndCategorical(data.features.continuous.shape[-1], data.features.categorical.shape[-1]),
        _num_metrics=1,
    )
    labels = _unpadded(data.labels)
    rows = data.labels.shape[0]
    metric_data = tuple(
        types.ModelData(data.features, pad_rows(labels[:, i : i + 1], rows, 0.0)) for i in range(labels.shape[1])
    )
    fixed = _fixed_start(data)
    layout = tuple((name, np.shape(value)) for name, value in sorted(fixed.items()))
    lower, upper = (_flatten(bound, layout) for bound in _bounds(per_metric))

    static = (("per_metric", per_metric), ("layout", layout))
    free = _free_entries(data, layout)
    padded = np.full(lower.size, _PADDED_LENGTH_SCALE)

    def losses_and_grads(log_points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = np.exp(log_points)
        full = np.tile(padded, (len(points), 1))
        full[:, free] = points
        losses, grads = exported.call(_batched_loss_and_grad, (full, metric_data), static)
        finite = np.isfinite(np.asarray(losses))
        # d loss / d log(x) = x * d loss / dx
        return np.where(finite, losses, 1e10), np.where(finite[:, None], np.asarray(grads)[:, free] * points, 0.0)

    log_lower, log_upper = np.log(lower[free]), np.log(upper[free])
    # Vizier's initialisers draw every GP hyperparameter log-uniformly within its bounds.
    random_starts = rng.uniform(log_lower, log_upper, size=(restarts, log_lower.size))
    initial = np.vstack([np.log(np.clip(_flatten(fixed, layout)[free], lower[free], upper[free]))[None], random_starts])
    solutions = lockstep_lbfgsb(losses_and_grads, initial, log_lower, log_upper, max_iterations)
    best = padded.copy()
    best[free] = np.exp(solutions[int(np.argmin(losses_and_grads(solutions)[0]))])
    return sp.StochasticProcessWithCoroutine(coroutine, _unflatten(best, layout))


_PADDED_LENGTH_SCALE = 0.5
"""Where Vizier's length-scale prior is centred (0.01 log(x / 0.5)², zero there)."""


def _free_entries(data: types.ModelData, layout: tuple[tuple[str, tuple[int, ...]], ...]) -> np.ndarray:
    """Which hyperparameters the fit moves: all but the length scales of padded feature columns
    (fast_designer pads them so that branches share functions). Vizier's kernel masks those
    columns, so only their prior sees them; held at its centre, they add nothing to the loss or
    its gradient, and the fit (random starts included) is the unpadded one. The real widths are
    the PaddedArrays' original shapes (their `is_missing` is an eager JAX op)."""
    widths = {
        "continuous_length_scale_squared": int(np.asarray(data.features.continuous._original_shape)[1]),
        "categorical_length_scale_squared": int(np.asarray(data.features.categorical._original_shape)[1]),
    }
    return np.concatenate([np.arange(math.prod(shape)) < widths.get(name, math.prod(shape)) for name, shape in layout])


def _unpadded(array: types.PaddedArray) -> np.ndarray:
    """The original entries, sliced in NumPy (`unpad` is an eager JAX op: a compile per process)."""
    return np.asarray(array.padded_array)[tuple(slice(0, int(n)) for n in np.asarray(array._original_shape))]


def _bounds(per_metric: models.ModelCoroutine) -> tuple[dict[str, Any], dict[str, Any]]:
    """Vizier's (lower, upper) hyperparameter bounds (running the coroutine is slow: cached)."""
    lower, upper = exported.call(_constraint_bounds, (), (("per_metric", per_metric),))
    return {name: np.asarray(value) for name, value in lower.items()}, {name: np.asarray(value) for name, value in upper.items()}


def _constraint_bounds(per_metric: models.ModelCoroutine) -> tuple[dict[str, Any], dict[str, Any]]:
    return models.get_constraints(models.StochasticProcessModel(per_metric)).bounds


def lockstep_lbfgsb(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    starts: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    iterations: int,
) -> np.ndarray:
    """One independent `scipy.optimize.minimize` L-BFGS-B run per start (default options but
    `maxiter`), stepping in lockstep so that every round of their evaluations is one batched call.

    Each run is a greenlet: its objective hands the point to this function and sleeps until the
    batch holding it is evaluated, so a run takes exactly the steps it would alone
    (tests/study/test_gp_fit.py checks this) and the whole fit costs about its longest run.
    Finished runs keep their row at their last point, so the batch shape, and thus the jitted
    function, never changes. Without greenlet the runs go one after another, one row at a time.
    """
    starts = np.array(starts, dtype=np.float64)
    bounds = list(zip(lower, upper))
    with _blas_pools().limit(limits=1, user_api="blas"):  # threaded BLAS on tiny vectors: 5x slower
        if greenlet is None:
            return np.array([_minimize(start, bounds, iterations, _first_row(losses_and_grads)) for start in starts])
        return _interleaved(losses_and_grads, starts, bounds, iterations)


@functools.cache
def _blas_pools() -> threadpoolctl.ThreadpoolController:
    """The process's thread pools, found once (a search of the loaded libraries: 4 ms per fit)."""
    return threadpoolctl.ThreadpoolController()


def _minimize(
    start: np.ndarray, bounds: list, iterations: int, loss_and_grad: Callable[[np.ndarray], tuple[float, np.ndarray]]
) -> np.ndarray:
    options = {"maxiter": iterations}
    return scipy.optimize.minimize(loss_and_grad, start, jac=True, method="L-BFGS-B", bounds=bounds, options=options).x


def _first_row(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    def loss_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        losses, grads = losses_and_grads(x[None])
        return float(losses[0]), np.asarray(grads[0], dtype=np.float64)

    return loss_and_grad


def _interleaved(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    starts: np.ndarray,
    bounds: list,
    iterations: int,
) -> np.ndarray:
    """Runs every start's minimize in its own greenlet; each switch back here is either a
    point to evaluate (the run is alive) or the run's solution (it is dead)."""
    hub = greenlet.getcurrent()

    def run(start: np.ndarray) -> np.ndarray:
        return _minimize(start, bounds, iterations, lambda x: hub.switch(np.array(x, dtype=np.float64)))

    runs = [greenlet.greenlet(run) for _ in starts]
    points = starts.copy()
    try:
        answers = [g.switch(start) for g, start in zip(runs, starts)]
        while not all(g.dead for g in runs):
            points[:] = answers
            losses, grads = losses_and_grads(points)
            for index, g in enumerate(runs):
                if not g.dead:
                    answers[index] = g.switch((float(losses[index]), np.asarray(grads[index], dtype=np.float64)))
        return np.array(answers)
    finally:
        for g in runs:  # after an error: end the suspended runs here, not whenever they are collected
            if not g.dead:
                g.throw()


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
    starts: jax.Array, metric_data: tuple[types.ModelData, ...], per_metric: models.ModelCoroutine, layout: tuple
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
