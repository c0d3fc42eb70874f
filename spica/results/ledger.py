"""The ledger: every candidate a search measured, lossless, written as it goes.

Each evaluation is appended to `evaluations.jsonl` the moment it finishes, so an interrupted
run loses nothing and a resumed run reuses every finished replay; `asks.jsonl` beside it keeps
what the studies' designers answered, so that it also skips their work. `ledger.json` and
`ledger.csv` are the complete views written at the end; top-N and the front are views of it.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from spica.config.errors import ConfigError
from spica.core.candidate import STATUSES, Candidate

log = logging.getLogger("spica.results")
MIN_FREE_MIB = 16
"""Free space a results folder must have when a search starts: a search's ledger, plots and
manifests take 1-2 MiB (benchmarks/peer/s1.yaml), so 16 MiB leaves room for larger ones and their journals."""
PROBE_BYTES = 64 * 1024  # written for real (and synced): an empty probe file is created even on a full disk


def ensure_results_folder(folder: Path) -> None:
    """The results folder exists, takes files and has room for them, checked before any work
    (a read-only folder, a file, a path under a file or a full disk is a one-line error, not a
    failure after the first replay)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        space = os.statvfs(folder)
        free = space.f_bavail * space.f_frsize
        if space.f_blocks and free < MIN_FREE_MIB * 2**20:  # f_blocks 0: a file system that does not say
            raise ConfigError([f"results_dir: {folder} has {free / 2**20:.1f} MiB free, less than the {MIN_FREE_MIB} MiB "
                               "a search needs for its results; free some space or choose another folder"])
        probe = folder / f".spica-write-check-{os.getpid()}"
        try:
            with probe.open("wb") as handle:
                handle.write(bytes(PROBE_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
        finally:
            if probe.exists():
                probe.unlink()
    except OSError as exc:
        raise ConfigError([f"results_dir: {folder} cannot hold results ({exc.strerror or exc}){_ownership_hint(folder, exc)}"]) from None


def _ownership_hint(folder: Path, exc: OSError) -> str:
    """How to fix a folder another user owns; in a container (podman sets $container) the usual
    cause is a host folder mounted without handing it to the image's user."""
    if not isinstance(exc, PermissionError):
        return ""
    existing = next((path for path in (folder, *folder.parents) if path.exists()), None)
    try:
        owner = existing.stat().st_uid if existing else None
    except OSError:
        return ""
    uid = os.getuid()
    if owner is None or owner == uid:
        return ""
    where = f"{'it' if existing == folder else existing} belongs to uid {owner}, Spica runs as uid {uid}: "
    if os.environ.get("container"):
        return f"; {where}mount the host folder with :U (podman run -v HOST:{existing}:U) or chown it to uid {uid}"
    return f"; {where}chown it to uid {uid} or choose another folder"


class Journal:
    """Append-only record of finished evaluations in a results folder (the resume source).

    A run that was killed mid-write can leave a torn last line: the next record starts on a
    new line, and lines that do not hold a record are skipped (and counted) on resume.
    """

    def __init__(self, folder: Path, fingerprint: str, scores_fingerprint: str = ""):
        self.path = folder / "evaluations.jsonl"
        self.fingerprint = fingerprint
        self.scores_fingerprint = scores_fingerprint
        self.skipped = 0
        self.foreign = 0  # records measured for another workload, goal or versions
        ensure_results_folder(folder)

    def lock(self) -> None:
        """Hold the folder for this search: a second search into it is refused, naming the holder.
        The lock is the kernel's (flock), so it ends with the process however that ends."""
        import fcntl

        path = self.path.parent / ".spica.lock"
        handle = path.open("a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            handle.close()
            raise ConfigError([f"results_dir: {self.path.parent} is in use by another search (PID {holder}); "
                               "wait for it or choose another folder"]) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
        except OSError as exc:  # the disk filled up since the folder was checked
            handle.close()
            raise ConfigError([f"results_dir: {self.path.parent} cannot hold results ({exc.strerror or exc})"]) from None
        self._lock = handle

    def unlock(self) -> None:
        handle = getattr(self, "_lock", None)
        if handle is not None:
            handle.close()  # closing the file releases the flock
            self._lock = None

    def load(self) -> list[Candidate]:
        """Finished evaluations whose results hold for this plan (the same scores fingerprint,
        or for records written before it existed, the same plan); others are counted, not used."""
        if not self.path.exists():
            return []
        found = []
        self.skipped = self.foreign = 0
        for line in self.path.read_text(errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not (isinstance(data, dict) and isinstance(data.get("unrolled"), dict) and data.get("status") in STATUSES):
                    raise ValueError("not a record")
                if self._holds(data):
                    found.append(Candidate.from_dict(data))
                else:
                    self.foreign += 1
            except (ValueError, TypeError):  # a torn line, or text that is no record
                self.skipped += 1
        if self.skipped:
            log.warning("%s: skipped %d line(s) that hold no evaluation record", self.path, self.skipped)
        if self.foreign:
            log.warning("%s: %d finished evaluation(s) were measured for another workload, goal or versions "
                        "and are not reused", self.path, self.foreign)
        return found

    def _holds(self, data: Mapping[str, Any]) -> bool:
        if data.get("scores_fingerprint"):
            return data["scores_fingerprint"] == self.scores_fingerprint
        return data.get("plan_fingerprint") == self.fingerprint

    def append(self, candidate: Candidate) -> None:
        _append_line(self.path, json.dumps(candidate.to_dict(), default=str))


class AskJournal:
    """The studies' AskRecord (spica/study/base.py) in a results folder: each answer of a designer
    appended as it is made, by its moment. A moment digests the study's definition (space, pool,
    objectives, designer, seed) and history, not the plan's sweep settings, so a resume with a
    fresh budget takes the answers back; answers made with other `versions` (the plan's) are not
    taken back. Torn lines are skipped."""

    def __init__(self, folder: Path, versions: Mapping[str, str]):
        self.path = folder / "asks.jsonl"
        self.versions = hashlib.sha256(json.dumps(dict(versions), sort_keys=True).encode()).hexdigest()[:16]
        self.recalled = 0
        self._answers: dict[str, list[dict[str, Any]]] = {}
        lines = self.path.read_text(errors="replace").splitlines() if self.path.exists() else []
        for line in lines:
            try:
                data = json.loads(line)
                if (isinstance(data, dict) and data.get("versions") == self.versions and isinstance(data.get("moment"), str)
                        and isinstance(data.get("points"), list)):
                    self._answers[data["moment"]] = data["points"]
            except ValueError:
                continue

    def recall(self, moment: str) -> list[dict[str, Any]] | None:
        points = self._answers.get(moment)
        self.recalled += points is not None
        return points

    def keep(self, moment: str, points: list[dict[str, Any]]) -> None:  # a run never meets a moment twice: the file only
        _append_line(self.path, json.dumps({"versions": self.versions, "moment": moment, "points": points}, default=str))


def _append_line(path: Path, record: str) -> None:
    """One line appended and flushed; a line torn by an interruption is closed first."""
    record += "\n"
    with path.open("a+b") as handle:
        if handle.tell() > 0:
            handle.seek(-1, 2)
            if handle.read(1) != b"\n":
                record = "\n" + record
        handle.write(record.encode())
        handle.flush()


def _flat(prefix: str, values: Mapping[str, Any]) -> dict[str, Any]:
    return {f"{prefix}{key}": value for key, value in values.items()}


def write_ledger(folder: Path, candidates: Iterable[Candidate]) -> tuple[Path, Path]:
    """ledger.json (lossless) and ledger.csv (one row per candidate, flattened columns)."""
    rows = [candidate.to_dict() for candidate in candidates]
    json_path = folder / "ledger.json"
    json_path.write_text(json.dumps(rows, indent=1, default=str))
    flat_rows = []
    for row in rows:
        flat = {key: row[key] for key in ("key", "branch", "round")}
        flat["replica_step_of"] = row["provenance"].get("replica_step_of")  # the row's shape stepped from (spica/search/replica_steps.py)
        flat.update({key: row[key] for key in ("status", "reason", "score", "seconds", "plan_fingerprint", "scores_fingerprint")})
        flat.update(_flat("objective.", row["objectives"]))
        flat.update(_flat("metric.", row["metrics"]))
        flat.update(_flat("config.", row["unrolled"]))
        flat_rows.append(flat)
    columns: list[str] = []
    for flat in flat_rows:
        columns += [column for column in flat if column not in columns]
    csv_path = folder / "ledger.csv"
    with csv_path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(flat_rows)
    return json_path, csv_path
