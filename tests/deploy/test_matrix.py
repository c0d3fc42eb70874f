"""Every manifest of {agg, disagg} × {vllm, sglang, trtllm} × {planner off, load, throughput,
hybrid} × {host offload off, on} × {single node, multinode} validates against the v1beta1 CRD
schema (unknown fields refused), and every command line parses with Dynamo 1.6.1's parsers;
a deliberately broken manifest fails the same checks."""

from __future__ import annotations

import argparse
import json
from typing import Any

import jsonschema
import pytest
from dgd_checks import MATRIX, SLA, broken, candidate, components, main_container, parse_frontend, parse_worker, unrolled

from spica.deploy.manifest import dynamo_manifest
from spica.planner.config import SEARCH_SAFE, planner_config

@pytest.mark.parametrize(("mode", "backend", "planner", "offload", "multinode"), MATRIX,
                         ids=["-".join([m, b, p, "offload" if o else "gpu", "multi" if n else "single"]) for m, b, p, o, n in MATRIX])  # fmt: skip
def test_manifest_validates_and_every_command_line_parses(dgd_validator, worker_parser, mode, backend, planner, offload, multinode) -> None:
    u = unrolled(mode, backend, planner, offload, multinode)
    manifest = dynamo_manifest(candidate(u), sla=SLA)
    errors = sorted(dgd_validator.iter_errors(manifest), key=lambda error: list(error.absolute_path))
    assert not errors, "\n".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
    assert manifest["apiVersion"] == "nvidia.com/v1beta1" and "namespace" not in manifest["metadata"]
    parts = components(manifest)
    frontend = parse_frontend(main_container(parts["frontend"])["args"])
    assert frontend.router_mode == "kv" and frontend.overlap_score_credit == 0.5

    planned = planner_config(u, SLA)
    assert ("planner" in parts) == (planned is not None)
    if planned is not None:
        from dynamo.planner.config.planner_config import PlannerConfig

        args = main_container(parts["planner"])["args"]
        assert args[0] == "--config"
        PlannerConfig.from_config_arg(args[1])  # Dynamo's Planner accepts it ...
        deployed = json.loads(args[1])  # ... and it is the replayed Planner, AIS perf model included
        assert {k: v for k, v in planned.items() if k not in SEARCH_SAFE} == {k: v for k, v in deployed.items() if k != "environment"}
        assert deployed["environment"] == "kubernetes" and set(deployed["ais_perf_model"]["roles"]) == (
            {"aggregated"} if mode == "agg" else {"prefill", "decode"})

    gpus = 0
    for role in ("worker",) if mode == "agg" else ("prefill", "decode"):
        component = parts[role]
        container = main_container(component)
        assert container["command"] == ["python3", "-m", f"dynamo.{backend}"]
        known, engine_flags = parse_worker(worker_parser(backend), backend, container["args"])
        assert not engine_flags or engine_flags[0].startswith("--")  # engine-native flags: see conftest
        if backend != "sglang":  # SGLang's role flag is its engine's own
            assert known.disaggregation_mode in ((None, "agg") if role == "worker" else (role,))
        nodes = component.get("multinode", {}).get("nodeCount", 1)
        assert (nodes > 1) == multinode
        pod_gpus = int(container["resources"]["limits"]["nvidia.com/gpu"])
        gpus += component["replicas"] * nodes * pod_gpus
        assert ("memory" in container["resources"]["requests"])
        envs = {env["name"]: env["value"] for env in container.get("env", [])}
        assert ("DYN_FORWARDPASS_METRIC_PORT" in envs) == (planned is not None)
    assert gpus == u["used_gpus"]


def test_a_broken_manifest_is_caught_by_the_same_checks(dgd_validator, worker_parser) -> None:
    manifest = dynamo_manifest(candidate(unrolled("disagg", "trtllm", "hybrid", True, True)), sla=SLA)
    assert dgd_validator.is_valid(manifest)

    def first_worker(document: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in document["spec"]["components"] if c["type"] == "prefill")

    typo = broken(manifest, lambda m: first_worker(m).update(replica=2))
    half_gpu = broken(manifest, lambda m: main_container(first_worker(m))["resources"]["limits"].update({"nvidia.com/gpu": 0.5}))
    text_nodes = broken(manifest, lambda m: first_worker(m)["multinode"].update(nodeCount="2"))
    nested_typo = broken(manifest, lambda m: main_container(first_worker(m)).update(envFrm=[]))
    alpha_gpus = broken(manifest, lambda m: first_worker(m).update(resources={"limits": {"gpu": 2}}))  # v1alpha1's int GPU count
    for document in (typo, half_gpu, text_nodes, nested_typo, alpha_gpus):
        assert not dgd_validator.is_valid(document)
    with pytest.raises(jsonschema.ValidationError, match="'replica' was unexpected"):
        dgd_validator.validate(typo)

    args = main_container(first_worker(manifest))["args"]
    with pytest.raises((SystemExit, argparse.ArgumentError)):
        parse_worker(worker_parser("trtllm"), "trtllm", [*args, "--max-num-token", "8192"])
    frontend = main_container(components(manifest)["frontend"])["args"]
    with pytest.raises((SystemExit, argparse.ArgumentError)):
        parse_frontend([*frontend, "--router-moed", "kv"])
    from dynamo.planner.config.planner_config import PlannerConfig
    from pydantic import ValidationError

    config = json.loads(main_container(components(manifest)["planner"])["args"][1])
    with pytest.raises(ValidationError):
        PlannerConfig.from_config_arg(json.dumps({**config, "load_adjustment_interval_seconds": 600}))
