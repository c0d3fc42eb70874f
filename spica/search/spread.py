"""How far a kv_router score moves when the same candidate is replayed again.

Dynamo's KV router breaks ties between equally good workers without a seed that Replay or
`KvRouterConfig` exposes, so two replays of one kv_router candidate differ slightly (about
0.5 % on the Mooncake traces); round_robin replays are identical. Rather than hide that, the
best kv_router candidates are replayed again after the search and the range of their
objectives is kept in `provenance["spread"]`, which the table shows as ± half the range.
"""

from __future__ import annotations

import sys
from typing import Sequence

from spica.evaluation.evaluate import Evaluation, evaluate_task
from spica.plan import Plan
from spica.results.ledger import Candidate
from spica.search.pool import EvaluationPool, run_all
from spica.search.progress import tell

SPREAD_TOP = 3  # best candidates measured again (the ones a user deploys)
SPREAD_REPLAYS = 3  # replays per measured candidate, the search's own included


def varies_run_to_run(candidate: Candidate) -> bool:
    return candidate.unrolled.get("router_mode") == "kv_router"


def measure_spread(plan: Plan, best: Sequence[Candidate], pool: EvaluationPool, announce: bool = False) -> list[Candidate]:
    """Replay the top kv_router candidates again; returns the candidates that got a spread."""
    chosen = [candidate for candidate in best[:SPREAD_TOP] if varies_run_to_run(candidate)]
    if not chosen:
        return []
    if announce:
        tell(sys.stdout, f"spica: replaying the best {len(chosen)} kv_router candidates {SPREAD_REPLAYS - 1} more times "
             "to show how much their scores vary\n")
    again = SPREAD_REPLAYS - 1
    outcomes = run_all(pool, evaluate_task, [(plan.config, candidate.unrolled) for candidate in chosen for _ in range(again)])
    for index, candidate in enumerate(chosen):
        replays = [candidate.objectives] + [
            outcome.objectives for outcome in outcomes[index * again : (index + 1) * again]
            if isinstance(outcome, Evaluation) and outcome.status == "feasible"
        ]
        candidate.provenance["spread"] = {
            "replays": len(replays),
            "objectives": {name: [min(r[name] for r in replays), max(r[name] for r in replays)] for name in candidate.objectives},
        }
    return chosen

