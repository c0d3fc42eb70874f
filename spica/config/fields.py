"""The field types and base model every block of the config shares.

Numbers are strict: `true` is not 1, and infinity or NaN is never a valid bound. A model is
frozen and refuses unknown keys, so a valid config never changes after validation.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict

Int = Annotated[int, Strict()]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
PositiveNumber = Annotated[float, Field(gt=0.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]
Flag = Annotated[bool, Strict()]


class Frozen(BaseModel):
    """Unknown keys refused; a validated model never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def unique(values: list[Any]) -> list[Any]:
    """`values` unchanged, or the first one listed twice named (a list knob holds distinct values)."""
    seen: list[Any] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{str(value) if isinstance(value, StrEnum) else value!r} is listed twice")
        seen.append(value)
    return values
