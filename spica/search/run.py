"""run_smart_search: the steps of docs/search.md, from validation to the merged, ranked result.

validate and compile (the planner policies the goal can use are kept then) → load-predictor
sub-sweep → enumerate branches →
per-branch studies (spica/study/algorithms.py), each asking its rounds one ahead on one shared pool (rounds.py) →
merge → results folder.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from spica.config import ConfigError, SmartSearchConfig
from spica.config.deploy import DeploySettings
from spica.config.workload import Workload
from spica.core.candidate import Candidate
from spica.core.console import tell
from spica.core.errors import UserError
from spica.evaluation import clock, score
from spica.evaluation.calibration import Calibration, for_search, load_calibration
from spica.plan import Plan, compile_plan
from spica.planner.policies import is_static
from spica.planner.predictors import cached_predictor_sub_sweep
from spica.results import writer as results_writer
from spica.results.ledger import AskJournal, Journal
from spica.results.outcome import SearchResults
from spica.search import prefill_capacity
from spica.search.branches import branches_for, searched_branch
from spica.search.dimensions import KV_ROUTER_KNOBS, OFFLOAD_ROUTER_KNOBS, Knob, branch_knobs, knob_grid, knob_params, knob_values, workload_params
from spica.search.pool import EvaluationPool, ProcessPool, local_pool
from spica.search.progress import Progress
from spica.search.rounds import BranchSearch, RoundLoop
from spica.search.schedule import ask_sizes, most_pending
from spica.search.spread import measure_spread
from spica.search.unroll import LOAD_ROLE, in_flight
from spica.space import projection
from spica.space.branches import Branch, ParallelConfig
from spica.space.enumeration import scored_version
from spica.study.algorithms import ALGORITHMS, StudyRequest
from spica.study.base import AskPlan, AskRecord, Objective, Study
from spica.study.params import Param

log = logging.getLogger("spica.search")

GRID_LIMIT = 20000
KV_LOAD_LEVELS = 5
"""Points of a ranged KV-load ratio in the study's grid, evenly spaced from its low end to its
high end (nine measured worse: docs/search.md, "Why step 5 runs this way")."""
POOL_SAMPLE = 8192
"""Points of a grid too large to list that a model-based study scores. S3 (benchmarks/peer/s3.yaml)
over 10 seeds, front hypervolume against `aisimulate recommend`'s, re-scored (benchmarks/peer/):
0.90 when the study scored 2,048 points of its feature space (each projected onto a config), 0.91
with 2,048 grid points, 0.93 with 8,192, 0.93 with 20,000."""


def _as_plan(config: SmartSearchConfig | Plan | Mapping[str, Any], calibration: str | Path | None = None) -> Plan:
    if isinstance(config, Plan):
        if calibration is not None:
            raise ValueError("a compiled plan carries its own calibration; compile it with the calibration instead")
        return config
    if not isinstance(config, SmartSearchConfig):
        config = SmartSearchConfig.from_mapping(config)
    return compile_plan(config, plan_calibration(calibration, config) if calibration is not None else None)


def plan_calibration(path: str | Path, config: SmartSearchConfig, where: str = "evaluation.calibration") -> dict[str, Any]:
    """The calibration file at `path`, checked against the search (spica/evaluation/calibration.py):
    the factors of every (system, backend) the search may choose; a ConfigError line when refused."""
    space = config.search_space
    if config.sweep.timing != "table":
        raise ConfigError([f"{where}: a calibration scales the cached timing table; it needs sweep.timing table, not {config.sweep.timing}"])
    if space.aic_nextn:
        raise ConfigError([f"{where}: speculative decoding (aic_nextn) is timed by AIS directly, which a calibration cannot scale"])
    pairs = [(system, backend) for system in space.hardware_skus for backend in space.backend]
    pinned = space.backend_versions()
    try:
        versions = {(system, backend): scored_version(system, backend, pinned.get(backend)) for system, backend in pairs}
        calibration = load_calibration(path, where)
        found = for_search(calibration, space.model_name, pairs, versions, where)
    except UserError as exc:
        raise ConfigError(exc.lines) from None
    _warn_client_start(calibration, config.workload, where)
    return found


def _warn_client_start(calibration: Calibration, workload: Workload, where: str) -> None:
    """A closed loop scored with a calibration fitted on clients started otherwise is warned: the
    factors hold for the start they were fitted with (spica/calibrate/fit.py)."""
    fitted = {c.fitted_on["client_start"] for c in calibration.corrections if "client_start" in c.fitted_on}
    closed_loop = workload.trace_path is None and (workload.concurrency is not None or workload.kv_load_ratio is not None)
    if closed_loop and fitted and workload.client_start not in fitted:
        start = sorted(fitted, key=str)[0]
        log.warning("%s: %s was fitted replaying the measured clients %s; this closed loop starts them %s: set "
                    "workload.client_start=%s to score it as fitted", where, calibration.source, start or "all at once",
                    workload.client_start or "all at once", start or "null")


def _predictor_winners(plan: Plan) -> tuple[dict[int, tuple[str, dict[str, Any]]], dict[str, Any]]:
    """docs/search.md step 3, once per distinct throughput interval among the kept policies."""
    config = plan.config
    policies = config.search_space.scaling_policies()
    intervals = sorted({fields["throughput_adjustment_interval_seconds"] for _, fields in policies if fields["enable_throughput_scaling"]})
    workload = config.workload
    result = cached_predictor_sub_sweep(
        workload.trace_path,
        plan.trace_sha256,
        intervals,
        config.search_space.load_predictors(),
        arrival_speedup_ratio=workload.arrival_speedup_ratio,
        has_throughput_scaling=bool(intervals),
        trace_format=workload.trace_format,
    )
    winners = {interval: (entry.winner, dict(entry.winner_fields)) for interval, entry in result.intervals.items()}
    return winners, result.to_dict()


def _objectives(config: SmartSearchConfig) -> list[Objective]:
    """Under a goal whose value is the GPUs (min_gpus) the objective is ordered by the GPU share."""
    goal = config.goal
    ordered_by = projection.GPU_SHARE if not goal.is_pareto and goal.target.goal.gpus else None
    return [
        Objective(name, "minimize" if name in score.MINIMIZED else "maximize", ordered_by) for name in goal.objectives
    ]


def _study_for(plan: Plan, branch: Branch, knobs: list[Knob], branches: int, record: AskRecord | None) -> tuple[Study, bool, int | None]:
    """The branch's study, whether backend is a dimension, and the finite pool size (if known)."""
    config = plan.config
    has_backend = len(branch.backends) > 1
    params = study_params(config, branch, knobs)
    sweep = config.sweep
    algorithm = ALGORITHMS[sweep.algorithm]
    listed = algorithm.exhaustive or _grid_size(branch, knobs) <= GRID_LIMIT
    points = _grid_points(branch, knobs, config, params, None if listed else (POOL_SAMPLE, sweep.seed))
    request = StudyRequest(
        f"spica-{branch.name}", tuple(params), tuple(_objectives(config)), sweep.seed, plan.short_id, points,
        AskPlan(ask_sizes(sweep), most_pending(sweep, branches)), sweep.designer, record,
    )
    size = len(points or []) if algorithm.exhaustive else len(points) if points and params and listed else None
    return algorithm.build(request), has_backend, size


