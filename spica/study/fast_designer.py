"""Spica's "fast" Vizier designer: GP-UCB-PE, with its acquisition scored over a finite set.

Vizier's default designer (GP-UCB-PE) spends its 5-18 s per suggestion on this machine in
three places: an Eagle-strategy search of 75 000 acquisition evaluations per suggested
point, an L-BFGS over the GP hyperparameters driven step by step from Python, and
re-tracing JAX functions whose shapes change with every new trial. This designer keeps
Vizier's GP (model, priors, label warping, UCB and PE acquisitions, the UCB/PE switching
rule) and changes how they are run:
- the acquisition is evaluated in one call over a candidate set: the caller's finite pool
  (Spica's projected configurations), else a fresh uniform sample of the space; with
  every candidate scored exactly there is no need for GP-UCB-PE's trust region (a guard
  for its continuous optimizer), which in small budgets kept it near the first points;
- the hyperparameter restarts run as independent SciPy L-BFGS-B fits in log coordinates,
  stepping in lockstep over one jitted, vmapped loss-and-gradient (gp_fit.py);
- trial arrays are padded to a few sizes, rows and feature columns, and the pool is scored in
  blocks of one size, so each JAX function is traced once per size, and once per machine, not
  per process (spica.study.exported keeps the traces on disk), and a search's branches mostly
  share them;
- until the first result arrives (and for `warmup_trials`) points are quasi-random;
- an objective known before any replay (min_gpus: `ordered_by` in the problem's metadata) is
  searched for feasibility instead, over the pool (spica/study/feasibility.py), until no
  candidate left can beat the best feasible one;
- `warm_up` loads (the first time on a machine: traces) them in a background thread from the
  moment the study opens, while the other studies open and the first rounds replay.
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Callable, Hashable, Sequence

from spica.study.jax_setup import configure_jax

configure_jax()  # before Vizier/JAX create any array: its GP code needs float64

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from vizier import algorithms as vza  # noqa: E402
from vizier import pyvizier as vz  # noqa: E402

from spica.study.points import (  # noqa: E402
    PointSet,
    Features,
    feature_converter,
    features_of,
    quasi_random_suggestions,
    used_keys,
)
from spica.study import exported, feasibility  # noqa: E402
from spica.study.base import AskPlan  # noqa: E402
from spica.study.gp_fit import fit_gp, pad_rows  # noqa: E402
from spica.study.vizier_internals import gp_ucb_pe, output_warpers, types  # noqa: E402
from spica.study.vizier_internals import stochastic_process_model as sp  # noqa: E402
from spica.study.vizier_space import ORDERED_BY  # noqa: E402

log = logging.getLogger(__name__)

_UCB_PE = gp_ucb_pe.UCBPEConfig()
_CHUNK = 64
"""Pool points per step of a UCB score. Each point is scored on its own (vmapped): Vizier's
multi-metric predictive would otherwise build the joint covariance of a step's points, quadratic in
their number. PE scores a whole block vmapped at once, UCB in steps: its thousand scalarizations per
point would otherwise be held for the whole block at once. Timed on the asks of
benchmarks/peer/s3.yaml, a block of 1,024 points: PE 2.5-4.5 ms where 64-point joint steps took
6.3-14 ms, UCB 4.5-6.5 ms where they took 4.8-7.8 ms; the scores agree to 1e-14 and its fronts are
identical (docs/search.md, "Why step 5 runs this way")."""
_BLOCK = 16  # chunks scored per call: the acquisition's shape does not depend on the pool's size


@dataclass(frozen=True)
class FastSettings:
    """Knobs of the fast designer (bench_optimizer.py's figures use these defaults)."""

    warmup_trials: int = 2
    ard_restarts: int = 8  # Vizier's default is 4; log-coordinate fits make 8 cheaper than its 4
    ard_max_iterations: int = 500
    sampled_candidates: int = 2048
    min_padded_trials: int = 16
    min_padded_continuous: int = 8  # benchmarks/peer/s1.yaml's agg (4) and disagg (7) branches share GP functions
    min_padded_categorical: int = 2


class FastDesigner(vza.Designer):
    """Quasi-random warm-up, then batches picked by GP-UCB-PE over the candidate set.

    Built afresh for each suggest call (as Vizier's DesignerPolicy does); `salt` (the
    study's trial count) makes each call's randomness distinct yet reproducible.
    """

    def __init__(
        self,
        problem: vz.ProblemStatement,
        candidates: PointSet | None,
        *,
        seed: int,
        salt: int,
        settings: FastSettings = FastSettings(),
    ) -> None:
        self._problem = problem
        self._candidates = candidates
        self._settings = settings
        self._seed = seed
        self._names = tuple(pc.name for pc in problem.search_space.parameters)
        self._converter = feature_converter(problem)
        self._rng = np.random.default_rng([seed, salt])
        self._completed: list[vz.Trial] = []
        self._active: list[vz.Trial] = []

    def update(self, completed: vza.CompletedTrials, all_active: vza.ActiveTrials) -> None:
        self._completed.extend(completed.trials)
        self._active = list(all_active.trials)

    def suggest(self, count: int | None = None) -> Sequence[vz.TrialSuggestion]:
        count = count or 1
        chosen = self._feasibility_picks(count)
        if chosen:  # possibly fewer than asked: the study asks again, and then they are active
            return chosen
        seen = len(self._completed) + len(self._active)
        if not self._completed or seen < self._settings.warmup_trials:
            used = used_keys(self._completed + self._active, self._names)
            return quasi_random_suggestions(self._problem, self._candidates, used, count, seed=self._seed, offset=seen)
        return self._model_based(count)

    def _feasibility_picks(self, count: int) -> list[vz.TrialSuggestion]:
        """The cheapest likely feasible candidates when the objective is known before replay
        (none otherwise, or once no candidate left can beat the best feasible one)."""
        ordered_by = self._problem.metadata.ns("spica").get(ORDERED_BY)
        if ordered_by is None or self._candidates is None:
            return []
        pool = self._candidates
        outcomes: dict[int, bool | None] = dict(zip(pool.rows_of(self._completed), (not t.infeasible for t in self._completed)))
        outcomes |= dict.fromkeys(pool.rows_of(self._active))
        outcomes.pop(None, None)
        at = pool.names.index(ordered_by)
        costs = np.array([key[at] for key in pool.keys], dtype=float)
        groups = [key[:at] + key[at + 1 :] for key in pool.keys]
        sense = 1.0 if self._problem.metric_information.item().goal.is_minimize else -1.0
        picks = feasibility.feasible_picks(
            sense * costs, groups, pool.features.continuous, pool.features.categorical, outcomes, count
        )
        return [vz.TrialSuggestion(pool.parameters_at(row)) for row in picks]

    def _model_based(self, count: int) -> list[vz.TrialSuggestion]:
        completed = self._features_of(self._completed)
        labels = self._warped_labels()
        data = types.ModelData(self._padded(completed, self._rows(len(completed))), pad_rows(labels, self._rows(len(labels)), 0.0))
        model = fit_gp(
            data, self._rng, restarts=self._settings.ard_restarts, max_iterations=self._settings.ard_max_iterations
        )
        signal = float(model.params["signal_variance"])
        noise = max(float(model.params["observation_noise_variance"]), 1e-12)
        noise_is_high = signal / noise < float(_UCB_PE.signal_to_noise_threshold)

        pool, available = self._pool()
        pool_blocks = _blocks(pool, self._columns(pool))
        evaluating = completed.stack(self._features_of(self._active))
        picks: list[int] = []
        for position in range(count):
            if not available.any():
                break
            seen = evaluating.stack(pool.take(picks))
            dummy_labels = np.zeros((len(seen) - len(labels), labels.shape[1]))
            all_data = types.ModelData(
                self._padded(seen, self._rows(len(seen))), pad_rows(np.vstack([labels, dummy_labels]), self._rows(len(seen)), 0.0)
            )
            use_ucb = np.asarray(self._use_ucb(position, noise_is_high))
            key, noise = self._next_key(), np.asarray(noise_is_high)
            scores = np.concatenate(
                [np.asarray(exported.call(_acquisition_scores, (model, data, all_data, block, key, use_ucb, noise))) for block in pool_blocks]
            )
            index = int(np.argmax(np.where(available, scores[: len(pool)], -np.inf)))
            available[index] = False
            picks.append(index)
        return [vz.TrialSuggestion(p) for p in self._parameters_of(pool, picks)]

    def _features_of(self, trials: Sequence[vz.Trial]) -> Features:
        if self._candidates is not None:
            return self._candidates.features_of(self._converter, trials)
        return features_of(self._converter, trials)

    def _next_key(self) -> np.ndarray:
        """A raw JAX PRNG key made on the host (jax.random.PRNGKey would be an eager op)."""
        return np.array([0, self._rng.integers(2**32)], dtype=np.uint32)

    def _use_ucb(self, position: int, noise_is_high: bool) -> bool:
        """Vizier GP-UCB-PE's rule: UCB right after new results, else pure exploration,
        each overridden with a small probability."""
        if position == 0 and _has_new_results(self._completed, self._active):
            pe_probability = (
                _UCB_PE.pe_overwrite_probability_in_high_noise if noise_is_high else _UCB_PE.pe_overwrite_probability
            )
            return not self._rng.random() < float(pe_probability)
        return bool(self._rng.random() < float(_UCB_PE.ucb_overwrite_probability))

    def _pool(self) -> tuple[Features, np.ndarray]:
        """The points to score, and which of them may be picked."""
        if self._candidates is not None:
            used = used_keys(self._completed + self._active, self._names)
            return self._candidates.features, self._candidates.unused_mask(used)
        sampled = self._sampled_pool()
        return sampled, np.ones(len(sampled), dtype=bool)

    def _sampled_pool(self) -> Features:
        """Uniform points in the GP's feature space (continuous in [0, 1], category indices)."""
        n = self._settings.sampled_candidates
        specs = self._converter.output_specs
        categorical = [self._rng.integers(s.bounds[0], s.bounds[1] + 1 - s.num_oovs, n) for s in specs.categorical]
        return Features(
            self._rng.random((n, len(specs.continuous))),
            np.stack(categorical, axis=1).astype(types.INT_DTYPE) if categorical else np.zeros((n, 0), types.INT_DTYPE),
        )

    def _parameters_of(self, pool: Features, picks: list[int]) -> list[vz.ParameterDict]:
        if self._candidates is not None:
            return [self._candidates.parameters_at(i) for i in picks]
        chosen = pool.take(picks)
        return list(self._converter.to_parameters(types.ContinuousAndCategoricalArray(chosen.continuous, chosen.categorical)))

    def _warped_labels(self) -> np.ndarray:
        """Vizier's default output warping per metric; infeasible trials (NaN) map to low values."""
        labels = self._converter.to_labels(self._completed)
        with np.errstate(invalid="ignore", divide="ignore"):  # the warper divides by 0 on < 3 distinct values
            return np.hstack(
                [output_warpers.create_default_warper().warp(labels[:, i : i + 1]) for i in range(labels.shape[1])]
            )

    def _rows(self, n: int) -> int:
        return _padded_rows(n, self._settings)

    def _columns(self, features: Features) -> tuple[int, int]:
        """Continuous and categorical feature columns, each padded to a power of two: branches of
        a search whose knobs fit the same widths use (and load) the same GP functions. Vizier's
        kernel masks the padded columns, so the model is the same."""
        return _padded_widths(features.continuous.shape[1], features.categorical.shape[1], self._settings)

    def _padded(self, features: Features, rows: int) -> types.ModelInput:
        continuous, categorical = self._columns(features)
        return types.ModelInput(
            pad_rows(features.continuous, rows, 0.0, continuous), pad_rows(features.categorical, rows, 0, categorical)
        )


def warm_up(
    problem: vz.ProblemStatement,
    candidates: PointSet | None,
    *,
    asks: AskPlan,
    seed: int,
    settings: FastSettings = FastSettings(),
) -> Future | None:
    """Queues the tracing of the designer's JAX functions for every array size that the planned
    `asks` will use, on made-up results; each ask after the first is made with up to
    `asks.pending` earlier suggestions still untold (active).

    JAX traces each jitted function once per process and shape (seconds here); done while
    the first rounds replay, the model-based rounds find them ready. The made-up study shares
    nothing with the real one (own designer, own randomness), so results are unchanged.
    None when no round will be model-based.
    """
    sizes: dict[tuple[int, ...], tuple[int, int, int]] = {}  # by array shapes: completed, active, batch
    asked = 0
    for batch in asks.sizes:
        active = min(asks.pending, asked)
        completed = asked - active
        if completed and asked >= settings.warmup_trials:
            shape = (_padded_rows(completed, settings), *(_padded_rows(n, settings) for n in range(asked, asked + batch)))
            sizes.setdefault(shape, (completed, active, batch))
        asked += batch
    if not sizes:
        return None
    specs = feature_converter(problem).output_specs
    columns = _padded_widths(len(specs.continuous), len(specs.categorical), settings)
    signature = (columns, len(problem.metric_information), tuple(sizes), settings)
    if signature in _WARMED:  # an earlier study's warm-up loaded the same functions
        return None
    _WARMED.add(signature)

    loading = replace(settings, ard_max_iterations=1)  # each function called once is enough: fitting made-up results is not
    # so is scoring one block of the pool, with room for the made-up trials and a batch
    most = max(completed + active + batch for completed, active, batch in sizes.values())
    block = candidates.first(max(_BLOCK * _CHUNK, most)) if candidates is not None else None

    def trace() -> None:
        try:
            for completed, active, batch in sizes.values():
                trials = _made_up_trials(problem, block, completed, active)
                designer = FastDesigner(problem, block, seed=seed, salt=2**31 + completed, settings=loading)
                designer.update(vza.CompletedTrials(trials[:completed]), vza.ActiveTrials(trials[completed:]))
                designer.suggest(batch)
        except Exception:  # noqa: BLE001 - only a speed-up: the real ask traces and reports errors itself
            log.debug("designer warm-up failed", exc_info=True)
        finally:
            exported.collection_pause.leave()

    exported.collection_pause.enter()
    return _WARM_UPS.submit(trace)


_WARMED: set[Hashable] = set()
"""What this process's warm-ups have loaded: feature columns, metrics, row sizes and settings
(the pool is scored in blocks of one shape): a search's later branches mostly need nothing more."""

_WARM_UPS = ThreadPoolExecutor(1, thread_name_prefix="spica-designer-warm-up")
"""One warm-up at a time, in the order the studies opened: the first study's first model-based
ask waits for its own warm-up only, not for one sharing the cores with the next study's."""


def wait_for_warm_ups() -> None:
    """Returns once every warm-up queued so far has ended (they run one at a time, in order)."""
    _WARM_UPS.submit(lambda: None).result()




def _made_up_trials(problem: vz.ProblemStatement, candidates: PointSet | None, completed: int, active: int) -> list[vz.Trial]:
    """`completed` trials with random results, then `active` ones without."""
    rng = np.random.default_rng(0)
    points = quasi_random_suggestions(problem, candidates, set(), completed + active, seed=0, offset=0)
    trials = []
    for number, point in enumerate(points, 1):
        trial = vz.Trial(parameters=point.parameters, id=number)
        if number <= completed:
            trial.complete(vz.Measurement(metrics={m.name: float(rng.normal()) for m in problem.metric_information}))
        trials.append(trial)
    return trials


def _padded_rows(n: int, settings: FastSettings) -> int:
    """Padded row count: strictly above n so arrays are always 'padded'; a power of two or one and
    a half times one, so that the GP's cost (cubic in the rows) is at most 3.4x the unpadded one's
    where powers of two alone cost up to 8x (fitting 20 trials: 1.4 ms per step padded to 24 rows,
    3.2 ms padded to 32), with two shapes per doubling to trace."""
    least = max(n + 1, settings.min_padded_trials)
    power = _power_of_two(least, 1)
    return power * 3 // 4 if power * 3 // 4 >= least else power


def _has_new_results(completed: Sequence[vz.Trial], active: Sequence[vz.Trial]) -> bool:
    if not active:
        return bool(completed)
    return max(t.completion_time for t in completed) > max(t.creation_time for t in active)


def _padded_widths(continuous: int, categorical: int, settings: FastSettings) -> tuple[int, int]:
    """Feature columns as the GP functions see them (`FastDesigner._columns`)."""
    return (
        _power_of_two(continuous, settings.min_padded_continuous),
        _power_of_two(categorical, settings.min_padded_categorical),
    )


def _power_of_two(n: int, least: int) -> int:
    """The smallest power of two at least n, and at least `least`."""
    return max(least, 2 ** math.ceil(math.log2(max(n, 1))))


def _blocks(features: Features, columns: tuple[int, int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pool features as blocks of [_BLOCK, _CHUNK, columns] (zero rows pad the last block, zero
    columns the features as in `FastDesigner._columns`). Each point is scored on its own, so
    the scores are the same however the pool is cut; at one block shape, every branch and
    every pool size use (and load) one acquisition function."""
    size = _BLOCK * _CHUNK
    blocks = max(1, -(-len(features) // size))

    def reshape(array: np.ndarray, width: int) -> np.ndarray:
        padded = np.zeros((blocks * size, width), dtype=array.dtype)
        padded[: len(array), : array.shape[1]] = array
        return padded.reshape(blocks, _BLOCK, _CHUNK, width)

    continuous, categorical = reshape(features.continuous, columns[0]), reshape(features.categorical, columns[1])
    return list(zip(continuous, categorical))


def _acquisition_scores(
    model: sp.StochasticProcessWithCoroutine,
    data: types.ModelData,
    all_data: types.ModelData,
    pool: tuple[jax.Array, jax.Array],
    rng: jax.Array,
    use_ucb: jax.Array,
    noise_is_high: jax.Array,
) -> jax.Array:
    """Vizier's UCB or PE score of every point of a block of the pool (flattened chunks), in one traced call.

    `data`: completed trials; `all_data`: completed + pending (dummy labels), which
    shrinks the explored uncertainty around points already being evaluated. Every point is
    scored on its own (see _CHUNK).
    """
    predictive = sp.UniformEnsemblePredictive(model.precompute_predictive(data))
    explore_params = dict(model.params)
    explore_params["observation_noise_variance"] = jnp.where(
        noise_is_high, 1e-10, model.params["observation_noise_variance"]
    )
    explore_model = sp.StochasticProcessWithCoroutine(model.coroutine, explore_params)
    predictive_all = sp.UniformEnsemblePredictive(explore_model.precompute_predictive(all_data))
    ucb = gp_ucb_pe.UCBScoreFunction(
        predictive,
        predictive_all,
        ucb_coefficient=_UCB_PE.ucb_coefficient,
        trust_region=None,
        scalarization_weights_rng=rng,
        labels=data.labels,
    )
    pe = gp_ucb_pe.PEScoreFunction(
        predictive,
        predictive_all,
        ucb_coefficient=_UCB_PE.ucb_coefficient,
        explore_ucb_coefficient=_UCB_PE.explore_region_ucb_coefficient,
        penalty_coefficient=_UCB_PE.cb_violation_penalty_coefficient,
        trust_region=None,
        multimetric_promising_region_penalty_type=_UCB_PE.multimetric_promising_region_penalty_type,
    )

    points = tuple(part[:, :, None, :] for part in pool)  # [chunk, point, 1, width]: each point an input of its own

    def scores(function: gp_ucb_pe.UCBScoreFunction | gp_ucb_pe.PEScoreFunction, over_chunks: Callable) -> jax.Array:
        def score(point: tuple[jax.Array, jax.Array]) -> jax.Array:
            return function.score(types.ModelInput(types.PaddedArray.as_padded(point[0]), types.PaddedArray.as_padded(point[1])))

        return over_chunks(jax.vmap(score), points).reshape(-1)

    # UCB chunk by chunk, PE the whole block at once (see _CHUNK); only the one asked for runs
    return jax.lax.cond(use_ucb, lambda: scores(ucb, jax.lax.map), lambda: scores(pe, lambda f, xs: jax.vmap(f)(xs)))
