"""An SLA as every layer reads it: TTFT, ITL and end-to-end bounds in ms, None = unbounded. The
config's goal.sla is one; the Replay call and the Planner's config take any."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class SlaLike(Protocol):
    """Any SLA holder (e.g. the config's goal.sla)."""

    @property
    def ttft_ms(self) -> float | None: ...
    @property
    def itl_ms(self) -> float | None: ...
    @property
    def e2e_ms(self) -> float | None: ...


@dataclass(frozen=True)
class SlaBounds:
    """An SLA given by its bounds alone."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    e2e_ms: float | None = None
