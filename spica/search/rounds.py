"""docs/search.md step 5: every branch's study runs its own barrier rounds, all on one pool.

A round is ask → project → dedupe → evaluate → tell for one branch; the branch asks again
only when all of its round is measured. Branches do not wait for each other: while one
branch's candidates replay, another branch's study chooses its next round, so choosing
mostly overlaps replaying. Each study sees exactly the same questions and answers whatever
the timing, and the ledger comes out in (round, branch, ask) order, so a seeded run gives
the same ledger every time.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from spica.evaluation import score
from spica.evaluation.evaluate import Evaluation, evaluate_task
from spica.plan import Plan
from spica.results.ledger import STATUSES, Candidate, Journal
from spica.search.dimensions import Knob, knob_values
from spica.search.pool import EvaluationPool, WorkerLost, outcome
from spica.search.progress import Progress
from spica.search.unroll import candidate_key, unroll
from spica.space import projection
from spica.space.branches import Branch
from spica.study.algorithms import ALGORITHMS
from spica.study.base import Study

ASK_CAP_PER_SLOT = 11
"""A round stops hunting for new candidates once it has asked this many suggestions per slot
(11 × per_round in all, upstream's per-round safety cap): duplicates are replaced until then."""


@dataclass
class BranchSearch:
    """One branch's study and what it needs to turn suggestions into candidates."""

    branch: Branch
    knobs: list[Knob]
    study: Study
    has_backend_param: bool
    pool_size: int | None = None


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: {status: 0 for status in STATUSES} | {"cache_hits": 0})

    def add(self, status: str) -> None:
        self.counts[status] += 1


@dataclass
class _Round:
    """One branch's round in flight: its suggestions in ask order and the keys still replaying."""

    order: int  # the branch's position, for the ledger's order
    search: BranchSearch
    index: int
    batch: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)  # trial id, unrolled, key
    followers: list[tuple[int, str]] = field(default_factory=list)  # same key as a batch member
    replayed: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    exhausted: bool = False  # the study returned no suggestions


