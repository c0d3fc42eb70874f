"""A candidate as a Dynamo 1.6.1 `DynamoGraphDeployment` (nvidia.com/v1beta1): what to apply to
run what was scored.

Built on Dynamo's own profiler tooling rather than beside it: `CONFIG_MODIFIERS[backend]
.build_dgd_config` loads the backend's template (`dynamo/profiler/templates/dgd/<backend>/<mode>.yaml`:
`spec.components`, `type`, `podTemplate`, the `main` container, the HF token Secret), sets the
image, the worker command lines, replicas and GPU limits, the model flags and, when a model
cache is configured, mounts its PVC as HF_HOME on every pod. The Planner component is
Dynamo's `DgdPlannerComponentConfig`, started with the `--config` that the shared builder
`spica.planner.config.planner_config` also gives Replay (AIS perf model included). Spica adds
what the templates cannot know: the router flags, multinode placement from the candidate's
own shape (a vLLM data-parallel engine spans all its GPUs, which Dynamo's TP×PP-based sizing
misses), forward-pass metrics for the Planner, host-offload blocks and the host memory they pin,
and annotations saying what was scored.
"""

from __future__ import annotations

import functools
import importlib.resources
import logging
import math
from typing import Any, Mapping

import yaml

from spica import backends
from spica.config.deploy import DYNAMO_VERSION, DeploySettings, deploy_settings, k8s_name_problem
from spica.core.candidate import Candidate
from spica.core.lazy import load
from spica.core.quant import QUANT_NAMES
from spica.core.quiet import quieted
from spica.core.sla import SlaLike
from spica.core.unrolled import MODES, Pool, Unrolled
from spica.deploy import flags
from spica.deploy.versions import runtime_engine_version
from spica.evaluation.calibration import FIELD as CALIBRATION_FIELD
from spica.planner.config import planner_config
from spica.space.capacity import checkpoint_quant_modes, gpus_per_node

COMPONENT_TYPES = {"agg": "worker", "prefill": "prefill", "decode": "decode"}
PLANNER_IMAGE = "dynamo-planner"
FPM_PORT = "20380"  # dynamo.vllm.envs.DEFAULT_FORWARDPASS_METRIC_PORT; the three backends read it
GIB = 2**30
log = logging.getLogger("spica.deploy")


@functools.lru_cache(maxsize=None)
def gpu_node_selector(hardware_sku: str) -> dict[str, str] | None:
    """The node labels of a system's GPUs (the GPU product label NVIDIA's GPU operator sets), from AI
    Configurator's hardware facts; None where it has none (or, older, no facts at all)."""
    try:
        from aiconfigurator.generator import facts
        from aiconfigurator.generator.facts.request_resolution import hardware_key_for_system
    except ImportError:
        return None
    profiles = yaml.safe_load((importlib.resources.files(facts) / "hardware.yaml").read_text()).get("profiles", {})
    selector = profiles.get(hardware_key_for_system(hardware_sku), {}).get("node_selector")
    return dict(selector) if selector else None


def placement(gpus: int, per_node: int) -> tuple[int, int]:
    """(GPUs per pod, nodes): a worker wider than a node spans equal pods, one per node."""
    if gpus <= per_node:
        return gpus, 1
    nodes = math.ceil(gpus / per_node)
    if gpus % nodes:
        raise ValueError(f"a worker of {gpus} GPUs cannot be split evenly over {nodes} nodes of {per_node} GPUs")
    return gpus // nodes, nodes


def host_offload_bytes(view: Unrolled, pool: Pool, worker: flags.Worker) -> int:
    """Host (G2) KV bytes one worker pins: blocks per DP rank × tokens per block × bytes per token × ranks."""
    if not worker.host_blocks:
        return 0
    return worker.host_blocks * pool.block_size * int(view.flat["kv_bytes_per_token"]) * pool.attention_dp


