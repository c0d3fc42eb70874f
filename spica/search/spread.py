"""How far a kv_router score moves from one draw to another.

Dynamo's KV router breaks ties between equally good workers, and samples at a router
temperature above 0, with a generator seeded from the clock; each replay of a kv_router
candidate reads a clock of its own, started by its draw number (spica/evaluation/clock.py), so
draw 0 (the search's) and every later draw repeat on every run. round_robin replays never vary.
Rather than hide how much the draws differ, the best kv_router candidates are replayed again
after the search, as draws 1 and 2, and the range of their objectives is kept in
`provenance["spread"]`, which the table shows as ± half the range.
"""

from __future__ import annotations

import sys
from typing import Sequence

from spica.core.candidate import Candidate
from spica.core.console import tell
from spica.evaluation import clock
from spica.evaluation.evaluate import Evaluation, evaluate_task
from spica.plan import Plan
from spica.search.pool import EvaluationPool, run_all

SPREAD_TOP = 3  # best candidates measured again (the ones a user deploys)
SPREAD_REPLAYS = 3  # draws per measured candidate, the search's own included


def measure_spread(plan: Plan, best: Sequence[Candidate], pool: EvaluationPool, announce: bool = False) -> list[Candidate]:
    """Replay draws 1 .. SPREAD_REPLAYS-1 of the top kv_router candidates; returns the
    candidates that got a spread."""
    chosen = [candidate for candidate in best[:SPREAD_TOP] if clock.varies(candidate.unrolled)]
    if not chosen:
        return []
    wanted = [(candidate, draw) for candidate in chosen for draw in range(1, SPREAD_REPLAYS)]
    if announce:
        tell(sys.stdout, f"spica: replaying the best {len(chosen)} kv_router candidates as {SPREAD_REPLAYS - 1} more draws "
             "to show how much their scores vary\n")
    outcomes = run_all(pool, evaluate_task, [(plan.config, candidate.unrolled, draw) for candidate, draw in wanted])
    again: dict[str, list[dict]] = {candidate.key: [candidate.objectives] for candidate in chosen}
    for (candidate, _), outcome in zip(wanted, outcomes):
        if isinstance(outcome, Evaluation) and outcome.status == "feasible":
            again[candidate.key].append(outcome.objectives)
    for candidate in chosen:
        replays = again[candidate.key]
        candidate.provenance["spread"] = {
            "replays": len(replays),
            "objectives": {name: [min(r[name] for r in replays), max(r[name] for r in replays)] for name in candidate.objectives},
        }
    return chosen