def open_searches(plan: Plan, branches: list[Branch], record: AskRecord | None = None) -> list[BranchSearch]:
    """Each branch's study, opened (a model-based study starts its designer's warm-up); `record`
    keeps their designers' answers for a resume."""
    config = plan.config
    searches = []
    for branch in (searched_branch(config, branch) for branch in branches):
        knobs = branch_knobs(config, branch.mode, branch.quant_knobs())
        study, has_backend, pool_size = _study_for(plan, branch, knobs, len(branches), record)
        searches.append(BranchSearch(branch, knobs, study, has_backend, pool_size))
    return searches


def study_params(config: SmartSearchConfig, branch: Branch, knobs: list[Knob]) -> list[Param]:
    """The branch study's dimensions: the pool's features (for an open loop judged by an SLA, each
    config's prefill capacity too: spica/search/prefill_capacity.py), the backend where several
    serve it, the searched knobs and a ranged KV-load ratio."""
    params = [Param(spec.name, spec.kind, spec.choices, spec.low, spec.high) for spec in projection.feature_params(branch)]
    capacities = set(prefill_capacity.prefill_capacities(config, branch).values())
    if len(capacities) > 1:
        params.append(Param(prefill_capacity.FEATURE, "double", low=min(capacities), high=max(capacities)))
    if len(branch.backends) > 1:
        params.append(Param("backend", "categorical", choices=tuple(branch.backends)))
    return params + knob_params(knobs) + workload_params(config)


