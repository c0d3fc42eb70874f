"""Which waiting replay a free worker takes: the one of the branch with the most replay time
left, so that the branches end together instead of one of them replaying alone at the end.

A branch alone asks with only its own previous ask's replays running (each ask knows the results
of the ask two before it, docs/search.md step 5): when those finish before its next ask is
chosen, or wait on one long replay, workers sit idle. With the pool handing replays out in the
order they were asked, the agg branch of benchmarks/peer/s3.yaml (short replays, about a fifth of the replay time) ran
ahead and ended while the disagg branch had half its asks to go. Which replay runs first never
changes what an ask knows, so the ledger is the same either way.

The replays are held here and handed to the pool one per free worker, from the pool's own
completion callbacks, so a worker that frees up while the study asks is not left waiting for it.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from typing import Any, Callable, Hashable

from spica.search.pool import EvaluationPool, pass_on

log = logging.getLogger(__name__)


class Feeder:
    """Holds replays and hands them to `pool` as its workers free up, the one whose `tag` has the
    highest `priority(tag)` first (ties: in the order submitted). `submit` returns futures at
    once; each is settled with its replay's outcome."""

    def __init__(self, pool: EvaluationPool, priority: Callable[[Hashable], float]) -> None:
        self.pool = pool
        self.workers = pool.workers
        self._priority = priority
        # one worker, or a pool whose items are better sent as one batch (a SLURM job array): passed straight through
        self._passes_through = self.workers <= 1 or not getattr(pool, "instant_handoff", False)
        self._lock = threading.Lock()
        self._held: list[tuple[Hashable, Callable[[Any], Any], Any, Future]] = []
        self._running = 0
        self._closed = False

    def submit(self, fn: Callable[[Any], Any], items: list[Any], tag: Hashable) -> list[Future]:
        if self._passes_through:
            return self.pool.submit(fn, items)
        futures = [Future() for _ in items]
        with self._lock:
            closed = self._closed
            if not closed:
                self._held.extend((tag, fn, item, future) for item, future in zip(items, futures))
        if closed:
            for future in futures:
                future.cancel()
        self._feed()
        return futures

    @property
    def hands_out(self) -> bool:
        """Whether replays wait here for a free worker (a pool of this machine's processes), or go
        straight to the pool (one worker, or a SLURM array, whose tasks have cores of their own)."""
        return not self._passes_through

    def narrow(self, workers: int) -> int:
        """From now on, at most `workers` replays at a time (those running go on): a search's
        confirmations against a time budget, spica/search/rounds.py. Returns the width it set."""
        with self._lock:
            self.workers = max(1, min(self.workers, workers))
            return self.workers

    def drop_held(self) -> None:
        """Cancel what is held, and go on taking replays (a search's confirmations, after its rounds)."""
        with self._lock:
            held, self._held = self._held, []
        for *_, future in held:
            future.cancel()

    def close(self) -> None:
        """Hand nothing more to the pool; what is held is cancelled."""
        with self._lock:
            self._closed = True
        self.drop_held()

    def _feed(self) -> None:
        while True:
            with self._lock:
                if self._closed or not self._held or self._running >= self.workers:
                    return
                ranks = self._ranks({entry[0] for entry in self._held})
                index = max(range(len(self._held)), key=lambda i: (ranks[self._held[i][0]], -i))
                _, fn, item, proxy = self._held.pop(index)
                self._running += 1
            try:
                inner = self.pool.submit(fn, [item])[0]
            except Exception as exc:  # a dead pool: the loop reads it from the future
                with self._lock:
                    self._running -= 1
                proxy.set_exception(exc)
                continue
            inner.add_done_callback(lambda done, proxy=proxy: self._settle(done, proxy))

    def _ranks(self, tags: set[Hashable]) -> dict[Hashable, float]:
        """Each tag's priority; all equal (the order submitted) if the estimate fails: it only
        orders the replays, and runs in the pool's thread, where an error would go unseen."""
        try:
            return {tag: float(self._priority(tag)) for tag in tags}
        except Exception:  # noqa: BLE001 - see above
            log.debug("replay priority failed; handing replays out in order", exc_info=True)
            return dict.fromkeys(tags, 0.0)

    def _settle(self, inner: Future, proxy: Future) -> None:
        """In the pool's thread: the free worker's next replay first, then the result (always)."""
        with self._lock:
            self._running -= 1
        try:
            self._feed()
        finally:
            pass_on(inner, proxy)
