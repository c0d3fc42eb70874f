"""A trace read once: checked (the first bad line named) and summed up, remembered per file version.

The config checks a trace before any search work (Replay would otherwise fail every candidate
the same way, and the search end with "0 feasible"), the search warns about requests longer than
the context, and `spica trace inspect` prints the figures; all three read this one pass.
"""

from __future__ import annotations

import functools
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from spica.workloads.registry import read
from spica.workloads.trace import MAX_REPLAY_REQUESTS, TraceError


@dataclass(frozen=True)
class Spread:
    """min / p50 / p90 / max / mean of one length over the requests (nearest-rank percentiles)."""

    min: int
    p50: int
    p90: int
    max: int
    mean: float

    @classmethod
    def of(cls, values: Sequence[int]) -> "Spread":
        ordered = sorted(values)

        def rank(share: float) -> int:
            return ordered[max(0, math.ceil(share * len(ordered)) - 1)]

        return cls(ordered[0], rank(0.5), rank(0.9), ordered[-1], sum(ordered) / len(ordered))


@dataclass(frozen=True)
class TraceSummary:
    trace_format: str
    requests: int
    longest_request_tokens: int  # input_length + output_length of the longest request
    longest_request_line: int  # its line number (the first, if several)
    duration_ms: float  # first to last arrival (for requests that wait on others: earliest start)
    isl: Spread
    osl: Spread
    hash_blocks: int  # hash ids over every prompt
    reused_blocks: int  # of them, ids an earlier request already had
    sessions: int  # distinct sessions (0: the format or the trace names none)
    agentic: bool  # some requests wait on others: Replay runs it open loop only

    @property
    def mean_rate_rps(self) -> float | None:
        return self.requests / (self.duration_ms / 1000.0) if self.duration_ms > 0 else None

    @property
    def prefix_reuse(self) -> float:
        return self.reused_blocks / self.hash_blocks if self.hash_blocks else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean_rate_rps": self.mean_rate_rps, "prefix_reuse": self.prefix_reuse}


def check_trace(path: str | Path, trace_format: str = "mooncake") -> TraceSummary:
    path = Path(path)
    stat = path.stat()
    return _summarize(str(path), trace_format, stat.st_mtime_ns, stat.st_size)


def warn_if_longer_than(path: str | Path, context: int, context_name: str, trace_format: str = "mooncake") -> None:
    """Real traces hold a few requests longer than the context: said, not refused. A deployed
    engine refuses them; Replay serves them, and on the 15-minute Mooncake trace (160 of its 2,728
    requests exceed Qwen3-32B's 40,960 tokens) one such request held a disagg candidate's replay
    past the 600 s time cap, while the trace without them replayed in 2.4 s."""
    trace = check_trace(path, trace_format)
    if trace.longest_request_tokens > context:
        logging.getLogger("spica.config").warning(
            "workload.trace_path: line %d holds a request of %d tokens (input_length + output_length, the trace's longest), "
            "longer than %s %d: Replay serves such requests, a deployed engine refuses them, and they can keep a replay "
            "running until sweep.max_eval_seconds",
            trace.longest_request_line, trace.longest_request_tokens, context_name, context,
        )


@functools.lru_cache(maxsize=16)
def _summarize(path: str, trace_format: str, mtime_ns: int, size: int) -> TraceSummary:
    inputs: list[int] = []
    outputs: list[int] = []
    seen: set[int] = set()
    sessions: set[str] = set()
    longest, longest_line, first, last, blocks, reused, agentic = 0, 0, math.inf, -math.inf, 0, 0, False
    for request in read(path, trace_format):
        if len(inputs) == MAX_REPLAY_REQUESTS:
            raise TraceError(f"{path}: more than {MAX_REPLAY_REQUESTS:,} requests; replay a slice of it")
        inputs.append(request.input_length)
        outputs.append(request.output_length)
        if request.input_length + request.output_length > longest:
            longest, longest_line = request.input_length + request.output_length, request.line
        first, last = min(first, request.time_ms), max(last, request.time_ms)
        blocks += len(request.hash_ids)
        reused += sum(1 for block in request.hash_ids if block in seen)
        seen.update(request.hash_ids)
        if request.session is not None:
            sessions.add(request.session)
        agentic = agentic or request.waits
    if not inputs:
        raise TraceError(f"{path}: holds no request read as a {trace_format} trace (--format / workload.trace_format)")
    return TraceSummary(trace_format, len(inputs), longest, longest_line, last - first, Spread.of(inputs), Spread.of(outputs),
                        blocks, reused, len(sessions), agentic)