def _grid_size(branch: Branch, knobs: list[Knob]) -> int:
    size = sum(len(parallel.backends) for parallel in branch.configs)
    for knob in knobs:
        size *= len(knob.values)
    return size


def _grid_points(
    branch: Branch, knobs: list[Knob], config: SmartSearchConfig, params: list[Param], sample: tuple[int, int] | None = None
) -> list[dict[str, Any]]:
    """Every (config, backend, knob combination, KV-load level) as a point in the study's
    parameter space; with `sample` (size, seed), that many of them drawn at random (a grid too
    large to list): the study then scores real configs, as it does on a listed grid, not points
    of its feature space that project onto one and are told its result at features it does not have.

    Points that replay alike are one point (a sample may so hold fewer than its size): under
    round_robin the KV router's weights are not read, so of those points the first stays; where no
    Planner scales (one that does reads max_num_seqs as an engine's capacity), max_num_seqs values
    no less than the requests the workload keeps in flight never hold one back (`in_flight`), so of
    those only the smallest stays, the one that holds the least memory in a real engine (a
    concurrency of 32 leaves 256 of the default 256, 512, 1024). S3 (benchmarks/peer/s3.yaml) over
    20 seeds: front hypervolume 1.006 of the unmerged pool's (mean; median 1.013, better on 13),
    where up to 5 of a seed's 64 replays had repeated another's result (docs/search.md, "Why step 5
    runs this way")."""
    names = {param.name for param in params}
    combos = knob_grid([knob for knob in knobs if knob.searched])
    ratio = config.workload.kv_load_ratio
    ratios = [ratio[0] + (ratio[1] - ratio[0]) * step / (KV_LOAD_LEVELS - 1) for step in range(KV_LOAD_LEVELS)] if isinstance(ratio, list) else [None]
    pairs = [(parallel, backend) for parallel in branch.configs for backend in parallel.backends]
    if prefill_capacity.FEATURE in names:
        by_config = prefill_capacity.prefill_capacities(config, branch)
        capacities = [by_config[index, backend] for index, parallel in enumerate(branch.configs) for backend in parallel.backends]
    per_pair = len(combos) * len(ratios)
    total = len(pairs) * per_pair
    if sample is None or sample[0] >= total:
        indices: Iterable[int] = range(total)
    else:
        indices = sorted(int(i) for i in np.random.default_rng(sample[1]).choice(total, sample[0], replace=False))
    shapes: dict[int, dict[str, Any]] = {}  # by pair: each config's features, read once
    seqs = [knob.name for knob in knobs if knob.searched and knob.name.endswith("_max_num_seqs")]
    weights = [knob.name for knob in knobs if knob.searched and knob.name in KV_ROUTER_KNOBS + OFFLOAD_ROUTER_KNOBS]
    static = {name for name, fields in config.search_space.scaling_policies() if is_static(fields)}
    loads: dict[tuple, tuple[int | None, ...]] = {}  # in-flight bounds at each load level, by what decides them
    values: dict[int, dict[str, Any]] = {}  # every knob's value, by combination
    quant = tuple(branch.quant_knobs())
    points: dict[tuple, dict[str, Any]] = {}  # by what the point replays: one point each
    for index in indices:
        pair, rest = divmod(index, per_pair)
        combo, level = divmod(rest, len(ratios))
        parallel, backend = pairs[pair]
        if pair not in shapes:
            shapes[pair] = {name: value for name, value in projection.features(parallel).items() if name in names}
            if prefill_capacity.FEATURE in names:
                shapes[pair][prefill_capacity.FEATURE] = capacities[pair]
        point = {**shapes[pair], **combos[combo]}
        if "backend" in names:
            point["backend"] = backend
        if ratios[level] is not None:
            point["kv_load_ratio"] = ratios[level]
        read = dict(combos[combo])  # what the replay reads of the combination
        if read.get("router_mode", "kv_router") != "kv_router":  # no KV router: its weights weigh nothing
            read.update(dict.fromkeys(weights))
        if seqs:
            if combo not in values:
                values[combo] = knob_values(knobs, combos[combo])
            if values[combo]["planner_scaling_policy"] in static:  # a scaling Planner reads max_num_seqs as capacity
                bound = _in_flight(loads, config, branch, parallel, backend, values[combo], ratios, quant)[level]
                if bound is not None:
                    read.update({name: None for name in seqs if read[name] >= bound})
        replays = (pair, level, tuple(read.items()))
        kept = points.get(replays)
        if kept is None or [point[name] for name in seqs] < [kept[name] for name in seqs]:
            points[replays] = point
    return list(points.values())


