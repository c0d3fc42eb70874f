"""Checks an operator would run on a manifest, with Dynamo's own artefacts: the DGD CRD's
v1beta1 openAPIV3Schema (../shared/dynamo, read-only beside the repo) made strict the way the
API server's structural pruning is (an object without `x-kubernetes-preserve-unknown-fields`
takes no unknown field), and Dynamo 1.6.1's argument parsers for the frontend, the Planner's
`--config` and the workers' Dynamo-side flags. vLLM's and SGLang's engine-native flags (what
`parse_known_args` leaves over here) are parsed by the real engines in test_engine_parsers.py,
which runs them in their own venv."""

from __future__ import annotations

import argparse
import json
import sys
import types
from typing import Any, Callable

import pytest
from dgd_checks import SCHEMA, strict


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