def engine_annotations(candidate: Candidate, settings: DeploySettings) -> dict[str, str]:
    """What was scored and what the image runs (README, "Applying a result"): perf-data version vs runtime engine."""
    u = candidate.unrolled
    record = backends.backend(u["backend"])
    engine = record.engine_package
    scored = ", ".join(f"{key}={value:.4g}" for key, value in candidate.objectives.items()) or "no objective"
    quant = ", ".join(f"{name}={u[name]}" for name in QUANT_NAMES if u.get(name) is not None)
    assumed = checkpoint_quant_modes(u["model_name"], record.name)["kvcache_quant_mode"] if u.get("kvcache_quant_mode") is None else None
    if assumed is not None:
        quant = ", ".join(filter(None, (quant, f"kvcache_quant_mode={assumed} (AI Configurator's for the checkpoint)")))
    nextn, accepted = int(u.get("aic_nextn") or 0), u.get("nextn_accepted")
    speculation = f"MTP {nextn} drafts per step, {accepted if accepted is not None else 'Replay default'} accepted per step"
    return {
        "spica/candidate": candidate.key,
        "spica/deployment": candidate.label(),
        "spica/score": scored,
        "spica/scored-with": f"ai-dynamo {DYNAMO_VERSION} Replay, AI Configurator perf data for {engine} {u.get('backend_version')}",
        "spica/runtime-engine": f"{engine} {runtime_engine_version(record.name) or 'unpinned'} (ai-dynamo {DYNAMO_VERSION} "
        f"{record.runtime_image}; image {settings.image(record.runtime_image)})",
        "spica/quantization": quant,  # what capacity and timing were scored with
        **({"spica/speculation": speculation} if nextn else {}),  # the acceptance is the model's and traffic's, not a flag
        **({"spica/calibration": u[CALIBRATION_FIELD]["id"]} if u.get(CALIBRATION_FIELD) else {}),  # scaled timing scored it
        **({"spica/hardware": ", ".join(f"{p.role} {p.hardware_sku}" for p in candidate.view.pools)}
           if candidate.view.pinned_hardware else {}),  # scored per role on these systems
        **({"spica/cost": cost_note(candidate.metrics)} if "cost_per_hour" in candidate.metrics else {}),  # at goal.gpu_hour_price
    }


def cost_note(metrics: Mapping[str, Any]) -> str:
    """What the scored deployment costs, in the unit of goal.gpu_hour_price."""
    per_mtok = f"{metrics['cost_per_mtok']:.4g} per million output tokens, " if "cost_per_mtok" in metrics else ""
    return f"{per_mtok}{metrics['cost_per_hour']:.4g} per hour at {metrics['gpu_hour_price']:.4g} per GPU-hour"


