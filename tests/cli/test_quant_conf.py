"""The `quant` and `speculation` conf groups; their defaults leave every mode to the checkpoint and speculation disabled."""

from __future__ import annotations

import pytest

from spica.cli.hydra_app import compose
from spica.config import ConfigError


@pytest.mark.parametrize(
    ("option", "kvcache"), [("checkpoint", None), ("kv_fp8", ["fp8"]), ("kv_search", ["bfloat16", "fp8"])]
)
def test_each_quant_option_composes(option: str, kvcache: list[str] | None) -> None:
    config, _ = compose([f"quant={option}"])
    assert config.search_space.kvcache_quant_mode == kvcache
    assert config.search_space.gemm_quant_mode is None


def test_an_unknown_mode_is_one_line_naming_ai_configurators_modes() -> None:
    with pytest.raises(ConfigError) as info:
        compose(["search_space.kvcache_quant_mode=[fp4]"])
    assert info.value.lines == [
        "search_space.kvcache_quant_mode: 'fp4' is not a mode AI Configurator knows; one of bfloat16, int8, fp8"
    ]


def test_the_speculation_group_sets_the_drafts_and_leaves_the_acceptance_to_the_user() -> None:
    config, _ = compose(["speculation=mtp", "search_space.nextn_accepted=1.4"])
    assert (config.search_space.aic_nextn, config.search_space.nextn_accepted) == (2, 1.4)
    config, _ = compose(["speculation=disabled"])
    assert config.search_space.aic_nextn is None and config.search_space.nextn_accepted is None
