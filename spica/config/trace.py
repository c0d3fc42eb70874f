"""A Mooncake trace is checked in one streaming pass before any search work.

Replay would otherwise take the file and fail every candidate the same way (or abort a worker),
and the search would end with "0 feasible". Each row must be a JSON object with a `timestamp`
(ms, ≥ 0, never going back), positive integer `input_length` and `output_length`, and
`hash_ids` (integers) covering the prompt in blocks of `HASH_BLOCK_TOKENS` tokens. The first bad
row is named by its line number and field. The pass is remembered per file version.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

from spica.core.errors import UserError

HASH_BLOCK_TOKENS = 512  # Replay's default mooncake block size (`trace_block_size`)
MAX_REPLAY_REQUESTS = 1_000_000
"""Replay holds every request in memory (about 1 GB per 100,000 here): a replay, synthetic or
from a trace, is refused beyond this many requests."""


@dataclass(frozen=True)
class TraceSummary:
    requests: int
    longest_request_tokens: int  # input_length + output_length of the longest row
    longest_request_line: int  # its line number (the first, if several)


class TraceError(UserError):
    """A trace file Replay cannot use; the message names the line and the field."""


def check_trace(path: str | Path) -> TraceSummary:
    path = Path(path)
    stat = path.stat()
    return _check(str(path), stat.st_mtime_ns, stat.st_size)


def warn_if_longer_than(path: str | Path, context: int, context_name: str) -> None:
    """Real traces hold a few requests longer than the context: said, not refused. A deployed
    engine refuses them; Replay serves them, and on the 15-minute Mooncake trace (160 of its 2,728
    requests exceed Qwen3-32B's 40,960 tokens) one such request held a disagg candidate's replay
    past the 600 s time cap, while the trace without them replayed in 2.4 s."""
    trace = check_trace(path)
    if trace.longest_request_tokens > context:
        logging.getLogger("spica.config").warning(
            "workload.trace_path: line %d holds a request of %d tokens (input_length + output_length, the trace's longest), "
            "longer than %s %d: Replay serves such requests, a deployed engine refuses them, and they can keep a replay "
            "running until sweep.max_eval_seconds",
            trace.longest_request_line, trace.longest_request_tokens, context_name, context,
        )


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@functools.lru_cache(maxsize=16)
def _check(path: str, mtime_ns: int, size: int) -> TraceSummary:
    requests, longest, longest_line, previous = 0, 0, 0, -math.inf
    try:
        with open(path, encoding="utf-8") as rows:
            for number, line in enumerate(rows, 1):
                if not line.strip():
                    continue
                where = f"{path} line {number}"
                try:
                    row = json.loads(line)
                except ValueError:
                    raise TraceError(f"{where}: not a JSON object (a mooncake trace has one per line)") from None
                if not isinstance(row, dict):
                    raise TraceError(f"{where}: {line.strip()[:40]!r} is not a JSON object")
                timestamp = row.get("timestamp")
                if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)) or not math.isfinite(timestamp) or timestamp < 0:
                    raise TraceError(f"{where}: timestamp {timestamp!r} must be a number of ms ≥ 0")
                if timestamp < previous:
                    raise TraceError(f"{where}: timestamp {timestamp} goes back from {previous}; rows must be in time order")
                for field in ("input_length", "output_length"):
                    if not _positive_int(row.get(field)):
                        raise TraceError(f"{where}: {field} {row.get(field)!r} must be a positive integer")
                hash_ids = row.get("hash_ids")
                if not isinstance(hash_ids, list) or not all(isinstance(h, int) and not isinstance(h, bool) for h in hash_ids):
                    raise TraceError(f"{where}: hash_ids must be a list of integers")
                if len(hash_ids) * HASH_BLOCK_TOKENS < row["input_length"]:
                    raise TraceError(
                        f"{where}: {len(hash_ids)} hash_ids cover {len(hash_ids) * HASH_BLOCK_TOKENS} tokens, "
                        f"fewer than input_length {row['input_length']} ({HASH_BLOCK_TOKENS} tokens per block)"
                    )
                previous = timestamp
                requests += 1
                if row["input_length"] + row["output_length"] > longest:
                    longest, longest_line = row["input_length"] + row["output_length"], number
                if requests > MAX_REPLAY_REQUESTS:
                    raise TraceError(f"{path}: more than {MAX_REPLAY_REQUESTS:,} requests; replay a slice of it")
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not UTF-8 text (a mooncake trace is JSON lines)") from None
    except OSError as exc:
        raise TraceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if requests == 0:
        raise TraceError(f"{path}: holds no request")
    return TraceSummary(requests, longest, longest_line)
