"""Loggers muted for a block: a library (or Spica's own enumeration) that says the same thing for
each of thousands of items, where the caller reports it once."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def quieted(names: list[str], level: int = logging.ERROR) -> Iterator[None]:
    """Each logger in `names` (and its children that keep no level of their own) at `level` for the block."""
    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(level)
    try:
        yield
    finally:
        for logger, previous in zip(loggers, levels):
            logger.setLevel(previous)
