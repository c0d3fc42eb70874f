"""How far a kv_router score moves when the same candidate is replayed again.

Dynamo's KV router breaks ties between equally good workers, and samples at a router
temperature above 0, without a seed that Replay or `KvRouterConfig` exposes, so two replays of
one kv_router candidate differ (spica/search/draws.py); round_robin replays are identical.
Rather than hide that, the best kv_router candidates are replayed again after the search and
the range of their objectives is kept in `provenance["spread"]`, which the table shows as ±
half the range.
"""

from __future__ import annotations

import sys
from typing import Sequence

from spica.core.candidate import Candidate
from spica.core.console import tell
from spica.evaluation.evaluate import Evaluation, evaluate_task
from spica.plan import Plan
from spica.search.draws import Draws, varies_run_to_run
from spica.search.pool import EvaluationPool, run_all

SPREAD_TOP = 3  # best candidates measured again (the ones a user deploys)
SPREAD_REPLAYS = 3  # replays per measured candidate, the search's own included


def measure_spread(plan: Plan, best: Sequence[Candidate], pool: EvaluationPool, draws: Draws | None = None, announce: bool = False) -> list[Candidate]:
    """Replay the top kv_router candidates again (or tell their kept draws 1 and 2:
    spica/search/draws.py); returns the candidates that got a spread."""
    chosen = [candidate for candidate in best[:SPREAD_TOP] if varies_run_to_run(candidate.unrolled)]
    if not chosen:
        return []
    wanted = [(candidate, draw) for candidate in chosen for draw in range(1, SPREAD_REPLAYS)]
    kept = {(candidate.key, draw): draws.get(candidate.key, draw) if draws is not None else None for candidate, draw in wanted}
    fresh = [(candidate, draw) for candidate, draw in wanted if kept[(candidate.key, draw)] is None]
    if announce and fresh:
        tell(sys.stdout, f"spica: replaying the best {len(chosen)} kv_router candidates {SPREAD_REPLAYS - 1} more times "
             "to show how much their scores vary\n")
    outcomes = run_all(pool, evaluate_task, [(plan.config, candidate.unrolled) for candidate, _ in fresh])
    for (candidate, draw), outcome in zip(fresh, outcomes):
        if isinstance(outcome, Evaluation):
            kept[(candidate.key, draw)] = outcome
            if draws is not None:
                draws.keep(candidate.key, draw, candidate.unrolled, outcome)
    for candidate in chosen:
        again = [kept[(candidate.key, draw)] for draw in range(1, SPREAD_REPLAYS)]
        replays = [candidate.objectives] + [outcome.objectives for outcome in again if outcome is not None and outcome.status == "feasible"]
        candidate.provenance["spread"] = {
            "replays": len(replays),
            "objectives": {name: [min(r[name] for r in replays), max(r[name] for r in replays)] for name in candidate.objectives},
        }
    return chosen