def dynamo_manifest(
    candidate: Candidate,
    settings: DeploySettings | Mapping[str, Any] | None = None,
    *,
    sla: SlaLike | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The DynamoGraphDeployment that deploys `candidate` as it was replayed.

    `sla` is the goal's SLA (the Planner's targets under the "sla" optimization target), as the
    evaluation passed it to the shared Planner-config builder.
    """
    u = candidate.unrolled
    backend, mode = u["backend"], u["deployment_mode"]
    record = backends.backend(backend)
    if mode not in MODES:
        raise ValueError(f"deployment_mode: {mode!r} is not one of {', '.join(MODES)}")
    view = candidate.view
    settings = deploy_settings(settings)
    name = name or f"spica-{mode}-{backend}-{candidate.key[:8].lower()}"
    problem = k8s_name_problem(name)
    if problem:
        raise ValueError(f"name: {problem}")
    planner = planner_config(view, sla, "kubernetes")
    pools = {pool.role: pool for pool in view.pools}
    placements = {role: placement(pool.gpus, gpus_per_node(pool.hardware_sku)) for role, pool in pools.items()}
    # unset: the checkpoint's mode as AI Configurator sized the KV cache with it (an FP8 checkpoint's
    # fp8), which the engines' own default ("auto": the model's dtype) would not run
    kv_mode = u.get("kvcache_quant_mode") or checkpoint_quant_modes(u["model_name"], backend)["kvcache_quant_mode"]
    kv_cache_dtype = record.kv_cache_dtypes.get(kv_mode)
    workers = {
        role: flags.Worker.of(
            view, pool, kv_cache_dtype=kv_cache_dtype,
            engine_id=f"{name}-{role}" if record.nixl_engine_id and pool.disaggregated and placements[role][1] > 1 else None,
        )
        for role, pool in pools.items()
    }
    args = {role: load(record.engine_args)(pool, workers[role]) for role, pool in pools.items()}
    frontend = flags.frontend_args(u)

    config_modifiers, dgd = flags.profiler_modules()
    workers_kwargs: dict[str, Any] = {}
    for role, pool in pools.items():
        workers_kwargs.update({f"{role}_cli_args": args[role], f"{role}_replicas": pool.replicas, f"{role}_gpus": placements[role][0]})
    cache = settings.model_cache_pvc
    # Dynamo's profiler modules log each step at INFO through their own handlers (warnings still show)
    with quieted([name for name in list(logging.root.manager.loggerDict) if name.startswith("dynamo.profiler")], logging.WARNING):
        built = config_modifiers.CONFIG_MODIFIERS[backend].build_dgd_config(
            mode=mode,
            model_name=u["model_name"],
            image=settings.image(record.runtime_image),
            namespace=settings.namespace,
            pvc_name=cache,
            pvc_mount_path=settings.model_cache_mount if cache else None,
            **workers_kwargs,
        )
    config = dgd.Config.model_validate(built)
    config.metadata.name = name
    components = {component.component_type: component for component in config.spec.components}
    main = dgd.get_main_container(components["frontend"])
    main.args = [*(main.args or []), *frontend]
    for role, pool in pools.items():
        _fit_worker(dgd, components[COMPONENT_TYPES[role]], candidate, pool, workers[role], placements[role][1],
                    settings, name, planned=planner is not None)
    if planner is not None:
        config.spec.components.insert(1, _planner_component(dgd, settings, planner))
    manifest = config.model_dump()
    for component in manifest["spec"]["components"]:
        _set_token_secret(dgd.get_main_container_dict(component), settings.hf_token_secret)
    manifest["metadata"]["annotations"] = engine_annotations(candidate, settings)
    return manifest


def _fit_worker(
    dgd: Any, component: Any, candidate: Candidate, pool: Pool, worker: flags.Worker, nodes: int,
    settings: DeploySettings, name: str, *, planned: bool,
) -> None:
    """One role's component as the template builds it, set as the candidate was replayed: its
    context length, nodes, GPU type (pinned per role), forward-pass metrics for a Planner, host
    offload blocks and the memory they take."""
    view, record = candidate.view, backends.backend(candidate.unrolled["backend"])
    container = dgd.get_main_container(component)
    context_flag = record.context_flag_after_modifier
    if context_flag and worker.context_length is not None:
        container.args = dgd.set_unique_argument_value(container.args, context_flag, str(worker.context_length))
    component.multinode = dgd.MultinodeConfig(nodeCount=nodes) if nodes > 1 else None
    if view.pinned_hardware:  # each pool on the GPUs it was scored on
        selector = gpu_node_selector(pool.hardware_sku)
        if selector is None:
            log.warning("%s: no GPU node label known for %s; the %s pods are not pinned to it", name, pool.hardware_sku, pool.role)
        component.podTemplate.spec.nodeSelector = selector
    if planned:
        container.env = dgd.set_unique_env_value(container.env, "DYN_FORWARDPASS_METRIC_PORT", FPM_PORT)
    if worker.host_blocks and record.kvbm_offload:
        container.env = dgd.set_unique_env_value(container.env, "DYN_KVBM_CPU_CACHE_OVERRIDE_NUM_BLOCKS", str(worker.host_blocks))
    offload = host_offload_bytes(view, pool, worker) / nodes
    if settings.worker_memory_gib is not None or offload:
        memory = math.ceil((settings.worker_memory_gib or 0) + offload / GIB)
        container.resources = dict(container.resources or {})
        container.resources.setdefault("requests", {})["memory"] = f"{memory}Gi"


def _planner_component(dgd: Any, settings: DeploySettings, planner: Mapping[str, Any]) -> Any:
    """The Planner's own component, running the config the candidate was replayed with."""
    component = dgd.DgdPlannerComponentConfig()
    container = dgd.get_main_container(component)
    container.image = settings.image(PLANNER_IMAGE)
    container.workingDir = None  # Dynamo resolves it on this machine; `python3 -m` needs none
    container.args = ["--config", flags.compact_json(planner)]
    return component


def _set_token_secret(container: dict[str, Any], secret: str | None) -> None:
    """The templates load `hf-token-secret` into most pods; use the configured Secret in all, or none."""
    kept = [source for source in container.get("envFrom", []) if "secretRef" not in source]
    if secret is not None:
        kept.append({"secretRef": {"name": secret}})
    if kept:
        container["envFrom"] = kept
    else:
        container.pop("envFrom", None)


def manifest_yaml(
    candidate: Candidate,
    settings: DeploySettings | Mapping[str, Any] | None = None,
    *,
    sla: SlaLike | None = None,
    name: str | None = None,
) -> str:
    """`dynamo_manifest` as YAML, headed by how to apply it."""
    manifest = dynamo_manifest(candidate, settings, sla=sla, name=name)
    header = (
        f"# Spica candidate {candidate.key}: {candidate.label()}\n"
        f"# {manifest['metadata']['annotations']['spica/scored-with']}\n"
        "# kubectl apply -f dynamo.yaml -n NAMESPACE   (needs Dynamo's operator; see the README)\n"
    )
    return header + yaml.safe_dump(manifest, sort_keys=False, width=1000)
