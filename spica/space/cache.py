"""A small persistent JSON cache for search-space facts that cost AI Configurator calls.

One file per key under ${SPICA_CACHE_DIR:-~/.cache/spica}/space/, named by a hash of the key.
The key always carries the installed aiconfigurator version, so an upgrade never reads stale
numbers. Writes are atomic (temp file + rename) so concurrent workers at worst redo work.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from spica.core.paths import cache_root

_memory: dict[str, dict[str, Any]] = {}




def _path(key: Mapping[str, Any]) -> tuple[str, Path]:
    text = json.dumps(key, sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:32]
    return text, cache_root() / "space" / f"{digest}.json"


def load(key: Mapping[str, Any]) -> dict[str, Any]:
    """Entries stored under `key` (empty when absent, unreadable or written for another key)."""
    text, path = _path(key)
    memo_key = f"{path}|{text}"
    if memo_key in _memory:
        return dict(_memory[memo_key])
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if stored.get("key") != json.loads(text):
        return {}
    entries = dict(stored.get("entries", {}))
    _memory[memo_key] = entries
    return dict(entries)


def atomic_write_text(path: Path, text: str) -> None:
    """Write `path` whole or not at all (temp file + rename): readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def store(key: Mapping[str, Any], entries: Mapping[str, Any]) -> None:
    """Merge `entries` into what is stored under `key`."""
    text, path = _path(key)
    merged = {**load(key), **entries}
    atomic_write_text(path, json.dumps({"key": json.loads(text), "entries": merged}, sort_keys=True))
    _memory[f"{path}|{text}"] = merged


def forget_in_process() -> None:
    """Drop the in-process copy so the next load reads disk (benchmarks, tests)."""
    _memory.clear()
