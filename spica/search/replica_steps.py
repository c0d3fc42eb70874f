"""docs/search.md step 5, after the rounds of a search for one scalar target: the best deployment of
each leading worker shape is replayed again with one replica fewer and one more (in each role),
the same knobs and backend, and again from any that does better, until none does.

Why: replicas are the knob a per-GPU target turns on most sharply, and the one a study of a few
dozen trials resolves worst. Under real traffic judged by an SLA, one replica fewer raises goodput
per GPU until the SLA breaks, and then it falls to nothing; the study sees the cliff as noise. On S2
(benchmarks/peer/s2.yaml) three of five seeds ended on agg 2×TP8 at 58.5-58.8 good tok/s/GPU while
the other two found agg 3×TP4 at 64-65; two of the three had replayed agg 4×TP4 at 57.4-57.5 and
never 3×TP4 (docs/search.md, "Why a search ends with replica steps", has the figures after).
A Pareto search has no one best to step from, and a scale-free search (spica/search/branches.py)
has one replica count per ratio: neither steps.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Sequence

from spica.core.candidate import Candidate
from spica.space.branches import ParallelConfig

STEP_SHAPES = 3
"""Worker shapes stepped from: the best few (each by its best deployment)."""
STEP_MARGIN = 0.05
"""How far below the best a shape's best may be and still be stepped from: one replica of a few
moves a per-GPU target by more than this (4×TP4 at 57.4 and 3×TP4 at 65 on S2)."""


def neighbours(configs: Iterable[ParallelConfig], parallel: ParallelConfig, backend: str) -> list[ParallelConfig]:
    """The configs of `configs` on `backend` whose workers are `parallel`'s with one replica fewer or
    more in one role, in the order `configs` lists them."""
    shapes = [(pool.role, pool.shape) for pool in parallel.pools]
    replicas = [pool.replicas for pool in parallel.pools]
    found = []
    for config in configs:
        if config.mode != parallel.mode or not config.supports(backend) or [(p.role, p.shape) for p in config.pools] != shapes:
            continue
        if sum(abs(pool.replicas - count) for pool, count in zip(config.pools, replicas)) == 1:
            found.append(config)
    return found


def origins(ledger: Sequence[Candidate], shape_of: Callable[[Candidate], Hashable | None]) -> list[Candidate]:
    """The candidates to step from: the best full-fidelity result of each of the STEP_SHAPES best
    shapes (`shape_of`: a candidate's worker shapes and backend; None where it cannot step), each
    within STEP_MARGIN of the best, best first (ties in ledger order)."""
    best: dict[Hashable, Candidate] = {}
    for candidate in ledger:
        shape = shape_of(candidate)
        if candidate.status != "feasible" or candidate.score is None or shape is None:
            continue
        if shape not in best or candidate.score > best[shape].score:  # type: ignore[operator]
            best[shape] = candidate
    leaders = sorted(best.values(), key=lambda candidate: -candidate.score)[:STEP_SHAPES]  # type: ignore[operator]
    if not leaders:
        return []
    top = leaders[0].score
    return [candidate for candidate in leaders if candidate.score >= top - STEP_MARGIN * abs(top)]  # type: ignore[operator]
