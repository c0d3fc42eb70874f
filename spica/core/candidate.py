"""The candidate record: one measured deployment, as the search keeps it, the ledger writes it and
upstream scripts read it (spica.config exports it under upstream's name)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Mapping

from spica.core.unrolled import Unrolled

STATUSES = ("feasible", "infeasible", "failed", "unsupported", "screened")
TRANSIENT_REASONS = ("worker_lost", "worker_crashed", "timing_cache")
"""Failure categories that say nothing about the candidate (its process died, or its timing cache
was removed, under it): such a candidate is measured again when the run resumes, instead of being reused as failed."""


@dataclass
class Candidate:
    """One measured deployment: what it is (unrolled), how it did (metrics), where it came from."""

    key: str
    branch: str
    round: int
    status: str
    unrolled: dict[str, Any]
    reason: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    score: float | None = None
    objectives: dict[str, float] = field(default_factory=dict)
    replay_input: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    plan_fingerprint: str = ""
    scores_fingerprint: str = ""  # what its result depends on beyond itself (Plan.scores_fingerprint)
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return self.status == "feasible"

    @property
    def scored(self) -> bool:
        """Feasible, or feasible in a screening replay (spica/evaluation/screening.py): objectives a study learns from."""
        return self.status in ("feasible", "screened")

    @property
    def transient(self) -> bool:
        return self.status == "failed" and (self.reason or "").split(":", 1)[0] in TRANSIENT_REASONS

    def spread_percent(self, objective: str) -> float | None:
        """± half the objective's range over repeated replays (spica/search/spread.py), as a
        percentage of its value; None when it was not replayed again."""
        spread = self.provenance.get("spread", {}).get("objectives", {}).get(objective)
        value = self.objectives.get(objective)
        if not spread or not value:
            return None
        return (spread[1] - spread[0]) / 2 / abs(value) * 100

    def overran_before(self, cap_seconds: float | None) -> bool:
        """An "exceed runtime" result that a longer (or no) time cap might turn into a score."""
        overran = self.status == "infeasible" and (self.reason or "").startswith("exceed runtime")
        return overran and (cap_seconds is None or cap_seconds > self.seconds)

    @property
    def config(self) -> dict[str, Any]:
        """The unrolled sample (upstream's name for it): one flat dict with upstream's keys."""
        return self.unrolled

    @property
    def used_gpus(self) -> int:
        return int(self.unrolled.get("used_gpus", 0))

    @cached_property
    def view(self) -> Unrolled:
        """The unrolled sample, typed (spica/core/unrolled.py); read once per candidate."""
        return Unrolled.of(self.unrolled)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Candidate":
        return cls(**dict(data))

    def label(self) -> str:
        """A short human description: mode, backend and shape (and each role's GPU when they differ)."""
        return self.view.label

    @property
    def group(self) -> str:
        """Its colour in plots: mode and backend, and its system where the search chose one among several."""
        view = self.view
        return f"{view.mode} {view.backend}" + (f" @{'/'.join(view.hardware_skus)}" if view.pinned_hardware else "")
