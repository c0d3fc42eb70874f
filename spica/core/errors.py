"""The errors Spica raises on purpose, under one base; anything else is a bug.

- UserError: input the user can fix (a config, an override, a trace, a plan, a model or SKU
  the search cannot price). Printed as its lines, exit 2, before any work where possible.
- SearchError: a search that cannot go on (its worker pool died); the message says what to change.
A bug raises anything else: the command prints its traceback and asks for a report, exit 1 —
never "invalid input".
"""

from __future__ import annotations

from typing import Sequence


class SpicaError(Exception):
    """Base of every error Spica raises on purpose."""


class UserError(SpicaError, ValueError):
    """Something the user can fix; `lines` holds one message per problem."""

    def __init__(self, lines: str | Sequence[str]):
        self.lines = [lines] if isinstance(lines, str) else list(lines)
        super().__init__("\n".join(self.lines))


class SearchError(SpicaError, RuntimeError):
    """A search that cannot go on; the message says why and what to change."""


class DeadPoolError(SearchError):
    """The evaluation worker pool died (usually a script without a main guard)."""
