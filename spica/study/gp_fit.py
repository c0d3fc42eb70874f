"""Fitting Vizier's GP hyperparameters (ARD) quickly, the way GP-UCB-PE does it.

Same model, priors, fixed start and random restarts as Vizier's GP-UCB-PE; what changes
is the mechanics: restarts run as independent SciPy L-BFGS-B fits stepping in lockstep over
one jitted, vmapped loss-and-gradient, and host-side work stays in NumPy (every eager JAX
op costs a trace and a compile per process).
"""

from __future__ import annotations

import functools
import math
import threading
from typing import Any, Callable, Mapping

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402
import threadpoolctl  # noqa: E402
from vizier._src.jax import stochastic_process_model as sp  # noqa: E402
from vizier._src.jax import types  # noqa: E402
from vizier._src.jax.models import tuned_gp_models  # noqa: E402


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

    def losses_and_grads(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        losses, grads = _batched_loss_and_grad(points, metric_data, per_metric, layout)
        finite = np.isfinite(np.asarray(losses))
        return np.where(finite, losses, 1e10), np.where(finite[:, None], np.asarray(grads), 0.0)

    # Vizier's initialisers draw every GP hyperparameter log-uniformly within its bounds.
    random_starts = np.exp(rng.uniform(np.log(lower), np.log(upper), size=(restarts, lower.size)))
    initial = np.vstack([np.clip(_flatten(fixed, layout), lower, upper)[None], random_starts])
    solutions = lockstep_lbfgsb(losses_and_grads, initial, lower, upper, max_iterations)
    best = solutions[int(np.argmin(losses_and_grads(solutions)[0]))]
    return sp.StochasticProcessWithCoroutine(coroutine, _unflatten(best, layout))


@functools.lru_cache(maxsize=None)
def _bounds(per_metric: sp.ModelCoroutine) -> tuple[dict[str, Any], dict[str, Any]]:
    """Vizier's (lower, upper) hyperparameter bounds; running the coroutine is slow, so cached."""
    return sp.get_constraints(sp.StochasticProcessModel(per_metric)).bounds


def lockstep_lbfgsb(
    losses_and_grads: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    starts: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    iterations: int,
) -> np.ndarray:
    """One independent SciPy L-BFGS-B run per start, each in its own thread, stepping in
    lockstep so that every round of their evaluations is a single batched call.

    Same result as running them one after another (each run sees only its own function),
    at about the cost of the longest run. Finished runs keep their row at the last point
    so the batch shape, and thus the jitted function, never changes.
    """
    count = len(starts)
    condition = threading.Condition()
    latest = starts.copy()
    waiting: set[int] = set()
    answers: dict[int, tuple[float, np.ndarray]] = {}
    running = set(range(count))
    failures: list[BaseException] = []  # a failed batch must wake every waiting run, not hang it

    def evaluate_batch() -> None:  # caller holds the condition
        try:
            losses, grads = losses_and_grads(latest)
            answers.update({i: (float(losses[i]), grads[i]) for i in waiting})
        except BaseException as error:  # noqa: BLE001 - re-raised by every run and the caller
            failures.append(error)
        waiting.clear()
        condition.notify_all()

    def evaluate(index: int, point: np.ndarray) -> tuple[float, np.ndarray]:
        with condition:
            latest[index] = point
            waiting.add(index)
            if waiting == running:
                evaluate_batch()
            condition.wait_for(lambda: index in answers or bool(failures))
            if failures:
                raise failures[0]
            return answers.pop(index)

    def run(index: int) -> None:
        try:
            result = scipy.optimize.minimize(
                functools.partial(evaluate, index),
                starts[index],
                jac=True,
                method="L-BFGS-B",
                bounds=list(zip(lower, upper)),
                options={"maxiter": iterations},
            )
            latest[index] = result.x
        except BaseException as error:  # noqa: BLE001 - re-raised by the caller
            with condition:
                failures.append(error)
                condition.notify_all()
        finally:
            with condition:
                running.discard(index)
                if waiting and waiting == running and not failures:
                    evaluate_batch()

    with threadpoolctl.threadpool_limits(1, user_api="blas"):  # threaded BLAS on tiny vectors: 5x slower
        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    return latest


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


@functools.partial(jax.jit, static_argnames=("per_metric", "layout"))
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