def _in_flight(
    loads: dict[tuple, tuple[int | None, ...]], config: SmartSearchConfig, branch: Branch, parallel: ParallelConfig,
    backend: str, knobs: Mapping[str, Any], ratios: list[float | None], quant: tuple[str, ...],
) -> tuple[int | None, ...]:
    """The candidate's in-flight bound at each load level (spica/search/unroll.py `in_flight`),
    read once per pool requests decode in, backend and the knobs that size it (its batch, the
    `quant` fields) or set it (concurrency); None where unknown."""
    role = LOAD_ROLE[parallel.mode]
    key = (parallel.pool(role), backend, knobs.get(f"{role}_max_num_batched_tokens"), *(knobs[name] for name in quant), knobs.get("concurrency"))
    if key not in loads:
        try:
            loads[key] = in_flight(config, branch, parallel, backend, knobs, ratios)
        except LookupError:  # told unsupported when asked: nothing to merge
            loads[key] = (None,) * len(ratios)
    return loads[key]


def run_smart_search(
    config: SmartSearchConfig | Plan | Mapping[str, Any],
    *,
    results_dir: str | Path | None = None,
    pool: EvaluationPool | None = None,
    progress: bool = False,
    write: bool = True,
    deploy: DeploySettings | None = None,
    calibration: str | Path | None = None,
) -> SearchResults:
    """Search deployments for `config`; best-first candidates (or the Pareto front) with the ledger.

    A results folder (default results/<plan fingerprint>) receives the ledger, table, plot and
    manifests (written with `deploy`, the app's `deploy:` settings; None: their defaults);
    re-running into the same folder resumes: finished replays are reused. `calibration`: a file
    written by `spica calibrate` whose factors scale every candidate's timing.
    """
    started = time.monotonic()
    plan = _as_plan(config, calibration)
    folder = Path(results_dir) if results_dir is not None else Path("results") / plan.short_id
    journal = Journal(folder, plan.fingerprint, plan.scores_fingerprint) if write else None
    if journal:
        journal.lock()
    try:
        return _search(plan, folder, journal, pool, progress, write, deploy, started)
    finally:
        if journal:
            journal.unlock()


def _search(
    plan: Plan, folder: Path, journal: Journal | None, pool: EvaluationPool | None, progress: bool, write: bool,
    deploy: DeploySettings | None, started: float,
) -> SearchResults:
    config = plan.config
    measured = _resumed(journal, config.sweep.max_eval_seconds, folder)
    sweep = config.sweep
    deadline = started + sweep.max_search_seconds if sweep.max_search_seconds is not None else None
    meter = Progress(target=config.goal.objectives, enabled=progress, deadline=deadline)
    meter.phase("enumerating deployments")
    try:
        branches = branches_for(config)  # first: a model, SKU or version it cannot price is refused before any work
    except BaseException:
        meter.close()  # the refusal's line starts on a clean one
        raise
    if "kv_router" in config.search_space.router_mode and (why := clock.unavailable()):
        tell(sys.stderr, f"spica: warning: kv_router replays will differ run to run on this machine: {why}\n")
    own_pool = pool is None
    pool = pool or local_pool(sweep.parallel_evals, sweep.per_round)  # workers start meanwhile
    writer = None
    try:
        writer = ProcessPool(1, preload=results_writer.prepare) if write else None  # it imports beside the search
        meter.phase("choosing the load predictor")
        winners, predictor_report = _predictor_winners(plan)
        # Studies live in memory for one run: a resume replays them from the journal, asking
        # the same seeded questions and getting every finished answer back without a replay,
        # and every answer their designers gave back from asks.jsonl without working it out again.
        asked = AskJournal(folder, plan.versions) if journal else None
        searches = open_searches(plan, branches, asked)
        budget = sweep.max_rounds * sweep.per_round
        exhaustive = ALGORITHMS[sweep.algorithm].exhaustive
        total = sum(search.pool_size if exhaustive else min(budget, search.pool_size or budget) for search in searches)
        meter.total = max(total, 1)
        meter.phase("asking for the first candidates")
        loop = RoundLoop(plan, searches, pool, measured=measured, journal=journal, winners=winners, meter=meter,
                         deadline=deadline)
        ledger = loop.run()
        meter.close()
        if asked is not None and asked.recalled:
            log.info("resuming: %d designer answers taken back from %s", asked.recalled, asked.path)
        best = _merge(config, ledger)
        if loop.out_of_time:  # no spread replays either
            if own_pool:
                pool.close(wait=False)  # what still replays is ended, not waited for (a caller's pool is the caller's to close)
        else:
            measure_spread(plan, best, pool, announce=progress)
    except BaseException:
        meter.close()
        if writer is not None:
            writer.close(wait=False)  # an interrupted search does not wait for the writer's imports
        if own_pool:
            pool.close(wait=False)  # what still replays would be thrown away: not waited for
        raise

    timings = _timings(loop, started, sweep.max_search_seconds)
    results = SearchResults(best, ledger, dict(loop.tally.counts), folder if write else None, plan)
    task = ((folder, plan, results), dict(predictor_report=predictor_report, timings=timings, branches=branches, deploy=deploy))
    _write_and_close(writer, task, pool if own_pool else None)
    if progress:
        from spica.results.table import format_results

        shown = tell(sys.stdout, format_results(config, results, timings) + "\n")
        if write and shown:
            tell(sys.stdout, f"results: {folder} (open {folder / 'report.html'} in a browser)\n")
    return results


