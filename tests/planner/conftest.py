"""Shared data for the planner tests: the mooncake traces under $SPICA_SHARED_DIR (default <repo>/../shared)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def mooncake_dir() -> Path:
    shared = Path(os.environ.get("SPICA_SHARED_DIR", Path(__file__).resolve().parents[2].parent / "shared"))
    return shared / "data" / "mooncake"


@pytest.fixture
def write_trace(tmp_path: Path):
    """Write mooncake rows (timestamp ms, input_length, output_length) to a JSONL file."""

    def write(rows: list[tuple[float, int, int]], name: str = "trace.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(
            "".join(
                json.dumps({"timestamp": ts, "input_length": isl, "output_length": osl, "hash_ids": [index]}) + "\n"
                for index, (ts, isl, osl) in enumerate(rows)
            )
        )
        return path

    return write
