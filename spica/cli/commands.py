"""The `spica` command: a Hydra application plus six plain subcommands.

    spica [group=option ...] [key=value ...]      compose conf/ with Hydra and search
    spica --config-file my.yaml [key=value ...]   search a plain SmartSearchConfig YAML
    spica compile [...] -o plan.yaml              freeze a validated, fingerprinted plan
    spica run-plan plan.yaml [-o DIR]             run exactly that plan
    spica space [...]                             print the parallel-config pools
    spica calibrate MEASUREMENTS... -o FILE       fit a timing calibration on measured points
    spica compare DIR... [-o FILE]                results folders side by side (a table and a page)
    spica trace inspect FILE [--format F]         what a trace holds: requests, rate, lengths, reuse

How it ends (exit codes, one line per user error): spica/cli/exits.py.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Sequence

from spica.cli.config_file import config_from_file
from spica.cli.exits import exit_if_nothing_feasible, leave, resumable, stopped, user_errors
from spica.cli.hydra_app import compose, run_app
from spica.cli.search import search_and_report
from spica.cli.trace import cmd_trace
from spica.config import SmartSearchConfig
from spica.config.app import AppSettings
from spica.core.console import tell
from spica.core.errors import UserError
from spica.core.startup import collect_less

def _config_for(args: argparse.Namespace) -> tuple[SmartSearchConfig, AppSettings]:
    if args.config_file:
        return config_from_file(args.config_file, args.overrides)
    return compose(args.overrides)


def _cmd_compile(argv: Sequence[str]) -> None:
    from spica.plan import compile_plan

    parser = argparse.ArgumentParser(prog="spica compile", description="Write a frozen, fingerprinted plan.")
    parser.add_argument("--config-file", help="a SmartSearchConfig YAML (default: compose conf/ with the overrides)")
    parser.add_argument("-o", "--output", default="spica-plan.yaml", help="plan file to write (default: %(default)s)")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, or key=value for --config-file")
    args = parser.parse_args(argv)
    config, app = _config_for(args)
    from spica.search.branches import branches_for
    from spica.search.run import plan_calibration

    calibration = app.evaluation.calibration
    plan = compile_plan(config, plan_calibration(calibration, config) if calibration else None)

    branches_for(config)  # a model, SKU or perf-data version the search cannot price is refused now, not at run time
    path = plan.write(args.output)
    tell(sys.stdout, f"wrote {path} (fingerprint {plan.short_id}, seed {plan.seed})\n")


def _cmd_run_plan(argv: Sequence[str]) -> None:
    from spica.plan import PlanError, load_plan

    parser = argparse.ArgumentParser(prog="spica run-plan", description="Run a compiled plan exactly.")
    parser.add_argument("plan", help="a plan file written by `spica compile`")
    parser.add_argument("-o", "--output", default=None, help="results folder (default: results/<fingerprint>)")
    args = parser.parse_args(argv)
    try:
        plan = load_plan(args.plan)
    except PlanError as exc:
        raise UserError([str(exc)]) from None
    from spica.search import run_smart_search

    with resumable(f"-o {args.output}" if args.output else "the same command"):
        results = run_smart_search(plan, results_dir=args.output, progress=True)
    exit_if_nothing_feasible(results)


def _cmd_space(argv: Sequence[str]) -> None:
    from spica.search.branches import branches_for, format_branches

    parser = argparse.ArgumentParser(prog="spica space", description="Print the parallel-config pools of a config.")
    parser.add_argument("--config-file", help="a SmartSearchConfig YAML (default: compose conf/ with the overrides)")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    config, _ = _config_for(args)
    tell(sys.stdout, format_branches(branches_for(config)) + "\n")


def _cmd_calibrate(argv: Sequence[str]) -> None:
    from spica.calibrate import calibrate

    parser = argparse.ArgumentParser(
        prog="spica calibrate",
        description="Fit a timing calibration on measured points and write it as a data file a search scores with "
        "(evaluation.calibration=FILE). Each (model, system, backend) gets a factor on prefill and on decode time, "
        "checked by k-fold cross-validation; a fit that would make held-out error worse is refused.",
        epilog="MEASUREMENTS: silicon CSVs (AI Configurator's silicon_sample.csv format) and AIPerf profile exports "
        "(profile_export_aiperf.json) with the candidate.json of the deployment they measured beside them or given by --candidate.",
    )
    parser.add_argument("measurements", nargs="+", metavar="MEASUREMENTS")
    parser.add_argument("-o", "--output", default="calibration.yaml", help="the calibration file to write (default: %(default)s)")
    parser.add_argument("--candidate", default=None, help="the candidate.json the AIPerf exports measured (default: the one beside each export)")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default: %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="replays run at once (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.folds < 2 or args.workers < 1:
        raise UserError([f"--folds must be >= 2 and --workers >= 1 (got {args.folds}, {args.workers})"])
    path = calibrate(args.measurements, candidate=args.candidate, folds=args.folds, workers=args.workers).write(args.output)
    tell(sys.stdout, f"wrote {path}\n")


def _cmd_compare(argv: Sequence[str]) -> None:
    from spica.results.compare import compare

    parser = argparse.ArgumentParser(
        prog="spica compare",
        description="Put results folders side by side: each search's best (or its front), what differs in their plans, "
        "and one page (compare.html) with their fronts or scores overlaid, linking each folder's report.html.",
        epilog="DIR: a results folder, or a folder of them such as a Hydra multirun's (spica -m workload=chat,summarize "
        "writes multirun/<date>/<time>/0, 1, ...). Example: spica compare multirun/2026-12-06/10-00-00",
    )
    parser.add_argument("folders", nargs="+", metavar="DIR")
    parser.add_argument("-o", "--output", default=None,
                        help="the page to write (default: compare.html in the one multirun folder given, else in the current folder)")
    args = parser.parse_args(argv)
    table, page = compare(args.folders, args.output)
    tell(sys.stdout, f"{table}\n\nwrote {page}\n")


def _run_file(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(prog="spica --config-file", description="Search a plain SmartSearchConfig YAML.")
    parser.add_argument("--config-file", required=True)
    parser.add_argument("--results-dir", default=None)
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. sweep.random_seed=3")
    args = parser.parse_args(argv)
    config, app = config_from_file(args.config_file, args.overrides)
    search_and_report(config, app, args.results_dir or app.results_dir)


def _upstream_spelling(arg: str) -> str:
    """`--config FILE` (upstream's `python -m spica --config`) is `--config-file FILE`."""
    if arg == "--config" or arg.startswith("--config="):
        return "--config-file" + arg[len("--config"):]
    return arg


COMMANDS = {"compile": _cmd_compile, "run-plan": _cmd_run_plan, "space": _cmd_space, "calibrate": _cmd_calibrate, "compare": _cmd_compare,
            "trace": cmd_trace}


def main(argv: Sequence[str] | None = None) -> None:
    """The `spica` command. Called without `argv` (the command itself, from its entry
    spica/__main__.py, which holds Ctrl-C and SIGTERM for its whole run; not a caller's library
    use), it collects garbage less often (spica/core/startup.py) and ends, once its output is
    flushed, without interpreter finalization (`leave`)."""
    explicit = argv is not None
    if explicit:
        return _dispatch(list(argv), explicit)
    collect_less()
    try:
        _dispatch(sys.argv[1:], explicit)
    except SystemExit as exc:
        if not isinstance(exc.code, (int, type(None))):
            raise
        leave(exc.code or 0)
    except KeyboardInterrupt as exc:  # before a search (or outside one): nothing to resume
        stopped(exc)
    leave(0)


def _dispatch(argv: list[str], explicit: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="spica: %(message)s")  # libraries: warnings only
    logging.getLogger("spica").setLevel(logging.INFO)
    with user_errors():
        if argv and argv[0] in COMMANDS:
            return COMMANDS[argv[0]](argv[1:])
        argv = [_upstream_spelling(arg) for arg in argv]
        if any(arg == "--config-file" or arg.startswith("--config-file=") for arg in argv):
            return _run_file(argv)
    if explicit:
        sys.argv = [sys.argv[0], *argv]
    run_app()
