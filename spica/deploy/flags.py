"""What every pod's command line is built from: the candidate's pool record (spica/core/unrolled.py) and
the worker record read beside it, the CLI-word helper, vLLM's KV transfer config, and the frontend's router flags.
Each backend's own worker flags are its builder in spica/deploy/engines.py.

The model flags (`--model` / `--model-path`, `--served-model-name`) are not here: Dynamo's
config modifiers set them (`BaseConfigModifier.update_model`) when the manifest is built.
Flag names are those of the parsers the 1.6.1 runtime images run, checked by tests/deploy:
- frontend: `dynamo/common/configuration/groups/{router_args,kv_router_args}.py`. The router
  knob flags warn "removed in v1.7" but are what 1.6.1 applies; their `--router-policy-config`
  replacement is parsed by the Rust router only at start-up, so it cannot be checked offline;
- vLLM's KV transfer: NIXL / KVBM through `--kv-transfer-config` (`dynamo/vllm/args.py`), NIXL
  roles as in `dynamo.profiler.utils.config_modifiers.vllm.DEFAULT_VLLM_KV_TRANSFER_CONFIG`, and
  one explicit NIXL `engine_id` per role when a worker spans nodes, so the pods of one engine agree on it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Iterable, Mapping

from spica.core.unrolled import Pool, Unrolled

SGLANG_BOOTSTRAP_PORT = 12345  # dynamo/profiler/templates/dgd/sglang/disagg.yaml
KVBM = {"kv_connector": "DynamoConnector", "kv_connector_module_path": "kvbm.vllm_integration.connector", "kv_role": "kv_both"}
ROUTER_MODES = {"kv_router": "kv", "round_robin": "round-robin"}
ROUTER_FLAGS = (
    ("overlap_score_credit", "--router-kv-overlap-score-credit"),
    ("prefill_load_scale", "--router-prefill-load-scale"),
    ("router_temperature", "--router-temperature"),
    ("host_cache_hit_weight", "--router-host-cache-hit-weight"),
    ("disk_cache_hit_weight", "--router-disk-cache-hit-weight"),
    ("router_queue_threshold", "--router-queue-threshold"),
)


def profiler_modules() -> tuple[ModuleType, ModuleType]:
    """Dynamo's profiler config modifiers and DGD helpers. They import transformers (seconds): loaded
    when the first manifest is built, not when Spica starts. They need two small modules of Dynamo's
    planner, whose package __init__ imports its connectors, scikit-learn and Kubernetes' client
    (3.4 s of CPU here, a third of a search of benchmarks/peer/s1.yaml): it is deferred until a name
    of the package itself is asked for (that search, paired runs: CPU 16.1 -> 12.5 s, wall -4 %)."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no "PyTorch was not found" notice
    _defer_package_init("dynamo.planner")
    from dynamo.profiler.utils import config as dgd
    from dynamo.profiler.utils import config_modifiers

    return config_modifiers, dgd


class _DeferredPackage(ModuleType):
    """A package whose own __init__ runs only when one of its names is first asked for: its
    submodules import without it."""

    def __getattr__(self, name: str) -> Any:
        self.__class__ = ModuleType  # from here on an ordinary package: no second run
        self.__spec__.loader.exec_module(self)
        return getattr(self, name)


def _defer_package_init(name: str) -> None:
    """Puts package `name` in sys.modules with its __init__ deferred (_DeferredPackage), unless it is imported."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    package = _DeferredPackage(name)
    package.__spec__, package.__path__, package.__file__ = spec, list(spec.submodule_search_locations), spec.origin
    package.__loader__, package.__package__ = spec.loader, name
    sys.modules[name] = package


@dataclass(frozen=True)
class Worker:
    """What every backend needs beyond the pool: context, speculation, router, offload, placement."""

    context_length: int | None  # None: the engine's default, the model's maximum
    nextn: int
    kv_events: bool  # the KV router needs this pool's cache events
    host_blocks: int  # G2 (host) offload blocks per DP rank, 0 = off (as Replay models it)
    engine_id: str | None  # explicit NIXL engine id (vLLM, a disagg worker spanning nodes)
    kv_cache_dtype: str | None  # the engine's own spelling of kvcache_quant_mode; None: its default

    @classmethod
    def of(cls, view: Unrolled, pool: Pool, engine_id: str | None = None, kv_cache_dtype: str | None = None) -> "Worker":
        return cls(
            context_length=view.context_length,
            nextn=view.nextn,
            kv_events=view.router.mode == "kv_router" and bool(pool.prefix_caching),
            host_blocks=view.num_g2_blocks if pool.prefix_caching else 0,
            engine_id=engine_id,
            kv_cache_dtype=kv_cache_dtype,
        )


def cli_words(pairs: Iterable[tuple[str, Any]]) -> list[str]:
    """CLI words from (flag, value) pairs: True is a bare flag, None / False drop the flag."""
    words: list[str] = []
    for flag, value in pairs:
        if value is None or value is False:
            continue
        words += [flag] if value is True else [flag, value if isinstance(value, str) else json.dumps(value)]
    return words


def compact_json(value: Mapping[str, Any]) -> str:
    return json.dumps(value, separators=(",", ":"))


def vllm_kv_transfer(pool: Pool, worker: Worker) -> dict[str, Any] | None:
    """NIXL moves KV from prefill to decode, KVBM offloads it to host; both at once ride in a
    PdConnector, composed as `dynamo/vllm/args.py` does (its children inherit the engine id)."""
    if not pool.disaggregated:
        return KVBM if worker.host_blocks else None
    config_modifiers, _ = profiler_modules()
    nixl = json.loads(config_modifiers.vllm.DEFAULT_VLLM_KV_TRANSFER_CONFIG[pool.role])
    transfer = nixl
    if worker.host_blocks:
        transfer = {
            "kv_connector": "PdConnector",
            "kv_role": "kv_both",
            "kv_connector_extra_config": {"connectors": [KVBM, nixl]},
            "kv_connector_module_path": KVBM["kv_connector_module_path"],
        }
    if worker.engine_id:
        transfer["engine_id"] = worker.engine_id
    return transfer


def frontend_args(unrolled: Mapping[str, Any]) -> list[str]:
    """`dynamo.frontend` flags: the router mode and, under the KV router, its knobs."""
    router_mode = unrolled["router_mode"]
    if router_mode not in ROUTER_MODES:
        raise ValueError(f"router_mode: {router_mode!r} is not one of {', '.join(ROUTER_MODES)}")
    return cli_words([("--router-mode", ROUTER_MODES[router_mode]), *((flag, unrolled.get(key)) for key, flag in ROUTER_FLAGS)])
