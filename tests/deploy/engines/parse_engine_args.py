"""Run inside the engine-parser venv (tests/deploy/test_engine_parsers.py): parse worker command
lines with the parsers the ai-dynamo 1.6.1 runtime images run, engine-native flags included.

stdin: [{"name", "backend", "argv"}]; stdout: {name: {"ok": bool, "error": str, "parsed": {...}}}.
vLLM: Dynamo's own `dynamo.vllm.args.parse_args` (Dynamo and vLLM flags, their cross-checks and
the `--kv-transfer-config` / `--kv-events-config` objects). PyPI's vLLM wheel is a CUDA build
whose platform detection fails without a GPU, so only the platform is set to vLLM's CPU one.
SGLang: the parse stage of `dynamo.sglang.args.parse_args` (Dynamo's groups, then SGLang's
`ServerArgs` parser, strict); its `ServerArgs.from_cli_args` that follows downloads the model.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys


def vllm(argv: list[str]) -> dict:
    import vllm.platforms as platforms
    from vllm.platforms.cpu import CpuPlatform

    platforms._current_platform = CpuPlatform()
    from dynamo.vllm.args import parse_args

    config = parse_args(argv)
    engine = config.engine_args
    transfer = engine.kv_transfer_config
    return {
        "tensor_parallel_size": engine.tensor_parallel_size,
        "data_parallel_size": engine.data_parallel_size,
        "max_model_len": engine.max_model_len,
        "block_size": engine.block_size,
        "enable_prefix_caching": engine.enable_prefix_caching,
        "kv_connector": transfer.kv_connector if transfer else None,
        "engine_id": transfer.engine_id if transfer else None,
        "disaggregation_mode": str(config.disaggregation_mode.value),
        "use_kv_events": config.use_kv_events,
    }


def sglang(argv: list[str]) -> dict:
    from sglang.srt.server_args import ServerArgs

    from dynamo.common.configuration.groups.router_args import parse_worker_router_config
    from dynamo.common.configuration.groups.runtime_args import DynamoRuntimeArgGroup
    from dynamo.sglang._compat import add_sglang_cli_compat
    from dynamo.sglang.backend_args import DynamoSGLangArgGroup, DynamoSGLangConfig

    parser = argparse.ArgumentParser(allow_abbrev=False)
    DynamoRuntimeArgGroup().add_arguments(parser)
    DynamoSGLangArgGroup().add_arguments(parser)
    known, rest = parser.parse_known_args(argv)
    DynamoSGLangConfig.from_cli_args(known)
    _, rest = parse_worker_router_config(rest)
    engine = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    ServerArgs.add_cli_args(engine)
    add_sglang_cli_compat(engine)
    parsed = engine.parse_args(rest)
    return {
        "tp_size": parsed.tp_size,
        "dp_size": parsed.dp_size,
        "page_size": parsed.page_size,
        "max_running_requests": parsed.max_running_requests,
        "disaggregation_mode": parsed.disaggregation_mode,
        "enable_hierarchical_cache": parsed.enable_hierarchical_cache,
    }


def main() -> None:
    logging.disable(logging.WARNING)
    results = {}
    for item in json.load(sys.stdin):
        try:
            results[item["name"]] = {"ok": True, "parsed": {"vllm": vllm, "sglang": sglang}[item["backend"]](item["argv"])}
        except BaseException as exc:  # SystemExit from argparse included
            results[item["name"]] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
