"""SweepConfig: how hard to search, with the earlier names of its fields still read."""

from __future__ import annotations

import logging
from typing import Any, Literal, Mapping

from pydantic import field_validator, model_validator

from spica.config.fields import Frozen, Int, PositiveInt, PositiveNumber
from spica.study.algorithms import ALGORITHMS, VIZIER_DESIGNERS

log = logging.getLogger("spica.config")

SWEEP_ALIASES = {"seed": "random_seed", "candidate_timeout_s": "max_eval_seconds"}
"""Spica's earlier names, kept so plans and files written with them still load (with a warning)."""


class SweepConfig(Frozen):
    """How hard to search: rounds, batch size, parallelism, seed, time cap; Spica's algorithm,
    designer and timing mode beside upstream's fields."""

    max_rounds: PositiveInt = 20
    parallel_evals: PositiveInt = 16
    candidates_per_round: PositiveInt | None = None
    random_seed: Int = 1
    max_eval_seconds: PositiveNumber | None = 600.0
    max_search_seconds: PositiveNumber | None = None  # Spica's own: the search's time budget (spica/search/rounds.py)
    screen_request_ratio: PositiveNumber | Literal["auto", "off"] = "auto"  # Spica's own: screening replays' requests per client (spica/evaluation/screening.py)
    algorithm: Literal[tuple(ALGORITHMS)] = "vizier"  # type: ignore[valid-type]  # spica/study/algorithms.py
    designer: Literal[VIZIER_DESIGNERS] = "fast"  # type: ignore[valid-type]
    timing: Literal["table", "ais"] = "table"

    @field_validator("screen_request_ratio", mode="before")
    @classmethod
    def _screen_setting(cls, value: Any) -> Any:
        """auto, off (YAML's bare `off` is false), or requests per client above 0; one line otherwise."""
        if value is False or value in ("auto", "off"):
            return "off" if value is False else value
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return value
        raise ValueError(f"{value!r}: give auto, off or the requests per client of a screening replay (a number above 0)")

    @model_validator(mode="before")
    @classmethod
    def _earlier_names(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for old, new in SWEEP_ALIASES.items():
            if old not in data:
                continue
            if new in data:
                raise ValueError(f"{old} is the earlier name of {new}; give only {new}")
            log.warning("sweep.%s is deprecated: call it sweep.%s", old, new)
            data[new] = data.pop(old)
        return data

    @property
    def per_round(self) -> int:
        return self.candidates_per_round or self.parallel_evals

    @property
    def seed(self) -> int:
        """random_seed as the non-negative 32-bit seed the designers and Replay take."""
        return self.random_seed % 2**32
