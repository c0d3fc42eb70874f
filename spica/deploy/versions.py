"""Which engine version a candidate was scored for, and which one its runtime image runs.

Replay timing and KV capacity come from AI Configurator's perf data for one engine version
(the unrolled `backend_version`); the backend's runtime image (its registry entry) of the
installed ai-dynamo release runs the engine pinned by that release's extras (its package
metadata). Both are written where a user reads a result: manifest annotations, summary.json and
one line under the results table.
"""

from __future__ import annotations

from functools import cache
from importlib.metadata import requires
from typing import Any, Iterable, Mapping

from packaging.requirements import Requirement

from spica import backends


@cache
def runtime_engine_version(backend: str) -> str | None:
    """The engine version ai-dynamo pins for `backend` (its extra of the same name), or None."""
    package = backends.backend(backend).engine_package
    for line in requires("ai-dynamo") or ():
        requirement = Requirement(line)
        if requirement.name == package and requirement.marker is not None and requirement.marker.evaluate({"extra": backend}):
            pins = [spec.version for spec in requirement.specifier if spec.operator == "=="]
            return pins[0] if pins else None
    return None


def engine_versions(unrolled_configs: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str | None]]:
    """{backend: {"scored": perf-data version(s), "runtime": image engine version}} over the configs."""
    scored: dict[str, set[str]] = {}
    for unrolled in unrolled_configs:
        scored.setdefault(unrolled["backend"], set()).add(str(unrolled.get("backend_version")))
    return {
        backend: {"scored": ", ".join(sorted(versions)), "runtime": runtime_engine_version(backend)}
        for backend, versions in sorted(scored.items())
    }


def version_note(versions: Mapping[str, Mapping[str, str | None]]) -> str | None:
    """The line under the results table: "scored with perf data for vLLM 0.24.0; the image runs 0.31.0"."""
    parts = [
        f"scored with perf data for {backends.backend(backend).label} {pair['scored']}; "
        f"the image runs {pair['runtime'] or 'an unpinned version'}"
        for backend, pair in versions.items()
    ]
    return " | ".join(parts) or None