def _resumed(journal: Journal | None, cap: float | None, folder: Path) -> dict[str, Candidate]:
    """The evaluations an earlier run of this plan finished, by key; a candidate whose process
    died under it, or that overran a shorter time cap than today's, is measured again, not reused
    as failed."""
    finished = journal.load() if journal else []
    measured = {candidate.key: candidate for candidate in finished if not (candidate.transient or candidate.overran_before(cap))}
    if measured:
        log.info("resuming: %d finished evaluations found in %s", len(measured), folder)
    return measured


def _timings(loop: RoundLoop, started: float, max_search_seconds: float | None) -> dict[str, Any]:
    """Where the search's time went, for summary.json and the results table."""
    timings: dict[str, Any] = {
        "wall_seconds": time.monotonic() - started,
        "optimizer_seconds": loop.clock.seconds,
        "optimizer_exposed_seconds": loop.clock.exposed_seconds,
        "first_evaluation_at": loop.first_submitted_at,  # epoch seconds: when the first replay was handed out
        "evaluations_done_at": loop.finished_at,  # ... and when the last one came back (before the spread replays)
        "workers": loop.idle.workers,
        "idle_worker_seconds": dict(loop.idle.idle),  # in that window, by what the search was doing (spica/search/clocks.py)
        "left_empty_worker_seconds": loop.idle.left_empty,  # in that window, the workers a budget's confirmations left empty on purpose
        "cores": loop.idle.cores,
        "idle_core_seconds": loop.idle.idle_cores,  # in that window, the cores' (at most one per worker)
    }
    if max_search_seconds is not None:
        timings["budget"] = {"max_search_seconds": max_search_seconds, "ran_out": loop.out_of_time,
                             "replays_ended": loop.ended_replays}
    return timings


def _write_and_close(writer: ProcessPool | None, task: tuple[Any, ...], own_pool: EvaluationPool | None) -> None:
    """The results folder handed to the writer before the search's own pool closes (its workers
    end while the folder is written), then waited for."""
    written = None
    try:
        if writer is not None:
            written = writer.submit(results_writer.write, [task])[0]
    finally:
        try:
            if own_pool is not None:
                own_pool.close()
        finally:
            if writer is not None:
                try:
                    if written is not None:
                        written.result()
                finally:
                    writer.close()


def _merge(config: SmartSearchConfig, ledger: list[Candidate]) -> list[Candidate]:
    """docs/search.md step 6: rank by signed score (ties toward fewer GPUs; under min_gpus toward more
    goodput), or the Pareto front sorted
    by the raw value of its last objective (the plot's x-axis), whatever its direction."""
    unique = list({candidate.key: candidate for candidate in ledger if candidate.feasible}.values())
    if config.goal.target == "pareto":
        objectives = config.goal.objectives
        return score.pareto_front(
            unique, lambda c: [score.signed_score(name, c.objectives) for name in objectives], lambda c: c.objectives[objectives[-1]]
        )
    if config.goal.target_constrained:  # equal GPUs: the one with more SLA-good output wins
        return score.rank(unique, lambda c: c.score, lambda c: -c.metrics.get("goodput_output_throughput_tok_s", 0.0))
    return score.rank(unique, lambda c: c.score, lambda c: c.used_gpus)

