"""Fixtures for spica.space: a session-wide cache dir and the shared real enumerations."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest


@pytest.fixture(scope="session")
def space_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spica-cache")


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(space_cache_dir: Path) -> Iterator[None]:
    """Every test (and session-scoped enumeration) shares one temp cache, never the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPICA_CACHE_DIR", str(space_cache_dir))
        yield


@pytest.fixture(scope="session")
def qwen_branches(_isolated_cache: None) -> tuple:
    """Acceptance case 1: dense Qwen3-32B-FP8, budget 8, context 4096, vllm + sglang."""
    from spica.space import SpaceRequest, enumerate_branches

    return enumerate_branches(
        SpaceRequest(
            "Qwen/Qwen3-32B-FP8", "h200_sxm", backends=("vllm", "sglang"), gpu_budget=8, context_length=4096
        )
    )


@pytest.fixture(scope="session")
def deepseek_branches(_isolated_cache: None) -> tuple:
    """Acceptance case 2: MoE DeepSeek-V3, budget 16, every backend, model-max context."""
    from spica.space import SpaceRequest, enumerate_branches

    return enumerate_branches(
        SpaceRequest("deepseek-ai/DeepSeek-V3", "h200_sxm", backends=("vllm", "sglang", "trtllm"), gpu_budget=16)
    )
