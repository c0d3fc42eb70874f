"""Kept draws: a replay that varies run to run, told again whenever the same one is asked for.

Dynamo's KV router chooses among equally good workers, and samples at a router temperature
above 0, without a seed that Replay exposes, so a kv_router candidate's replay is one draw of a
random process: replayed again it gives other metrics, a study told other values asks other
questions, and a seeded search ends on another deployment. Telling the study rounder values
does not stop that (any rounding has edges a draw can fall either side of; docs/search.md,
"Why kv_router draws are kept"). So each draw is kept, under what it depends on: the candidate
(its key), the plan's scores fingerprint (traffic, goal, timing, versions, trace, calibration)
and Spica's own source. A search that needs the same draw again (the search's own replay is
draw 0, the spread's are 1 and 2: spica/search/spread.py) is told the kept one.

round_robin replays are identical run to run and are never kept, so their cost stays in every
timing figure. Failures and overruns are not kept either: they depend on the machine, not the draw.

One JSON line per draw in `<folder>/<digest>.jsonl`; the first line for a (key, draw) wins, so
two searches drawing at once agree from then on.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import json
import logging
import tempfile
from pathlib import Path
from typing import Any, Mapping

from spica.config import ConfigError
from spica.core.paths import cache_root
from spica.evaluation.evaluate import Evaluation

log = logging.getLogger(__name__)

KEPT_STATUSES = ("feasible", "infeasible")
CACHE = "cache"  # the default folder: ${SPICA_CACHE_DIR:-~/.cache/spica}/draws
OFF = "off"  # every run draws afresh


def varies_run_to_run(unrolled: Mapping[str, Any]) -> bool:
    return unrolled.get("router_mode") == "kv_router"


@functools.cache
def source_digest() -> str:
    """Spica's own source, so a kept draw is never told to code that would score it otherwise."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


class Draws:
    """The kept draws of one plan's scores fingerprint, in `folder` (read once, appended to)."""

    def __init__(self, folder: str | Path, scores_fingerprint: str) -> None:
        self.folder = Path(folder)
        name = hashlib.sha256(f"{scores_fingerprint}:{source_digest()}".encode()).hexdigest()[:24]
        self.path = self.folder / f"{name}.jsonl"
        self._kept: dict[tuple[str, int], dict[str, Any]] = {}
        try:
            lines = self.path.read_text(errors="replace").splitlines()
        except OSError:
            lines = []
        for line in lines:
            try:
                record = json.loads(line)
                self._kept.setdefault((str(record["key"]), int(record["draw"])), dict(record["evaluation"]))
            except (ValueError, TypeError, KeyError):  # a line torn by an interruption
                continue

    @classmethod
    def at(cls, setting: str | None, scores_fingerprint: str) -> Draws | None:
        """`evaluation.draws`: "cache" (the default folder), "off" (None: draw afresh) or a folder."""
        if setting in (None, OFF):
            return None
        if not setting.strip():
            raise ConfigError([f"evaluation.draws: empty; give {CACHE}, a folder, or {OFF}"])
        folder = cache_root() / "draws" if setting == CACHE else Path(setting)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            tempfile.TemporaryFile(dir=folder).close()
        except OSError as exc:
            raise ConfigError([f"evaluation.draws: {folder} cannot hold kept draws ({exc.strerror or exc}); "
                               f"choose another folder, or {OFF} to draw afresh"]) from None
        return cls(folder, scores_fingerprint)

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: str, draw: int) -> Evaluation | None:
        kept = self._kept.get((key, draw))
        return Evaluation(**kept) if kept is not None else None

    def keep(self, key: str, draw: int, unrolled: Mapping[str, Any], evaluation: Evaluation) -> None:
        """Keep a replay's result if it is a draw (a kv_router candidate's feasible or
        infeasible result, not an overrun) and no draw is kept for it yet."""
        overran = (evaluation.reason or "").startswith("exceed runtime")
        if not varies_run_to_run(unrolled) or evaluation.status not in KEPT_STATUSES or overran or (key, draw) in self._kept:
            return
        record = dataclasses.asdict(evaluation)
        self._kept[(key, draw)] = record
        line = json.dumps({"key": key, "draw": draw, "evaluation": record}, default=str) + "\n"
        try:
            with self.path.open("a+b") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)  # one line at a time from searches drawing at once
                if handle.seek(0, 2) > 0:
                    handle.seek(-1, 2)
                    if handle.read(1) != b"\n":
                        line = "\n" + line  # close a line torn by an interruption
                handle.write(line.encode())
        except OSError as exc:  # the disk filled up since the folder was checked: told in this run only
            log.warning("%s: a kv_router draw could not be kept (%s)", self.path, exc.strerror or exc)
