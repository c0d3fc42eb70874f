"""Mixed-hardware disagg: prefill on H100s, decode on H200s, each role sized, timed and placed on its own GPUs.

The e2e test runs a real search (AI Configurator's memory model, AIS timing tables, Dynamo Replay)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from dgd_checks import candidate, components, unrolled

from spica.config import SmartSearchConfig
from spica.deploy.manifest import dynamo_manifest, gpu_node_selector
from spica.evaluation.deployment import ReplayCall
from spica.evaluation.replay import run_replay
from spica.evaluation.score import objective_values
from spica.evaluation.timing import ensure_table
from spica.results.report import DEPLOY_TOP_N
from spica.search import run_smart_search
from spica.space.branches import worker_capacity
from spica.space.capacity import MemorySettings
from spica.space.shapes import WorkerShape

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-SXM5-80GB"}
H200 = {"nvidia.com/gpu.product": "NVIDIA-H200"}


def node_selectors(manifest: dict) -> dict[str, dict | None]:
    return {kind: component["podTemplate"]["spec"].get("nodeSelector") for kind, component in components(manifest).items()}


def test_a_mixed_candidate_selects_each_roles_gpu_and_a_single_system_one_selects_none(dgd_validator) -> None:
    assert (gpu_node_selector("h100_sxm"), gpu_node_selector("h200_sxm"), gpu_node_selector("no_such_gpu")) == (H100, H200, None)
    mixed = candidate(unrolled("disagg", "vllm", "off", False, False) | {"prefill_hardware_sku": "h100_sxm", "decode_hardware_sku": "h200_sxm"})
    manifest = dynamo_manifest(mixed)
    dgd_validator.validate(manifest)
    assert node_selectors(manifest) == {"frontend": None, "prefill": H100, "decode": H200}
    assert manifest["metadata"]["annotations"]["spica/hardware"] == "prefill h100_sxm, decode h200_sxm"
    same = dynamo_manifest(candidate(unrolled("disagg", "vllm", "off", False, False)))
    assert set(node_selectors(same).values()) == {None} and "spica/hardware" not in same["metadata"]["annotations"]


def mixed_search() -> SmartSearchConfig:
    return SmartSearchConfig.from_mapping({
        "search_space": {
            "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm", "prefill_hardware_sku": "h100_sxm",
            "decode_hardware_sku": "h200_sxm", "deployment_mode": ["disagg"], "backend": ["vllm"], "gpu_budget": 4,
            "gpu_budget_per_sku": {"h100_sxm": 2, "h200_sxm": 2}, "context_length": 4096,
            "prefill_max_num_batched_tokens": [8192], "prefill_max_num_seqs": [4], "decode_max_num_seqs": [256],
            "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"],
        },
        "workload": {"isl": 2000, "osl": 200, "concurrency": 16, "num_request_ratio": 2},
        "goal": {"target": "throughput_per_gpu"},
        "sweep": {"algorithm": "grid", "parallel_evals": 2},
    })  # fmt: skip


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """The search run once, with the results folder it wrote, for the tests that read both."""
    folder = tmp_path_factory.mktemp("mixed")
    return run_smart_search(mixed_search(), results_dir=folder), folder


@pytest.mark.e2e
def test_a_mixed_hardware_disagg_search_sizes_times_and_places_each_role_on_its_system(mixed, dgd_validator) -> None:
    results, _ = mixed
    ledger = results.ledger
    assert ledger and all(c.feasible for c in ledger)
    for c in ledger:  # within each system's budget, on each role's system
        assert c.view.pool("prefill").total_gpus <= 2 and c.view.pool("decode").total_gpus <= 2
        assert (c.unrolled["prefill_hardware_sku"], c.unrolled["decode_hardware_sku"]) == ("h100_sxm", "h200_sxm")

    # capacity: each role holds what AI Configurator's memory model gives its own GPU, an H200 far more
    settings = MemorySettings(0.9, 8192)
    tp1 = {sku: worker_capacity("Qwen/Qwen3-32B-FP8", sku, "vllm", "0.24.0", WorkerShape(tp=1), settings, 64).kv_tokens
           for sku in ("h100_sxm", "h200_sxm")}  # fmt: skip
    one = next(c for c in ledger if c.view.pool("prefill").tp == 1 and c.view.pool("decode").tp == 1)
    assert (one.unrolled["prefill_kv_capacity_tokens"], one.unrolled["decode_kv_capacity_tokens"]) == (tp1["h100_sxm"], tp1["h200_sxm"])
    assert tp1["h200_sxm"] > 2 * tp1["h100_sxm"]

    # timing: each role's engine is timed by AIS on its own GPU; the H100 decodes slower than the H200
    kwargs = one.replay_input["kwargs"]
    perf = {role: kwargs[f"{role}_engine_args"]["engine"]["timing_model"]["config"] for role in ("prefill", "decode")}
    assert (perf["prefill"]["system"], perf["decode"]["system"]) == ("h100_sxm", "h200_sxm")
    decode_h100 = np.load(ensure_table({**perf["decode"], "system": "h100_sxm"}, tp1["h100_sxm"]))["decode_itl"]
    decode_h200 = np.load(ensure_table(perf["decode"], tp1["h100_sxm"]))["decode_itl"]
    assert (decode_h100 > decode_h200).mean() > 0.9

    # placement: the manifest puts each component on its role's GPUs
    manifest = dynamo_manifest(results[0])
    dgd_validator.validate(manifest)
    assert node_selectors(manifest) == {"frontend": None, "prefill": H100, "decode": H200}


@pytest.mark.e2e
def test_the_manifests_the_search_wrote_are_dynamo_graph_deployments_on_each_roles_gpus(mixed, dgd_validator) -> None:
    """Read back from disk as kubectl would: what the writer serialised, not the dict before it."""
    results, folder = mixed
    written = sorted((folder / "deploy").glob("*/dynamo.yaml"))
    assert written and [path.parent.name for path in written] == [f"{rank:02d}-{c.key}" for rank, c in enumerate(results[:DEPLOY_TOP_N], 1)]
    for path in written:
        manifest = yaml.safe_load(path.read_text())
        dgd_validator.validate(manifest)
        assert node_selectors(manifest) == {"frontend": None, "prefill": H100, "decode": H200}


@pytest.mark.e2e
def test_the_replay_json_the_search_wrote_reproduces_its_candidates_score(mixed) -> None:
    """The README's promise, on a search's own file rather than a hand-built call."""
    results, folder = mixed
    saved = next((folder / "deploy").glob(f"01-{results[0].key}/replay.json"))
    outcome = run_replay(ReplayCall.from_dict(json.loads(saved.read_text())))
    assert outcome.status == "ok", outcome.message
    assert objective_values(outcome.summary)["throughput_per_gpu"] == results[0].score
