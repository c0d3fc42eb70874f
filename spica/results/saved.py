"""A results folder read back from its own files: what report.html and `spica compare` show.

Only the folder's files are read (summary.json, ledger.json, plan.yaml), never the trace or the
installed versions, so a folder copied to another machine or committed to git still opens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from spica.core.candidate import Candidate
from spica.core.errors import UserError

FILES = ("summary.json", "ledger.json", "plan.yaml")


@dataclass(frozen=True)
class SavedSearch:
    folder: Path
    summary: dict[str, Any]
    ledger: list[Candidate]
    plan: dict[str, Any]
    plan_text: str

    @classmethod
    def load(cls, folder: str | Path) -> "SavedSearch":
        """One line naming the folder and what is wrong when it is no (complete) results folder."""
        folder = Path(folder)
        if not folder.is_dir():
            raise UserError(f"{folder}: not a folder")
        missing = [name for name in FILES if not (folder / name).is_file()]
        if missing:
            raise UserError(f"{folder}: not a finished Spica results folder (no {', '.join(missing)}); "
                            "a search writes them when it ends, and the same command resumes an interrupted one")
        try:
            summary = json.loads((folder / "summary.json").read_text())
            rows = json.loads((folder / "ledger.json").read_text())
            plan_text = (folder / "plan.yaml").read_text()
            plan = yaml.safe_load(plan_text)
            ledger = [Candidate.from_dict(row) for row in rows]
        except (OSError, ValueError, TypeError, yaml.YAMLError) as exc:
            raise UserError(f"{folder}: its results files cannot be read ({type(exc).__name__}: {str(exc)[:120]})") from None
        if not isinstance(summary, dict) or "goal" not in summary or not isinstance(plan, dict):
            raise UserError(f"{folder}: summary.json has no goal (written by an earlier Spica); "
                            "run the same search again into this folder: it reuses every finished replay and rewrites the results")
        return cls(folder, summary, ledger, plan, plan_text)

    @property
    def goal(self) -> dict[str, Any]:
        return self.summary["goal"]

    @property
    def selected(self) -> list[Candidate]:
        """The ranked selection (scalar goal) or the front, in the order the table shows it."""
        by_key = {candidate.key: candidate for candidate in self.ledger}
        return [by_key[key] for key in self.summary.get("selected", []) if key in by_key]

    def deploy_folder(self, rank: int, candidate: Candidate) -> str | None:
        """The selected candidate's deploy/NN-<key> folder, relative to the results folder."""
        name = f"deploy/{rank:02d}-{candidate.key}"
        return name if (self.folder / name).is_dir() else None
