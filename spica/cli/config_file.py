"""`spica --config-file FILE [key=value ...]`: a plain SmartSearchConfig YAML with dotted overrides."""

from __future__ import annotations

from typing import Any, Sequence

from omegaconf import OmegaConf

from spica.config import SmartSearchConfig
from spica.config.app import AppSettings, split_app_settings
from spica.core.errors import UserError

def config_from_file(path: str, overrides: Sequence[str]) -> tuple[SmartSearchConfig, AppSettings]:
    """A plain SmartSearchConfig YAML with optional dotted `key=value` overrides; Hydra's `+key=value`
    (add a key) and `++key=value` (add or set) mean `key=value` here, where any key may be set."""
    import yaml
    from omegaconf.errors import OmegaConfBaseException

    from spica.config.loading import load_config

    data = load_config(path)
    if overrides:
        overrides = [item.removeprefix("++").removeprefix("+") for item in overrides]
        data = _without_spellings_overridden(data, overrides)
        try:
            merged = OmegaConf.merge(OmegaConf.create(data), OmegaConf.from_dotlist(overrides))
            data = OmegaConf.to_container(merged, resolve=True)
        except (OmegaConfBaseException, yaml.YAMLError) as exc:  # a malformed value or interpolation
            raise UserError([f"override: {exc}".splitlines()[0]]) from None
    return split_app_settings(data)


def _without_spellings_overridden(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """An override of a sweep key replaces the file's value under either of its names: a file
    with the earlier `sweep.seed` and `sweep.random_seed=3` on the command line is seed 3, not
    both names given."""
    from spica.config.sweep import SWEEP_ALIASES

    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        return data
    keys = {item.split("=", 1)[0].lstrip("+~") for item in overrides}
    names = [{old, new} for old, new in SWEEP_ALIASES.items() if keys & {f"sweep.{old}", f"sweep.{new}"}]
    dropped = set().union(*names) if names else set()
    return {**data, "sweep": {key: value for key, value in sweep.items() if key not in dropped}}
