"""Checks an operator would run on a manifest, with Dynamo's own artefacts: the DGD CRD's
v1beta1 openAPIV3Schema (../shared/dynamo, read-only beside the repo) made strict the way the
API server's structural pruning is (an object without `x-kubernetes-preserve-unknown-fields`
takes no unknown field), and Dynamo 1.6.1's argument parsers for the frontend, the Planner's
`--config` and the workers' Dynamo-side flags. vLLM's and SGLang's engine-native flags (what
`parse_known_args` leaves over here) are parsed by the real engines in test_engine_parsers.py,
which runs them in their own venv."""

from __future__ import annotations

import argparse
import copy
import json
import sys
import types
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

import pytest

SCHEMA = Path(__file__).resolve().parents[2] / ".." / "shared" / "dynamo" / "dgd_v1beta1.schema.json"
SLA = SimpleNamespace(ttft_ms=500.0, itl_ms=30.0, e2e_ms=None)


def strict(schema: Any) -> Any:
    """The schema with `additionalProperties: false` wherever Kubernetes would prune unknown fields,
    and `x-kubernetes-int-or-string` as integer-or-string."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: strict(value) for key, value in schema.items()}
    if out.get("x-kubernetes-int-or-string") and "type" not in out and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if out.get("type") == "object" and "properties" in out and not out.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


@pytest.fixture(scope="session")
def dgd_validator() -> Any:
    import jsonschema

    crd = strict(json.loads(SCHEMA.read_text()))
    # The CRD schema covers spec (and an untyped metadata); apiVersion / kind are the API server's.
    document = {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {
            "apiVersion": {"const": "nvidia.com/v1beta1"},
            "kind": {"const": "DynamoGraphDeployment"},
            "metadata": {
                "type": "object",
                "required": ["name"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 63},
                    "namespace": {"type": "string"},
                    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
            "spec": crd["properties"]["spec"],
            "status": crd["properties"].get("status", {}),
        },
    }
    return jsonschema.Draft7Validator(document)


def _trtllm_group() -> Any:
    """Dynamo's TRT-LLM worker arguments. They read defaults from TensorRT-LLM's BuildConfig,
    which does not install here: only that class is stood in for."""
    from pydantic import BaseModel

    class BuildConfig(BaseModel):
        max_batch_size: int = 2048
        max_num_tokens: int = 8192
        max_seq_len: int | None = None
        max_beam_width: int = 1

    llmapi = types.ModuleType("tensorrt_llm.llmapi")
    llmapi.BuildConfig = BuildConfig  # type: ignore[attr-defined]
    saved = {name: sys.modules.get(name) for name in ("tensorrt_llm", "tensorrt_llm.llmapi", "dynamo.trtllm.backend_args")}
    sys.modules["tensorrt_llm"] = types.ModuleType("tensorrt_llm")
    sys.modules["tensorrt_llm.llmapi"] = llmapi
    sys.modules.pop("dynamo.trtllm.backend_args", None)
    try:
        from dynamo.trtllm.backend_args import DynamoTrtllmArgGroup

        return DynamoTrtllmArgGroup
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


@pytest.fixture(scope="session")
def worker_parser() -> Callable[[str], argparse.ArgumentParser]:
    """backend -> a parser of the worker's Dynamo-side flags (runtime + backend wrapper)."""
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.sglang.backend_args import DynamoSGLangArgGroup
    from dynamo.vllm.backend_args import DynamoVllmArgGroup

    groups = {"vllm": DynamoVllmArgGroup, "sglang": DynamoSGLangArgGroup, "trtllm": _trtllm_group()}

    def build(backend: str) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
        DynamoRuntimeArgGroup().add_arguments(parser)
        groups[backend]().add_arguments(parser)
        return parser

    return build


def parse_frontend(args: list[str]) -> Any:
    """Dynamo's frontend config from a Frontend container's args (after `-m dynamo.frontend`)."""
    from dynamo.frontend.frontend_args import FrontendArgGroup, FrontendConfig

    parser = argparse.ArgumentParser(allow_abbrev=False, exit_on_error=False)
    FrontendArgGroup().add_arguments(parser)
    assert args[:2] == ["-m", "dynamo.frontend"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the router knob flags move to --router-policy-config in v1.7
        config = FrontendConfig.from_cli_args(parser.parse_args(args[2:]))
    config.validate()
    return config


def parse_worker(parser: argparse.ArgumentParser, backend: str, args: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """Dynamo-side flags parsed; the engine-native rest (vLLM / SGLang) returned. TRT-LLM's
    worker parser owns every flag, so nothing may be left over."""
    if backend == "trtllm":
        return parser.parse_args(args), []
    known, rest = parser.parse_known_args(args)
    if backend == "vllm":
        from dynamo.common.configuration.groups.router_args import parse_worker_router_config

        _, rest = parse_worker_router_config(rest)
    return known, rest


def components(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {component["type"]: component for component in manifest["spec"]["components"]}


def main_container(component: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in component["podTemplate"]["spec"]["containers"] if c["name"] == "main")


def broken(manifest: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(manifest)
    edit(copied)
    return copied
