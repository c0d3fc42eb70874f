"""What a search returns: the best candidates with everything needed to report on them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from spica.core.candidate import Candidate

if TYPE_CHECKING:  # the plan imports the config stack; its type is all this module needs
    from spica.plan import Plan


class SearchResults(list[Candidate]):
    """Best-first candidates (scalar goal) or the Pareto front, plus the full ledger and tallies."""

    def __init__(self, best: list[Candidate], ledger: list[Candidate], tallies: dict[str, int], results_dir: Path | None, plan: Plan):
        super().__init__(best)
        self.ledger = ledger
        self.tallies = tallies
        self.results_dir = results_dir
        self.plan = plan
