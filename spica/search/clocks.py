"""Where a search's time went: the optimizer's choosing, and the pool's workers left without a
replay. Both go to summary.json's timings and under the results table, and
benchmarks/bench_search.py reports them per scenario."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator


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


IDLE_PHASES = ("asking", "waiting", "finishing")
"""What the search was doing while a worker sat idle: a study was choosing the next round
(asking); every branch was waiting for results due before its next ask (waiting); no ask was
left and the last replays were running (finishing)."""


class WorkerClock:
    """Worker-seconds without a replay, from the first replay handed out to the last one back,
    by IDLE_PHASES. A worker is busy while it holds a replay: of the replays handed out and not
    yet back, as many as there are workers run, the rest wait in the pool's queue.

    Also the CPU cores' seconds with neither a replay nor an ask on them (`idle_cores`): idle
    workers overstate what the machine lost where a pool has more workers than cores (upstream's
    GLM-5 study, examples/glm5_b200_72.yaml: 8 on 2 cores, every core busy while two of them still replay), and while a
    study asks, which runs on a core of its own in this process (S3, benchmarks/peer/s3.yaml: 2 workers on 2 cores, seeds
    1 and 2: idle workers 8.0 % and 5.0 %, the machine's idle time read from /proc/stat 4.6 % and
    3.4 %, of which the replays after the last ask 4.1 % and 3.1 %).

    A pool narrowed to fewer workers (a budgeted search's confirmations, spica/search/rounds.py)
    counts only those from then on: the workers it leaves empty on purpose are not idle; their
    seconds are `left_empty`, taken out of the workers' time the shares are of."""

    def __init__(self, workers: int, now: Callable[[], float] = time.monotonic, cores: int | None = None) -> None:
        self.workers = workers
        self.width = workers  # the workers a replay may be handed to now
        self.cores = cores or _usable_cores()
        self.idle = dict.fromkeys(IDLE_PHASES, 0.0)
        self.left_empty = 0.0
        self.idle_cores = 0.0
        self._now = now
        self._lock = threading.Lock()
        self._out = 0
        self._since: float | None = None  # None before the first replay and after the last
        self._phase = "waiting"

    @property
    def idle_seconds(self) -> float:
        return sum(self.idle.values())

    def handed_out(self, future: Future) -> None:
        with self._lock:
            self._step()
            self._since = self._since if self._since is not None else self._now()
            self._out += 1
        future.add_done_callback(self._back)

    def narrow(self, width: int) -> None:
        """From now on, only `width` workers are handed replays."""
        with self._lock:
            self._step()
            self.width = width

    def phase(self, name: str) -> None:
        """From now on, the search is `name` (one of IDLE_PHASES)."""
        with self._lock:
            self._step()
            self._phase = name
            if self._out == 0 and name == "finishing":
                self._since = None

    def _back(self, _: Future) -> None:
        with self._lock:
            self._step()
            self._out -= 1
            if self._out == 0 and self._phase == "finishing":
                self._since = None

    def _step(self) -> None:
        if self._since is None:
            return
        now = self._now()
        self.left_empty += (self.workers - self.width) * (now - self._since)
        self.idle[self._phase] += max(0, self.width - self._out) * (now - self._since)
        busy = self._out + (self._phase == "asking")
        self.idle_cores += max(0, min(self.width, self.cores) - busy) * (now - self._since)
        self._since = now


def _usable_cores() -> int:
    """The cores this process may run on (its affinity on Linux, where a SLURM step or a container
    can narrow it); elsewhere the machine's."""
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity else os.cpu_count() or 1
