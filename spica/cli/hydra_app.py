"""The `spica` command as a Hydra application: conf/ composed on the schema's defaults, and the
search run from it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from spica.cli.exits import EXIT_USAGE, user_errors
from spica.cli.search import search_and_report
from spica.config import ConfigError, SmartSearchConfig
from spica.config.app import AppSettings, schema_defaults, split_app_settings
from spica.core.errors import UserError

CONF_DIR = Path(__file__).resolve().parent.parent.parent / "conf"
GROUPS = ("model", "system", "backend", "mode", "router", "planner", "quant", "speculation", "workload", "goal", "sweep")
SCHEMA_NODE = "spica_schema"  # every default, from the pydantic schema; conf/config.yaml builds on it


def normalise_overrides(overrides: Sequence[str]) -> list[str]:
    """`+workload=trace` and `workload=trace` mean the same: every group has a default."""
    normalised = []
    for item in overrides:
        name = item[1:].split("=", 1)[0] if item.startswith("+") and not item.startswith("++") else None
        normalised.append(item[1:] if name in GROUPS else item)
    return normalised


def register_schema() -> None:
    """Store the schema's defaults as the node conf/config.yaml starts from."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NODE, node=schema_defaults())


def to_container(cfg: DictConfig) -> dict[str, Any]:
    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)  # type: ignore[return-value]
    except MissingMandatoryValue as exc:
        key = getattr(exc, "full_key", "") or "a value"
        raise ConfigError([f"{key}: required; set it on the command line, e.g. {key}=..."]) from None


def compose(overrides: Sequence[str]) -> tuple[SmartSearchConfig, AppSettings]:
    """Compose conf/ with Hydra (as the app would) without running the app."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    register_schema()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = hydra_compose(config_name="config", overrides=normalise_overrides(overrides))
    except HydraException as exc:
        raise UserError([str(exc).strip().splitlines()[0]]) from None
    return split_app_settings(to_container(cfg))


def run_app() -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig

    started = []

    @hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
    def app(cfg: DictConfig) -> None:
        started.append(True)
        logging.getLogger().setLevel(logging.WARNING)  # Hydra sets the root to INFO; libraries stay quiet
        for name in [name for name in logging.root.manager.loggerDict if name.split(".")[0] == "spica"]:
            logging.getLogger(name).disabled = False  # Hydra's logging config disables loggers made before it
        with user_errors():
            config, settings = split_app_settings(to_container(cfg))
            search_and_report(config, settings, settings.results_dir or HydraConfig.get().runtime.output_dir)

    register_schema()
    _compose_once()
    overrides = normalise_overrides(sys.argv[1:])
    results_dir = next((item.split("=", 1)[1] for item in overrides if item.startswith("results_dir=")), None)
    if results_dir and not any(item.startswith(("hydra.run.dir=", "-m", "--multirun")) for item in overrides):
        overrides.append(f"hydra.run.dir={results_dir}")  # Hydra's own files go there, not into ./outputs
        from spica.results.ledger import ensure_results_folder

        with user_errors():  # before Hydra writes its files there: a full or read-only folder is one line
            ensure_results_folder(Path(results_dir))
    sys.argv = [sys.argv[0], *overrides]
    try:
        app()
    except SystemExit as exc:
        if exc.code == 1 and not started:  # Hydra refused the overrides or the config before the search
            raise SystemExit(EXIT_USAGE) from None
        raise


def _compose_once() -> None:
    """Hydra composes the whole config twice per run: first only to read `hydra.mode`, then to run
    (~0.4 s each on 2 cores). conf/ never sets `hydra.mode` (tests/cli/test_hydra.py checks), so
    without an override naming it the first answer is None, which Hydra reads as run, or multirun
    under -m: it is given without composing."""
    from hydra._internal.hydra import Hydra

    read_mode = Hydra.get_mode
    if getattr(read_mode, "spica_compose_once", False):
        return

    def get_mode(self: Hydra, config_name: str | None, overrides: list[str]) -> Any:
        if any(item.lstrip("+~").startswith("hydra.mode") for item in overrides):
            return read_mode(self, config_name, overrides)
        return None

    get_mode.spica_compose_once = True  # type: ignore[attr-defined]
    Hydra.get_mode = get_mode  # type: ignore[method-assign]
