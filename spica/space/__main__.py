"""`python -m spica.space MODEL SYSTEM [...]`: print the enumerated pools as a table."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from spica.backends import NAMES
from spica.space.branches import ROLES, SpaceRequest, enumerate_branches
from spica.space.table import format_pool_table


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m spica.space", description=__doc__)
    parser.add_argument("model_name", help="HF id, e.g. Qwen/Qwen3-32B-FP8")
    parser.add_argument("hardware_sku", help="AI Configurator system, e.g. h200_sxm")
    parser.add_argument("--budget", type=int, default=32, help="gpu_budget (default 32)")
    parser.add_argument("--min-budget", type=int, default=1, help="min_gpu_budget (default 1)")
    parser.add_argument("--context", type=int, default=None, help="context_length (default: the model's max)")
    parser.add_argument("--backend", nargs="+", default=["vllm"], choices=NAMES)
    parser.add_argument("--mode", nargs="+", default=list(ROLES), choices=list(ROLES))
    parser.add_argument("--pin", action="append", default=[], help="a parallel_configs entry as JSON (repeatable)")
    parser.add_argument("--kv-load", action="store_true", help="the workload is kv_load_ratio (needs KV capacity)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        request = SpaceRequest(
            model_name=args.model_name,
            hardware_sku=args.hardware_sku,
            backends=tuple(args.backend),
            modes=tuple(args.mode),
            gpu_budget=args.budget,
            min_gpu_budget=args.min_budget,
            context_length=args.context,
            pinned_parallel_configs=tuple(json.loads(pin) for pin in args.pin),
            needs_kv_capacity=args.kv_load,
        )
        branches = enumerate_branches(request)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_pool_table(branches))
    return 0


if __name__ == "__main__":
    sys.exit(main())
