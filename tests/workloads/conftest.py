"""Small traces in Dynamo Replay's formats, written for these tests (tests/workloads/data)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def traces() -> Path:
    return Path(__file__).parent / "data"