class OptimizerClock:
    """Seconds spent choosing (ask, project, dedupe, tell), and the part of them during which
    no evaluation was running: the part that lengthens the search."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.exposed_seconds = 0.0
        self._finished: dict[Future, float] = {}

    def watch(self, future: Future) -> None:
        future.add_done_callback(lambda done: self._finished.setdefault(done, time.monotonic()))

    def forget(self, future: Future) -> None:
        self._finished.pop(future, None)

    @contextmanager
    def choosing(self, running: Iterable[Future]) -> Iterator[None]:
        running = [future for future in running if not future.done()]
        start = time.monotonic()
        try:
            yield
        finally:
            end = time.monotonic()
            finished = [self._finished.get(future) for future in running]
            busy_until = end if any(at is None for at in finished) else max(finished, default=start)
            self.seconds += end - start
            self.exposed_seconds += end - max(start, min(busy_until, end))


class RoundLoop:
    """Runs every branch's rounds to the end; `run()` returns the ledger."""

    def __init__(
        self,
        plan: Plan,
        searches: list[BranchSearch],
        pool: EvaluationPool,
        *,
        measured: dict[str, Candidate],
        journal: Journal | None,
        winners: Mapping[int, Any],
        meter: Progress,
    ) -> None:
        self.plan = plan
        self.searches = searches
        self.pool = pool
        self.measured = measured
        self.journal = journal
        self.winners = winners
        self.meter = meter
        sweep = plan.config.sweep
        self.per_round = sweep.per_round
        self.max_rounds = None if ALGORITHMS[sweep.algorithm].exhaustive else sweep.max_rounds  # every candidate once
        self.tally = Tally()
        self.clock = OptimizerClock()
        self._seen_in_run: set[str] = set()
        self._inflight: dict[Future, tuple[_Round, str, dict[str, Any]]] = {}
        self._ledger: list[tuple[tuple[int, int, int], Candidate]] = []
        self.first_submitted_at: float | None = None  # wall-clock times, for start-up and idle-worker figures
        self.finished_at: float | None = None

    def run(self) -> list[Candidate]:
        for order, search in enumerate(self.searches):
            self._start(order, search, 0)
        while self._inflight:
            done, _ = wait(list(self._inflight), return_when=FIRST_COMPLETED)
            rounds = []
            for future in sorted(done, key=list(self._inflight).index):
                current, key, unrolled = self._inflight.pop(future)
                self.clock.forget(future)
                self._record(current, key, unrolled, outcome(future))
                rounds.append(current)
            for current in sorted({id(r): r for r in rounds}.values(), key=lambda r: r.order):
                if not current.waiting:
                    self._finish(current)
                    self._start(current.order, current.search, current.index + 1)
        self.finished_at = time.time()
        return [candidate for _, candidate in sorted(self._ledger, key=lambda entry: entry[0])]

    def _start(self, order: int, search: BranchSearch, index: int) -> None:
        """Asks rounds for `search` until one has something to replay (or the branch is done)."""
        while self.max_rounds is None or index < self.max_rounds:
            with self.clock.choosing(self._inflight):
                current = self._ask(order, search, index)
            if current.exhausted and not (current.batch or current.followers):
                return  # the study has nothing left to suggest
            fresh = [(unrolled, key) for _, unrolled, key in current.batch if key not in self.measured]
            if fresh:
                self.first_submitted_at = self.first_submitted_at or time.time()
                futures = self.pool.submit(evaluate_task, [(self.plan.config, unrolled) for unrolled, _ in fresh])
                for future, (unrolled, key) in zip(futures, fresh):
                    self.clock.watch(future)
                    self._inflight[future] = (current, key, unrolled)
                    current.replayed.add(key)
                    current.waiting.add(key)
                return
            self._finish(current)
            index += 1

    def _ask(self, order: int, search: BranchSearch, index: int) -> _Round:
        """per_round suggestions, projected and deduplicated (a round may bring nothing new:
        the branch then goes on to its next round; it stops when its study runs dry)."""
        current = _Round(order, search, index)
        wanted, asked, cap = self.per_round, 0, ASK_CAP_PER_SLOT * self.per_round
        while wanted > 0 and asked < cap:
            suggestions = search.study.ask(min(wanted, cap - asked))
            asked += len(suggestions)
            if not suggestions:
                current.exhausted = True
                break
            for suggestion in suggestions:
                try:
                    unrolled = self._candidate_config(search, suggestion.params)
                except LookupError as exc:
                    search.study.tell(suggestion.trial_id, None, f"unsupported: {exc}")
                    self.tally.add("unsupported")
                    continue
                key = candidate_key(unrolled)
                pending = any(key == item[2] for item in current.batch)
                if key in self.measured and key in self._seen_in_run or pending:
                    self.tally.counts["cache_hits"] += 1
                    if pending:
                        current.followers.append((suggestion.trial_id, key))
                    else:
                        _tell(search.study, suggestion.trial_id, self.measured[key])
                    continue
                current.batch.append((suggestion.trial_id, unrolled, key))
                wanted -= 1
        return current

    def _record(self, current: _Round, key: str, unrolled: dict[str, Any], result: Evaluation | BaseException) -> None:
        """A finished replay: journaled at once, so an interruption loses nothing measured."""
        candidate = _candidate(self.plan, current.search.branch.mode, current.index, key, unrolled, result)
        self.measured[key] = candidate
        if self.journal:
            self.journal.append(candidate)
        current.waiting.discard(key)
        self.meter.update(current.index + 1, candidate)

    def _finish(self, current: _Round) -> None:
        """The round's barrier: every result told, in ask order."""
        with self.clock.choosing(self._inflight):
            for position, (trial_id, _, key) in enumerate(current.batch):
                candidate = self.measured[key]
                if key not in current.replayed:  # measured by an earlier, interrupted run
                    self.tally.counts["cache_hits"] += 1
                    self.meter.update(current.index + 1, candidate)
                self._seen_in_run.add(key)
                self._ledger.append(((current.index, current.order, position), candidate))
                self.tally.add(candidate.status)
                _tell(current.search.study, trial_id, candidate)
            for trial_id, key in current.followers:
                _tell(current.search.study, trial_id, self.measured[key])

    def _candidate_config(self, search: BranchSearch, params: Mapping[str, Any]) -> dict[str, Any]:
        """A suggestion projected onto a valid config and unrolled (LookupError: unsupported)."""
        branch = search.branch
        backend = str(params["backend"]) if search.has_backend_param else branch.backends[0]
        if len(branch.configs) == 1:
            parallel = branch.configs[0]
            if backend not in parallel.backends:
                raise LookupError(f"pinned config does not support {backend}")
        else:
            parallel = projection.project(branch, backend, params)
        knobs = knob_values(search.knobs, params)
        ratio = params.get("kv_load_ratio")
        config = self.plan.config
        return unroll(config, branch, parallel, backend, knobs, self.winners, float(ratio) if ratio is not None else None)


def _tell(study: Study, trial_id: int, candidate: Candidate) -> None:
    """Feasible results with their objectives; everything else as infeasible, never a low score."""
    if candidate.feasible:
        study.tell(trial_id, candidate.objectives)
    else:
        study.tell(trial_id, None, f"{candidate.status}: {candidate.reason}")


def _candidate(plan: Plan, branch: str, round_index: int, key: str, unrolled: dict[str, Any], outcome: Evaluation | BaseException) -> Candidate:
    if isinstance(outcome, BaseException):
        category = "worker_lost" if isinstance(outcome, WorkerLost) else "error"
        return Candidate(key, branch, round_index, "failed", unrolled, reason=f"{category}: {type(outcome).__name__}: {outcome}",
                         plan_fingerprint=plan.fingerprint, scores_fingerprint=plan.scores_fingerprint)
    config = plan.config
    objectives = {name: outcome.objectives[name] for name in config.goal.objectives if name in outcome.objectives}
    signed = score.candidate_score(config.goal.objectives, config.goal.target == "pareto", outcome.objectives) if outcome.status == "feasible" else None
    return Candidate(
        key=key,
        branch=branch,
        round=round_index,
        status=outcome.status,
        unrolled=unrolled,
        reason=outcome.reason,
        metrics=outcome.metrics,
        score=signed,
        objectives=objectives,
        replay_input=outcome.replay_input,
        seconds=outcome.seconds,
        plan_fingerprint=plan.fingerprint,
        scores_fingerprint=plan.scores_fingerprint,
        provenance=outcome.provenance,
    )
