"""Errors a search can end with that are not config mistakes (those are ConfigError)."""


class SpicaError(RuntimeError):
    """A search that cannot go on; the message says why and what to change."""


class DeadPoolError(SpicaError):
    """The evaluation worker pool died (usually a script without a main guard)."""
