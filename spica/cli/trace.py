"""`spica trace inspect FILE`: what a trace holds before a search replays it, read by the same
one pass that checks it (spica/workloads/summary.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from spica.core.console import tell
from spica.core.errors import UserError
from spica.workloads.registry import TRACE_FORMATS
from spica.workloads.summary import Spread, TraceSummary, check_trace


def cmd_trace(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="spica trace", description="Look at a trace file.")
    actions = parser.add_subparsers(dest="action", required=True, metavar="inspect")
    inspect = actions.add_parser(
        "inspect", help="summarise a trace: requests, duration, rate, lengths, prefix reuse, sessions",
        description="Summarise a trace as Replay will read it: requests, duration, mean rate, input and output "
        "lengths (min/p50/p90/max), prefix reuse (the share of hash blocks an earlier request already had) and sessions. "
        "A file Replay cannot use is one line naming its first bad line, exit 2.",
    )
    inspect.add_argument("file", metavar="FILE")
    inspect.add_argument("--format", default="mooncake", choices=TRACE_FORMATS, help="its trace format (default: %(default)s)")
    inspect.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        summary = check_trace(args.file, args.format)
    except OSError as exc:
        raise UserError(f"{args.file}: cannot be read ({exc.strerror or exc})") from None
    text = json.dumps(summary.as_dict(), indent=2) if args.json else describe(args.file, summary)
    tell(sys.stdout, text + "\n")


def describe(path: str, summary: TraceSummary) -> str:
    """The figures as a few aligned lines for a terminal."""
    rate = f"{summary.mean_rate_rps:,.2f} requests/s" if summary.mean_rate_rps is not None else "– (one instant)"
    timing = " (earliest starts: requests wait on others)" if summary.agentic else ""
    rows = [
        ("file", f"{path} ({summary.trace_format})"),
        ("requests", f"{summary.requests:,}"),
        ("duration", f"{summary.duration_ms / 1000:,.3f} s{timing}"),
        ("mean rate", rate),
        ("input tokens", _spread(summary.isl)),
        ("output tokens", _spread(summary.osl)),
        ("prefix reuse", f"{summary.prefix_reuse:.1%} of {summary.hash_blocks:,} hash blocks seen before"),
        ("sessions", (f"{summary.sessions:,}" if summary.sessions else "none (every request stands alone)")
                     + (" (agentic: Replay runs it open loop only)" if summary.agentic else "")),
    ]
    return "\n".join(f"{name:<14} {value}" for name, value in rows)


def _spread(spread: Spread) -> str:
    return f"min {spread.min:,}  p50 {spread.p50:,}  p90 {spread.p90:,}  max {spread.max:,}  mean {spread.mean:,.1f}"
