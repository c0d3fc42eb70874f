"""docs/search.md step 5: every branch's study runs its own rounds, one ask ahead, all on one
pool.

An ask is ask → project → dedupe → evaluate → tell for one branch; how rounds are cut into asks
and when each suggestion is due is spica/search/schedule.py. A branch does not wait for the
whole of an ask before asking the next: its pending suggestions are handed to the study as
active trials, so the new ask spreads away from them. Neither workers nor branches wait for
each other.

Reproducible whatever the replay durations: results are told strictly in due order (within a due
ask: an ask's own suggestions in ask order, then its followers), one at a time, and a branch
asks as soon as every result due by that ask is told. Every ask therefore knows exactly the
results due by it, a fact of the candidates, not of which replay came back first. The ledger
comes out in (round, branch, ask) order, so a seeded run gives the same ledger every time.

A time budget (`sweep.max_search_seconds`) ends the asking where it runs out: replays not yet
started are dropped, those running get a tenth of the budget more to finish (GRACE_SHARE), and
what still runs then is ended; everything measured enters the ledger. What was dropped or ended
is not journaled, so the same command resumes it, with a fresh budget.

Screening (spica/evaluation/screening.py) adds one step after the rounds: the screened candidates
that may be on the answer are replayed in full (`_confirm`); with a time budget, asking stops
once CONFIRM_SHARE of it is left, to leave them that time, and they run one per core: a replay
the budget ends is lost, and with more workers than cores (upstream's GLM-5 study,
examples/glm5_b200_72.yaml: 8 on 2 cores) every confirmation shared the cores and came back late,
so the budget ended a pool's worth of them half done. One per core, the most promising come back
first and at most a core's worth is cut. A scalar goal's search then steps the best shapes'
replicas (spica/search/replica_steps.py), in the same waves.
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from spica.core.candidate import STATUSES, Candidate
from spica.evaluation import score
from spica.evaluation.calibration import candidate_fields
from spica.evaluation.evaluate import Evaluation, evaluate_task, request_count
from spica.evaluation.screening import full_candidate, screen_fields, to_confirm
from spica.plan import Plan
from spica.results.ledger import Journal
from spica.search import replica_steps
from spica.search.clocks import OptimizerClock, WorkerClock
from spica.search.dimensions import Knob, knob_values
from spica.search.feeder import Feeder
from spica.search.pool import EvaluationPool, WorkerLost, outcome
from spica.search.progress import Progress
from spica.search.schedule import AskSlot, ask_sizes, ask_slot, defers, later_rounds
from spica.search.unroll import candidate_key, unroll
from spica.space import projection
from spica.space.branches import Branch, ParallelConfig
from spica.study.algorithms import ALGORITHMS
from spica.study.base import Study

ASK_CAP_PER_SLOT = 11
"""An ask stops hunting for new candidates once it has asked this many suggestions per slot
(11 × its size in all, upstream's per-round safety cap): duplicates are replaced until then."""


GRACE_SHARE = 0.1  # of the time budget: how long replays running when it runs out may still finish
CONFIRM_TAG = "confirmations"  # the feeder's tag for them: one queue, handed out in the order asked
CONFIRM_SHARE = 0.35
"""Of the time budget, with screening: the last part, left to replay in full the screened candidates
that may be on the answer (asking stops there once something was screened)."""


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
class _Ask:
    """One ask of a branch: its new suggestions (in ask order) and the keys it sent to replay.
    `index` counts the branch's asks; `slot` places it in its round."""

    search: BranchSearch
    index: int
    slot: AskSlot
    batch: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)  # trial id, unrolled, key
    followers: list[tuple[int, str]] = field(default_factory=list)  # same key as a suggestion still untold
    replayed: set[str] = field(default_factory=set)
    exhausted: bool = False  # the study returned no suggestions


@dataclass(frozen=True)
class _Untold:
    """A suggestion waiting for its tell: a ledger entry (`position` in its ask) or a follower;
    told by the branch's ask number `due`."""

    ask: _Ask
    trial_id: int
    key: str
    position: int | None
    due: int


