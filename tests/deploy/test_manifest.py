"""What a manifest carries over from the candidate and the `deploy:` settings, item by item."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from dgd_checks import SLA, candidate, components, main_container, unrolled

from spica.config.deploy import DeploySettings, deploy_settings
from spica.config.errors import ConfigError
from spica.deploy.manifest import dynamo_manifest, manifest_yaml
from spica.deploy.versions import engine_versions, version_note


def words(container: dict[str, Any]) -> dict[str, Any]:
    """`--flag value` words as a dict; a flag without a value maps to True."""
    args, parsed = container["args"], {}
    for index, word in enumerate(args):
        if word.startswith("--"):
            parsed[word] = args[index + 1] if index + 1 < len(args) and not args[index + 1].startswith("--") else True
    return parsed


def worker(manifest: dict[str, Any], role: str) -> dict[str, Any]:
    return main_container(components(manifest)[role])


def test_no_namespace_unless_set_and_images_from_the_settings() -> None:
    plain = dynamo_manifest(candidate(unrolled("agg", "vllm", "off", False, False)))
    assert "namespace" not in plain["metadata"]
    assert worker(plain, "worker")["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.1"
    settings = DeploySettings(namespace="serving", image_registry="registry.local/dynamo", image_tag="1.6.1-patched")
    chosen = dynamo_manifest(candidate(unrolled("disagg", "sglang", "load", False, False)), settings, sla=SLA)
    assert chosen["metadata"]["namespace"] == "serving"
    images = {main_container(c)["image"] for c in chosen["spec"]["components"]}
    assert images == {"registry.local/dynamo/sglang-runtime:1.6.1-patched", "registry.local/dynamo/dynamo-planner:1.6.1-patched"}


def test_model_cache_secret_and_memory_follow_the_settings() -> None:
    offload = candidate(unrolled("agg", "trtllm", "off", True, False))
    default = worker(dynamo_manifest(offload), "worker")
    assert {"name": "HF_HOME", "value": "/opt/models"} in default["env"]
    assert default["volumeMounts"] == [{"name": "model-cache", "mountPath": "/opt/models"}]
    assert default["envFrom"] == [{"secretRef": {"name": "hf-token-secret"}}]
    # 8192 host blocks × 64 tokens × 98304 B × 1 DP rank = 48 GiB pinned, on top of 32 GiB
    assert default["resources"]["requests"]["memory"] == "80Gi"
    bare = dynamo_manifest(offload, {"model_cache_pvc": None, "hf_token_secret": None, "worker_memory_gib": None})
    container = worker(bare, "worker")
    assert "volumeMounts" not in container and "envFrom" not in container
    assert all("volumes" not in c["podTemplate"]["spec"] for c in bare["spec"]["components"])
    assert container["resources"]["requests"]["memory"] == "48Gi"
    other = worker(dynamo_manifest(offload, {"hf_token_secret": "my-hf"}), "worker")
    assert other["envFrom"] == [{"secretRef": {"name": "my-hf"}}]


def test_deploy_settings_errors_name_the_field() -> None:
    with pytest.raises(ConfigError) as error:
        deploy_settings({"namespce": "x", "namespace": "Bad_NS", "worker_memory_gib": 0, "model_cache_mount": "models"})
    assert error.value.lines == [
        "deploy.namespace: 'Bad_NS' is not a Kubernetes name (lowercase letters, digits, '-', at most 63)",
        "deploy.model_cache_mount: 'models' is not an absolute path",
        "deploy.worker_memory_gib: 0: input should be greater than 0",
        "deploy.namespce: unknown field; allowed: hf_token_secret, image_registry, image_tag, model_cache_mount, "
        "model_cache_pvc, namespace, worker_memory_gib",
    ]


def test_trtllm_keeps_dynamo_kvbm_and_prefill_settings() -> None:
    manifest = dynamo_manifest(candidate(unrolled("disagg", "trtllm", "off", True, False)))
    prefill, decode = (json.loads(words(worker(manifest, role))["--override-engine-args"]) for role in ("prefill", "decode"))
    assert prefill["kv_cache_config"]["enable_partial_reuse"] is False  # KVBM (prefill offloads)
    assert "enable_partial_reuse" not in decode["kv_cache_config"]  # no prefix caching, no offload
    assert prefill["disable_overlap_scheduler"] is True and "disable_overlap_scheduler" not in decode
    assert prefill["cache_transceiver_config"] == decode["cache_transceiver_config"] == {"backend": "DEFAULT"}


def test_trtllm_disagg_token_budget_must_be_whole_blocks() -> None:
    bad = unrolled("disagg", "trtllm", "off", False, False) | {"prefill_max_num_batched_tokens": 8100}
    with pytest.raises(ValueError, match=r"^prefill_max_num_batched_tokens: 8100 is not a multiple of prefill_block_size 64 "):
        dynamo_manifest(candidate(bad))
    dynamo_manifest(candidate(unrolled("agg", "trtllm", "off", False, False) | {"agg_max_num_batched_tokens": 8100}))  # no transceiver


def test_vllm_disagg_worker_across_nodes_gets_an_engine_id_per_role() -> None:
    manifest = dynamo_manifest(candidate(unrolled("disagg", "vllm", "off", True, True)))
    prefill = json.loads(words(worker(manifest, "prefill"))["--kv-transfer-config"])
    decode = json.loads(words(worker(manifest, "decode"))["--kv-transfer-config"])
    assert prefill["kv_connector"] == "PdConnector" and prefill["engine_id"] == "spica-disagg-vllm-01234567-prefill"
    assert [c["kv_connector"] for c in prefill["kv_connector_extra_config"]["connectors"]] == ["DynamoConnector", "NixlConnector"]
    assert decode == {"kv_connector": "NixlConnector", "kv_role": "kv_consumer", "engine_id": "spica-disagg-vllm-01234567-decode"}
    single = dynamo_manifest(candidate(unrolled("disagg", "vllm", "off", False, False)))
    assert json.loads(words(worker(single, "decode"))["--kv-transfer-config"]) == {"kv_connector": "NixlConnector", "kv_role": "kv_consumer"}


def test_data_parallel_vllm_worker_spans_its_gpus() -> None:
    """DEP16 on 8-GPU nodes: two pods of 8 (Dynamo's own sizing counts TP×PP only)."""
    decode = components(dynamo_manifest(candidate(unrolled("disagg", "vllm", "off", False, True))))["decode"]
    assert decode["multinode"] == {"nodeCount": 2}
    assert main_container(decode)["resources"]["limits"]["nvidia.com/gpu"] == "8"
    assert words(main_container(decode))["--data-parallel-size"] == "16"


def test_engine_versions_in_annotations_summary_and_table() -> None:
    chosen = candidate(unrolled("agg", "vllm", "off", False, False))
    annotations = dynamo_manifest(chosen)["metadata"]["annotations"]
    assert annotations["spica/scored-with"] == "ai-dynamo 1.6.1 Replay, AI Configurator perf data for vllm 0.24.0"
    assert annotations["spica/runtime-engine"].startswith("vllm 0.31.0 (ai-dynamo 1.6.1 vllm-runtime")
    assert annotations["spica/candidate"] == chosen.key
    versions = engine_versions([chosen.unrolled])
    assert versions == {"vllm": {"scored": "0.24.0", "runtime": "0.31.0"}}
    assert version_note(versions) == "scored with perf data for vLLM 0.24.0; the image runs 0.31.0"


def test_yaml_round_trips_and_errors_name_the_field() -> None:
    chosen = candidate(unrolled("disagg", "sglang", "hybrid", False, False))
    text = manifest_yaml(chosen, {"namespace": "serving"}, sla=SLA, name="best-one")
    assert text.startswith("# Spica candidate 0123456789abcdef: ")
    assert yaml.safe_load(text) == dynamo_manifest(chosen, {"namespace": "serving"}, sla=SLA, name="best-one")
    with pytest.raises(ValueError, match=r"^backend: 'tgi' is not one of vllm, sglang, trtllm$"):
        dynamo_manifest(candidate(unrolled("agg", "vllm", "off", False, False) | {"backend": "tgi"}))
    with pytest.raises(ValueError, match=r"^name: 'Best_One' is not a Kubernetes name"):
        dynamo_manifest(chosen, sla=SLA, name="Best_One")
    with pytest.raises(ValueError, match=r"^a worker of 9 GPUs cannot be split evenly over 2 nodes of 8 GPUs$"):
        dynamo_manifest(candidate(unrolled("agg", "vllm", "off", False, False) | {"tp": 9}))


def test_the_deploy_block_composes_and_validates_with_the_app() -> None:
    from spica.cli.hydra_app import compose

    _, app = compose(["deploy.namespace=prod", "deploy.model_cache_pvc=null"])
    assert (app.deploy.namespace, app.deploy.model_cache_pvc, app.deploy.hf_token_secret) == ("prod", None, "hf-token-secret")
    with pytest.raises(ConfigError, match=r"deploy\.worker_memory_gib: -1: input should be greater than 0"):
        compose(["deploy.worker_memory_gib=-1"])


def test_manifests_are_built_without_the_planner_package_init_which_still_runs_when_asked_for() -> None:
    """In a fresh process (the writer's): Dynamo's profiler modules load without scikit-learn or
    Kubernetes' client, a manifest with a planner comes out the same as with them, and a name of
    dynamo.planner itself still imports (its __init__ then runs, once)."""
    script = """
import json, sys
sys.path.insert(0, sys.argv[1])
from dgd_checks import SLA, candidate, unrolled
from spica.deploy.flags import profiler_modules
from spica.deploy.manifest import manifest_yaml
profiler_modules()
text = manifest_yaml(candidate(unrolled("disagg", "vllm", "load", False, False)), sla=SLA)
light = "sklearn" not in sys.modules and "kubernetes" not in sys.modules
from dynamo.planner import SubComponentType, VirtualConnector
from dynamo.planner.config.defaults import SubComponentType as defined
print(json.dumps({"light": light, "same_enum": SubComponentType is defined, "text": text}))
"""
    here = Path(__file__).parent
    run = subprocess.run([sys.executable, "-c", script, str(here)], capture_output=True, text=True, cwd=here.parents[1], check=True)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["light"] and result["same_enum"]
    assert result["text"] == manifest_yaml(candidate(unrolled("disagg", "vllm", "load", False, False)), sla=SLA)
