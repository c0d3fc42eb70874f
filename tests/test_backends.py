"""The backend registry is the one place a backend is described: every layer reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from spica import backends
from spica.config import SearchSpace
from spica.deploy.versions import runtime_engine_version
from spica.space.shapes import RULES, ModelInfo, WorkerShape, broken_rules

CONF = Path(__file__).resolve().parents[1] / "conf" / "backend"
MOE = ModelInfo("moe", "DeepseekV3ForCausalLM", is_moe=True, max_context=163840)


def test_the_schema_offers_exactly_the_registered_backends() -> None:
    space = SearchSpace(model_name="m", hardware_sku="h200_sxm", backend=list(backends.NAMES))
    assert space.backend == list(backends.NAMES)
    with pytest.raises(ValueError, match="vllm"):
        SearchSpace(model_name="m", hardware_sku="h200_sxm", backend=["tgi"])


def test_conf_all_lists_every_backend_and_each_has_its_own_file() -> None:
    assert yaml.safe_load((CONF / "all.yaml").read_text())["backend"] == list(backends.NAMES)
    for name in backends.NAMES:
        assert yaml.safe_load((CONF / f"{name}.yaml").read_text())["backend"] == [name]


def test_a_backends_own_rules_apply_to_it_alone() -> None:
    shape = WorkerShape(tp=2, attention_dp=2, moe_tp=2, moe_ep=2)
    assert [rule.name for rule in broken_rules(shape, MOE, "trtllm")] == ["trtllm_no_tp_with_attention_dp"]
    assert [rule.name for rule in broken_rules(shape, MOE, "vllm")] == ["vllm_no_moe_tp_with_moe_ep"]
    assert broken_rules(shape, MOE, "sglang") == ()
    own = {rule.name for entry in backends.BACKENDS.values() for rule in entry.rules}
    assert own <= {rule.name for rule in RULES}


@pytest.mark.parametrize("name", backends.NAMES)
def test_each_runtime_image_runs_a_pinned_engine(name: str) -> None:
    assert runtime_engine_version(name)  # ai-dynamo's extra of the same name pins the engine package


def test_an_unknown_backend_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"^backend: 'tgi' is not one of vllm, sglang, trtllm$"):
        backends.backend("tgi")