@dataclass(frozen=True)
class _Recipe:
    """How a candidate was made: the branch search, the projected config, the backend, every knob's
    value and the KV-load ratio; the replica steps remake it with another config."""

    search: BranchSearch
    parallel: ParallelConfig
    backend: str
    knobs: Mapping[str, Any]
    ratio: float | None


@dataclass
class _Branch:
    """A branch's progress: its suggestions not yet told, in the order they are told, and its next ask."""

    order: int  # the branch's position, for the ledger's order
    search: BranchSearch
    untold: list[_Untold] = field(default_factory=list)
    next_ask: int = 0
    done: bool = False  # out of rounds, or its study ran dry


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
        deadline: float | None = None,
    ) -> None:
        """`deadline`: the time.monotonic() at which the time budget runs out (None: no budget)."""
        self.plan = plan
        self.searches = searches
        self.measured = measured
        self.journal = journal
        self.winners = winners
        self.meter = meter
        sweep = plan.config.sweep
        self.sweep = sweep
        self.rounds = None if ALGORITHMS[sweep.algorithm].exhaustive else sweep.max_rounds  # None: every candidate once
        self.defers = defers(sweep, len(searches))
        self.tally = Tally()
        self.clock = OptimizerClock()
        self.idle = WorkerClock(pool.workers)
        self._seen_in_run: set[str] = set()
        self._inflight: dict[Future, tuple[_Branch, _Ask, str, dict[str, Any]]] = {}
        self._branches: list[_Branch] = []
        self._ledger: list[tuple[tuple[int, int, int], Candidate]] = []
        self._feeder = Feeder(pool, self._replay_time_left)
        self._suggestions_per_branch = sum(ask_sizes(sweep)) if self.rounds is not None else None
        # per branch: how many of its replays came back, and their seconds (read by the feeder from the pool's thread:
        # every branch's entry exists from the start, so the dict never changes size)
        self._replays_back: dict[str, tuple[int, float]] = {search.branch.name: (0, 0.0) for search in searches}
        self.first_submitted_at: float | None = None  # wall-clock times, for start-up and idle-worker figures
        self.finished_at: float | None = None
        self.deadline = deadline
        self.grace_until = None if deadline is None else deadline + GRACE_SHARE * (sweep.max_search_seconds or 0.0)
        self.out_of_time = False  # the budget ran out: no more asks
        screens = sweep.screen_request_ratio != "off"
        self.confirm_from = deadline - CONFIRM_SHARE * (sweep.max_search_seconds or 0.0) if screens and deadline is not None else None
        self.confirming = False  # asking stopped for the confirmations (with a time budget)
        self._confirming: dict[Future, tuple[Candidate, dict[str, Any], str]] = {}
        self._recipes: dict[str, _Recipe] = {}  # by candidate key: how it was made (_candidate_config)
        self.ended_replays = 0  # replays dropped or ended by the budget, not measured

    def run(self) -> list[Candidate]:
        try:
            return self._run()
        finally:
            self._feeder.close()

    def _replay_time_left(self, name: str) -> float:
        """A branch's replay seconds still to come, estimated: its suggestions not yet back times
        its mean replay so far (the search's, before any of its own). 0 where the rounds are open."""
        if self._suggestions_per_branch is None or name not in self._replays_back:  # confirmations: in the order asked
            return 0.0
        count, seconds = self._replays_back[name]
        if not count:
            every = list(self._replays_back.values())
            total = sum(n for n, _ in every)
            return self._suggestions_per_branch * (sum(s for _, s in every) / total if total else 1.0)
        return (self._suggestions_per_branch - count) * seconds / count

    def _run(self) -> list[Candidate]:
        branches = self._branches = [_Branch(order, search) for order, search in enumerate(self.searches)]
        for branch in branches:
            self._advance(branch)
        self._note_finishing(branches)
        while not self.confirming and self._rounds_step():
            self._confirm_if_due()
        if not self.out_of_time:
            self._confirm()  # the rounds' replays still running come back meanwhile
        if self.out_of_time or self.confirming:
            for branch in branches:
                self._tell_measured(branch)
        self.finished_at = time.time()
        return self._ordered_ledger()

    def _ordered_ledger(self) -> list[Candidate]:
        """The ledger so far in its due order (round, branch, position), whatever order replays came back in."""
        return [candidate for _, candidate in sorted(self._ledger, key=lambda entry: entry[0])]

    def _rounds_back(self, done: list[Future]) -> None:
        """The rounds' replays back: recorded, and each branch stepped as far as they allow."""
        touched = []
        for future in done:
            branch, current, key, unrolled = self._inflight.pop(future)
            self.clock.forget(future)
            if future.cancelled():  # held back when the budget ran out: never started
                self.ended_replays += 1
                continue
            self._record(current, key, unrolled, outcome(future))
            touched.append(branch)
        for branch in sorted({id(b): b for b in touched}.values(), key=lambda b: b.order):
            self._advance(branch)
        self._note_finishing(self._branches)

    def _next_done(self, running: Mapping[Future, Any]) -> list[Future] | None:
        """The replays of `running` back since the last call, in submission order; [] when the
        budget has just run out (asking stops; the replays not started come back cancelled);
        None once the grace ran out too (what still runs is ended)."""
        done, _ = wait(list(running), timeout=self._until_next_stop(), return_when=FIRST_COMPLETED)
        if not done and self._past(self.grace_until):
            if not self.out_of_time:  # the wait outlasted the deadline and the grace at once
                self._stop_asking()
            self._end_running()
            return None
        if self._past(self.deadline) and not self.out_of_time:
            self._stop_asking()
            return []
        return sorted(done, key=list(running).index)

    def _past(self, moment: float | None) -> bool:
        return moment is not None and time.monotonic() >= moment

    def _until_next_stop(self) -> float | None:
        """Seconds until the budget runs out, or until the running replays' grace ends."""
        if self.deadline is None:
            return None
        moment = self.grace_until if self.out_of_time else self.deadline
        if self.confirm_from is not None and not self.confirming and time.monotonic() < self.confirm_from:
            moment = self.confirm_from
        return max(0.0, moment - time.monotonic())

    def _confirm_if_due(self) -> None:
        if not self.confirming and self._past(self.confirm_from) and any(c.status == "screened" for c in self.measured.values()):
            self._stop_for_confirmations()

    def _stop_for_confirmations(self) -> None:
        """CONFIRM_SHARE of the budget is left: no branch asks again, and the replays not yet started
        are dropped (they come back cancelled, unmeasured); the confirmations start at once, beside
        the replays still running."""
        self.confirming = True
        for branch in self._branches:
            branch.done = True
        self._feeder.drop_held()
        self._note_finishing(self._branches)

    def _stop_asking(self) -> None:
        """The budget ran out: no branch asks again, and replays not yet started are dropped."""
        self.out_of_time = True
        for branch in self._branches:
            branch.done = True
        self._feeder.close()
        self._note_finishing(self._branches)

    def _end_running(self) -> None:
        """The grace ran out too: what still replays is left unmeasured (the pool ends it)."""
        for future in [*self._inflight, *self._confirming]:
            self.clock.forget(future)
        self.ended_replays += len(self._inflight) + len(self._confirming)
        self._inflight.clear()
        self._confirming.clear()

    def _confirm(self) -> None:
        """docs/search.md step 5, the rounds over (or, with a budget, stopped for this): the screened
        candidates that may be on the answer (spica/evaluation/screening.py) replayed in full, the
        most promising first, in waves until none is left: a full replay that falls short may
        uncover a screened candidate it hid. Each enters the ledger after the last round. No study
        learns from them: the answer is made of them. Rounds' replays still running are taken
        back meanwhile, and each wave is drawn from the ledger as it stands (with a budget, a
        screened row back from the rounds late is confirmed too). Once none is left to confirm, a
        scalar goal's replica steps (spica/search/replica_steps.py) come in waves the same way.
        With a budget a wave is as wide as the cores, and topped up as each replay comes back,
        drawn afresh: the most promising candidate known at that moment goes next."""
        order = {search.branch.name: position for position, search in enumerate(self.searches)}
        asked = [item.ask.slot.round for branch in self._branches for item in branch.untold]
        last_round = max([entry[0][0] for entry in self._ledger] + asked, default=0)
        confirmed: dict[str, Candidate] = {}  # screened key → its full replay
        appended = 0
        width = None  # without a budget (or on a pool with cores of its own), a wave is replayed whole before the next is drawn
        if self.deadline is not None and self._feeder.hands_out:
            width = self._feeder.narrow(self.idle.cores)
            self.idle.narrow(width)
        replayed: set[str] = set()
        pending: dict[str, tuple[Candidate, bool]] = {}  # sent to replay, not in the ledger yet: key → (origin, a replica step?)
        in_ledger: set[str] = set()
        while not self.out_of_time:
            view = [confirmed.get(candidate.key, candidate) for candidate in self._ordered_ledger()]
            wave = [(screened, full_candidate(screened.unrolled)) for screened in to_confirm(self.plan.config.goal.objectives, view)]
            wave = [(screened, unrolled, candidate_key(unrolled)) for screened, unrolled in wave]
            if not wave and self._inflight:  # none to confirm now; rounds' replays still running may bring some
                if not self._rounds_step():
                    break
                continue
            waiting = not wave and any(not stepped for _, stepped in pending.values())  # steps wait for confirmations still out
            stepping = not wave and not waiting
            wave = wave or ([] if waiting else self._replica_steps(view))
            if not wave and not self._confirming:
                break
            running = {key for _, _, key in self._confirming.values()}
            fresh = [entry for entry in wave if entry[2] not in self.measured and entry[2] not in running]
            if width is not None:  # with a budget: topped up to one per core, drawn afresh as each comes back
                fresh = fresh[:max(0, width - len(running))]
            replayed |= {key for _, _, key in fresh}
            pending |= {key: (origin, stepping) for origin, _, key in fresh}
            if fresh:
                self.meter.begin("replaying the best shapes with a replica fewer or more" if stepping else "confirming in full")
                self.meter.total += len(fresh)
                futures = self._feeder.submit(evaluate_task, [(self.plan.config, unrolled) for _, unrolled, _ in fresh], CONFIRM_TAG)
                for future, entry in zip(futures, fresh):
                    self.clock.watch(future)
                    self.idle.handed_out(future)
                    self._confirming[future] = entry
            while self._confirming:
                done = self._next_done({**self._inflight, **self._confirming})
                if done is None:
                    break
                topped_up = width is not None and any(future in self._confirming for future in done)
                self._rounds_back([future for future in done if future in self._inflight])
                for future in (future for future in done if future in self._confirming):
                    origin, unrolled, key = self._confirming.pop(future)  # the screened row, or the shape stepped from
                    self.clock.forget(future)
                    if future.cancelled():
                        self.ended_replays += 1
                        pending.pop(key, None)
                        continue
                    candidate = _candidate(self.plan, origin.branch, origin.round, key, unrolled, outcome(future))
                    if pending[key][1]:
                        candidate.provenance = {**candidate.provenance, "replica_step_of": origin.key}
                    self.measured[key] = candidate
                    if self.journal:
                        self.journal.append(candidate)
                    self.meter.update(origin.round + 1, candidate)
                if topped_up:
                    break
            entries = {key: pending.get(key, (origin, stepping)) for origin, _, key in wave}
            entries |= {key: entry for key, entry in pending.items() if key not in entries}  # drawn before, no longer
            for key, (origin, stepped) in entries.items():
                if key in self.measured and key not in in_ledger:  # else still running, or ended by the budget
                    in_ledger.add(key)
                    pending.pop(key, None)
                    self._ledger.append(((last_round + 1, order[origin.branch], appended), self.measured[key]))
                    appended += 1
                    self.tally.add(self.measured[key].status)
                    if key not in replayed:  # measured by an earlier, interrupted run
                        self.tally.counts["cache_hits"] += 1
                    if not stepped:
                        confirmed[origin.key] = self.measured[key]
                        if origin.key in self._recipes:
                            self._recipes[key] = self._recipes[origin.key]
        while self._rounds_step():
            pass

    def _rounds_step(self) -> bool:
        """The rounds' next replays back and recorded; False when none runs, or the grace ran out."""
        done = self._next_done(self._inflight) if self._inflight else None
        if done is None:
            return False
        self._rounds_back(done)
        return True

    def _tell_measured(self, branch: _Branch) -> None:
        """After the budget: every suggestion measured enters the ledger, in due order; those
        dropped or ended are left out (not journaled: a resume measures them)."""
        while branch.untold:
            if branch.untold[0].key in self.measured:
                self._tell_next(branch)
            else:
                branch.untold.pop(0)

    def _note_finishing(self, branches: list[_Branch]) -> None:
        if all(branch.done for branch in branches):
            self.idle.phase("finishing")

    def _advance(self, branch: _Branch) -> None:
        """Steps the branch as far as its results allow: ask once every result due by the ask
        is told, else tell the next untold one once it is measured. One step at a time, so what
        each ask knows is fixed by the candidates, not by when their replays finish."""
        while True:
            if not self.out_of_time and self._past(self.deadline):
                self._stop_asking()  # the budget ran out between two replays
            self._confirm_if_due()
            if not branch.done and all(item.due > branch.next_ask for item in branch.untold):
                self._ask_next(branch)
            elif branch.untold and branch.untold[0].key in self.measured:
                with self.clock.choosing(self._inflight):
                    self._tell_next(branch)
            else:
                return

    def _ask_next(self, branch: _Branch) -> None:
        """The branch's next ask: asked, its new candidates sent to replay, its suggestions
        queued for their tells (the branch is done when out of rounds or suggestions)."""
        slot = ask_slot(self.sweep, branch.next_ask, self.rounds)
        assert slot is not None  # a branch past its last ask is done
        self.idle.phase("asking")
        with self.clock.choosing(self._inflight):
            current = self._ask(branch, slot)
        self.idle.phase("waiting")
        branch.next_ask += 1
        branch.done = ask_slot(self.sweep, branch.next_ask, self.rounds) is None
        if current.exhausted and not (current.batch or current.followers):
            branch.done = True  # the study has nothing left to suggest
            return
        costs = [request_count(self.plan.config, unrolled) for _, unrolled, _ in current.batch]
        later = later_rounds(costs) if self.defers else [0] * len(costs)
        due = {key: current.index + 2 + later[position] for position, (_, _, key) in enumerate(current.batch)}
        due |= {item.key: item.due for item in branch.untold if item.position is not None}  # a follower's earlier leader
        fresh = [(unrolled, key) for _, (_, unrolled, key) in sorted(enumerate(current.batch), key=lambda entry: -(costs[entry[0]] or 0))
                 if key not in self.measured]
        if fresh:
            self.first_submitted_at = self.first_submitted_at or time.time()
            futures = self._feeder.submit(evaluate_task, [(self.plan.config, unrolled) for unrolled, _ in fresh], branch.search.branch.name)
            for future, (unrolled, key) in zip(futures, fresh):
                self.clock.watch(future)
                self.idle.handed_out(future)
                self._inflight[future] = (branch, current, key, unrolled)
                current.replayed.add(key)
        branch.untold.extend(_Untold(current, trial_id, key, position, due[key]) for position, (trial_id, _, key) in enumerate(current.batch))
        branch.untold.extend(_Untold(current, trial_id, key, None, max(current.index + 2, due[key])) for trial_id, key in current.followers)
        branch.untold.sort(key=lambda item: item.due)  # stable: within a due round, as appended

    def _ask(self, branch: _Branch, slot: AskSlot) -> _Ask:
        """The slot's suggestions, projected and deduplicated (an ask may bring nothing new: the
        branch then goes on to its next; it stops when its study runs dry). A suggestion whose
        candidate is still untold follows it: told the same result, later."""
        search = branch.search
        current = _Ask(search, branch.next_ask, slot)
        untold = {item.key for item in branch.untold if item.position is not None}
        wanted = slot.size
        asked, cap = 0, ASK_CAP_PER_SLOT * wanted
        while wanted > 0 and asked < cap:
            suggestions = search.study.ask(min(wanted, cap - asked))
            asked += len(suggestions)
            if not suggestions:
                current.exhausted = True
                break
            for suggestion in suggestions:
                try:
                    unrolled, key = self._candidate_config(search, suggestion.params)
                except LookupError as exc:
                    search.study.tell(suggestion.trial_id, None, f"unsupported: {exc}")
                    self.tally.add("unsupported")
                    continue
                pending = key in untold or any(key == item[2] for item in current.batch)
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

    def _record(self, current: _Ask, key: str, unrolled: dict[str, Any], result: Evaluation | BaseException) -> None:
        """A finished replay: journaled at once, so an interruption loses nothing measured."""
        candidate = _candidate(self.plan, current.search.branch.name, current.slot.round, key, unrolled, result)
        self.measured[key] = candidate
        count, seconds = self._replays_back[candidate.branch]
        self._replays_back[candidate.branch] = (count + 1, seconds + (candidate.seconds or 0.0))
        if self.journal:
            self.journal.append(candidate)
        self.meter.update(current.slot.round + 1, candidate)

    def _tell_next(self, branch: _Branch) -> None:
        """The next untold suggestion's result (the first in due order), to its study; an ask's
        own suggestions also enter the ledger, in (round, branch, ask) order."""
        item = branch.untold.pop(0)
        candidate = self.measured[item.key]
        if item.position is not None:
            current = item.ask
            if item.key not in current.replayed:  # measured by an earlier, interrupted run
                self.tally.counts["cache_hits"] += 1
                self.meter.update(current.slot.round + 1, candidate)
            self._seen_in_run.add(item.key)
            self._ledger.append(((current.slot.round, branch.order, current.slot.first + item.position), candidate))
            self.tally.add(candidate.status)
        _tell(branch.search.study, item.trial_id, candidate)

    def _candidate_config(self, search: BranchSearch, params: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """A suggestion projected onto a valid config, unrolled, and its key (LookupError:
        unsupported); how it was made is kept by its key, for the replica steps."""
        branch = search.branch
        backend = str(params["backend"]) if search.has_backend_param else branch.backends[0]
        if len(branch.configs) == 1:
            parallel = branch.configs[0]
            if backend not in parallel.backends:
                raise LookupError(f"pinned config does not support {backend}")
        else:
            parallel = projection.project(branch, backend, params)
        ratio = params.get("kv_load_ratio")
        recipe = _Recipe(search, parallel, backend, knob_values(search.knobs, params), float(ratio) if ratio is not None else None)
        unrolled = self._unrolled(recipe)
        key = candidate_key(unrolled)
        self._recipes[key] = recipe
        return unrolled, key

    def _unrolled(self, recipe: _Recipe) -> dict[str, Any]:
        config = self.plan.config
        unrolled = unroll(config, recipe.search.branch, recipe.parallel, recipe.backend, recipe.knobs, self.winners, recipe.ratio)
        return {**unrolled, **candidate_fields(self.plan.calibration, unrolled), **screen_fields(config, unrolled)}

    def _replica_steps(self, view: list[Candidate]) -> list[tuple[Candidate, dict[str, Any], str]]:
        """spica/search/replica_steps.py: the next replicas to try, each (its origin, unrolled, key),
        none already in `view`; none for a Pareto search."""
        if self.plan.config.goal.target == "pareto":
            return []
        recipes = {candidate.key: self._recipes[candidate.key] for candidate in view if candidate.key in self._recipes}

        def shape_of(candidate: Candidate) -> tuple | None:
            recipe = recipes.get(candidate.key)
            return None if recipe is None else (recipe.search.branch.name, recipe.backend, *((p.role, p.shape) for p in recipe.parallel.pools))

        seen = {candidate.key for candidate in view}
        steps = []
        for origin in replica_steps.origins(view, shape_of):
            recipe = recipes[origin.key]
            for parallel in replica_steps.neighbours(recipe.search.branch.configs, recipe.parallel, recipe.backend):
                step = replace(recipe, parallel=parallel)
                unrolled = full_candidate(self._unrolled(step))
                key = candidate_key(unrolled)
                if key not in seen:
                    seen.add(key)
                    self._recipes[key] = step
                    steps.append((origin, unrolled, key))
        return steps


def _tell(study: Study, trial_id: int, candidate: Candidate) -> None:
    """Feasible results with their objectives (a screening replay's too); everything else as
    infeasible, never a low score."""
    if candidate.scored:
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
    signed = score.candidate_score(config.goal.objectives, config.goal.target == "pareto", outcome.objectives) if outcome.status in ("feasible", "screened") else None
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
