"""How the lines the command prints itself (not its log lines: logging drops what it cannot write)
reach their reader."""

from __future__ import annotations

import sys
from typing import TextIO


def tell(stream: TextIO | None, text: str) -> bool:
    """Writes `text` and flushes it; False, and nothing raised, when that fails: the stream's
    reader has gone (a pipe whose reader ended: a closed terminal, `| head`, a dead parent), or
    there is no stream (the command started with it closed). Such a line is only for that
    reader, so losing it must not stop a search, or keep a stopped one from exiting."""
    if stream is None:
        return False
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # ValueError: the file object itself was closed
        return False
    return True


def flush_output() -> None:
    """What stdout and stderr still hold, written out before a process exits without interpreter
    finalization (os._exit), unless their reader has gone (`tell`)."""
    for stream in (sys.stdout, sys.stderr):
        tell(stream, "")
