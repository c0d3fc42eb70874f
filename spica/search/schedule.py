"""How a branch's rounds are cut into asks, and by which ask each suggestion is due: arithmetic on
the sweep alone, so a plan asks the same questions on any executor.

An ask brings a round's suggestions, or where the round is wider than the pool as many as the
pool has workers, the round asked in parts (asked later, its last suggestions know its first
ones' results); the last round is asked whole, so that its replays reach the pool at once. Each
suggestion is due by the ask two after its own, so the next ask is asked while this one
replays. Where the branches' rounds together fit the pool, a costly suggestion is due later, by
its cost (later_rounds), so that one slow replay does not hold back the tells behind it while
the other workers run dry. The measurements behind each choice: docs/search.md, "Why step 5
runs this way".
"""

from __future__ import annotations

from dataclasses import dataclass

from spica.config import SweepConfig

LATEST_DUE = 8
"""The most rounds after its own ask a deferred replay may be due (an ordinary one: 2), however
costly: the asks in between know nothing of it."""



def defers(sweep: SweepConfig, branches: int) -> bool:
    """Whether a round's costlier suggestions are deferred: where the branches' rounds, which
    share the pool, do not outnumber its workers (why: this module's docstring)."""
    return sweep.parallel_evals >= sweep.per_round * branches


def ask_size(sweep: SweepConfig) -> int:
    """How many suggestions one ask brings: a round's, or where the round is wider than the pool
    (candidates_per_round > parallel_evals), as many as the pool has workers, the round asked in
    parts (why: this module's docstring). The plan's numbers, not the pool's, decide it, so a plan
    asks the same questions on any executor."""
    return min(sweep.per_round, sweep.parallel_evals)


@dataclass(frozen=True)
class AskSlot:
    """Where an ask falls: its round, the round's suggestions before it, and how many it brings."""

    round: int
    first: int
    size: int


def ask_slot(sweep: SweepConfig, index: int, rounds: int | None) -> AskSlot | None:
    """A branch's ask number `index` (None: past its last): each round in parts of ask_size, but
    the last of `rounds` rounds asked whole, so that its replays reach the pool at once, costliest
    first, and the search does not end on one long replay asked last with the other workers dry
    (why: this module's docstring). `rounds` None: no last round (an exhaustive study, asked until
    it runs dry)."""
    width = ask_size(sweep)
    parts = -(-sweep.per_round // width)
    round_index, part = divmod(index, parts)
    if rounds is not None and round_index >= rounds - 1:
        return AskSlot(rounds - 1, 0, sweep.per_round) if index == (rounds - 1) * parts else None
    first = part * width
    return AskSlot(round_index, first, min(width, sweep.per_round - first))


def ask_sizes(sweep: SweepConfig) -> tuple[int, ...]:
    """The sizes of a branch's asks over max_rounds rounds, in order."""
    sizes: list[int] = []
    while (slot := ask_slot(sweep, len(sizes), sweep.max_rounds)) is not None:
        sizes.append(slot.size)
    return tuple(sizes)


def most_pending(sweep: SweepConfig, branches: int) -> int:
    """How many of a branch's own suggestions (followers aside) may still be untold when it
    asks: the previous ask's, and of each earlier round up to LATEST_DUE all but its cheapest."""
    n = ask_size(sweep)
    return n + ((LATEST_DUE - 2) * (n - 1) if defers(sweep, branches) else 0)


def later_rounds(costs: list[int | None]) -> list[int]:
    """Per suggestion, how many rounds after the rest of its round it is due: one per unit cost
    (the round's cheapest) it takes beyond the first (cost / unit, rounded, less one), so a replay
    is due by about the time its worker would be done with it; at most LATEST_DUE - 2. None later
    where a cost is unknown (a trace)."""
    if not costs or any(cost is None for cost in costs):
        return [0] * len(costs)
    unit = max(min(costs), 1)
    return [min(LATEST_DUE - 2, max(0, int(cost / unit + 0.5) - 1)) for cost in costs]
