"""Python's garbage collector in Spica's own processes (the command, the results writer).

A search process imports ~4,000 modules and opens its studies before the first round: hundreds of
thousands of objects that live as long as it does, and not one cycle among them to free. With
Python's default thresholds (700, 10, 10) every quarter the old generation grows by sets off a full
collection of it, five of them in the start-up of a search of benchmarks/peer/s1.yaml, 0.35 s of its
main thread (measured with gc.callbacks). Raising the thresholds leaves those passes for later, when
there is garbage.
"""

from __future__ import annotations

import gc

THRESHOLDS = (100_000, 20, 20)
"""A young collection per 100,000 net allocations, not 700; a full one per 400 of those."""


def collect_less() -> None:
    gc.set_threshold(*THRESHOLDS)
