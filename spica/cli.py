"""The `spica` command: a Hydra application plus five plain subcommands.

    spica [group=option ...] [key=value ...]      compose conf/ with Hydra and search
    spica --config-file my.yaml [key=value ...]   search a plain SmartSearchConfig YAML
    spica compile [...] -o plan.yaml              freeze a validated, fingerprinted plan
    spica run-plan plan.yaml [-o DIR]             run exactly that plan
    spica space [...]                             print the parallel-config pools
    spica calibrate MEASUREMENTS... -o FILE       fit a timing calibration on measured points
    spica compare DIR... [-o FILE]                results folders side by side (a table and a page)

Every user error is printed as one line per problem, without a traceback, exit status 2; a
search that finds no feasible deployment says why and exits 3.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any, Iterator, NoReturn, Sequence

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from spica.config import ConfigError, SmartSearchConfig
from spica.config.app import AppSettings, EvaluationSettings, schema_defaults, split_app_settings
from spica.config.executors import EXECUTORS
from spica.core.console import flush_output, tell
from spica.core.errors import SearchError, UserError
from spica.core.lazy import load
from spica.core.startup import collect_less
from spica.core.stops import stop_message, stop_signals
from spica.results.outcome import SearchResults

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("model", "system", "backend", "mode", "router", "planner", "quant", "speculation", "workload", "goal", "sweep")
SCHEMA_NODE = "spica_schema"  # every default, from the pydantic schema; conf/config.yaml builds on it
EXIT_USAGE = 2
EXIT_NOTHING_FEASIBLE = 3


def normalise_overrides(overrides: Sequence[str]) -> list[str]:
    """`+workload=trace` and `workload=trace` mean the same: every group has a default."""
    normalised = []
    for item in overrides:
        name = item[1:].split("=", 1)[0] if item.startswith("+") and not item.startswith("++") else None
        normalised.append(item[1:] if name in GROUPS else item)
    return normalised


def register_schema() -> None:
    """Store the schema's defaults as the node conf/config.yaml starts from."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NODE, node=schema_defaults())


def _to_container(cfg: DictConfig) -> dict[str, Any]:
    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)  # type: ignore[return-value]
    except MissingMandatoryValue as exc:
        key = getattr(exc, "full_key", "") or "a value"
        raise ConfigError([f"{key}: required; set it on the command line, e.g. {key}=..."]) from None


def compose(overrides: Sequence[str]) -> tuple[SmartSearchConfig, AppSettings]:
    """Compose conf/ with Hydra (as the app would) without running the app."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException

    register_schema()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
            cfg = hydra_compose(config_name="config", overrides=normalise_overrides(overrides))
    except HydraException as exc:
        raise UserError([str(exc).strip().splitlines()[0]]) from None
    return split_app_settings(_to_container(cfg))


def config_from_file(path: str, overrides: Sequence[str]) -> tuple[SmartSearchConfig, AppSettings]:
    """A plain SmartSearchConfig YAML with optional dotted `key=value` overrides; Hydra's `+key=value`
    (add a key) and `++key=value` (add or set) mean `key=value` here, where any key may be set."""
    import yaml
    from omegaconf.errors import OmegaConfBaseException

    from spica.config.loading import load_config

    data = load_config(path)
    if overrides:
        overrides = [item.removeprefix("++").removeprefix("+") for item in overrides]
        data = _without_spellings_overridden(data, overrides)
        try:
            merged = OmegaConf.merge(OmegaConf.create(data), OmegaConf.from_dotlist(overrides))
            data = OmegaConf.to_container(merged, resolve=True)
        except (OmegaConfBaseException, yaml.YAMLError) as exc:  # a malformed value or interpolation
            raise UserError([f"override: {exc}".splitlines()[0]]) from None
    return split_app_settings(data)


def _without_spellings_overridden(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """An override of a sweep key replaces the file's value under either of its names: a file
    with the earlier `sweep.seed` and `sweep.random_seed=3` on the command line is seed 3, not
    both names given."""
    from spica.config.sweep import SWEEP_ALIASES

    sweep = data.get("sweep")
    if not isinstance(sweep, dict):
        return data
    keys = {item.split("=", 1)[0].lstrip("+~") for item in overrides}
    names = [{old, new} for old, new in SWEEP_ALIASES.items() if keys & {f"sweep.{old}", f"sweep.{new}"}]
    dropped = set().union(*names) if names else set()
    return {**data, "sweep": {key: value for key, value in sweep.items() if key not in dropped}}


def evaluation_pool(settings: EvaluationSettings, results_dir: str | None, trace_path: str | None = None) -> Any:
    """The chosen executor's pool, its job files under <results_dir>/<executor> (in a container,
    each job sees the trace it replays); None: Spica's own process pool."""
    entry = EXECUTORS[settings.executor]
    if entry.pool is None:
        return None
    mounts = (trace_path,) if trace_path else ()
    return load(entry.pool)(Path(results_dir or ".") / entry.name, mounts=mounts, **settings.executor_settings().model_dump())


def _search_and_report(config: SmartSearchConfig, app: AppSettings, results_dir: str | None) -> None:
    from spica.search import run_smart_search

    pool = evaluation_pool(app.evaluation, results_dir, config.workload.trace_path)
    with _resumable(f"results_dir={results_dir}" if results_dir else "the same command"):
        try:
            results = run_smart_search(config, results_dir=results_dir, pool=pool, progress=True, deploy=app.deploy,
                                       calibration=app.evaluation.calibration, draws=app.evaluation.draws)
        finally:
            if pool is not None:
                pool.close()
    _exit_if_nothing_feasible(results)


def _exit_if_nothing_feasible(results: SearchResults) -> None:
    """A search that found no deployment ends with its reason and exit 3, so scripts notice."""
    if not len(results):
        from spica.results.table import nothing_feasible

        _say(f"spica: {nothing_feasible(results.ledger)}")
        raise SystemExit(EXIT_NOTHING_FEASIBLE)


def _say(line: str) -> None:
    """A line for the user on stderr, unless no one reads it any more (spica/search/progress.py's
    `tell`): a message that cannot be shown must not turn an exit status into a traceback."""
    tell(sys.stderr, line + "\n")


def _stopped(exc: KeyboardInterrupt, hint: str = "") -> NoReturn:
    """The command's end on Ctrl-C (exit 130) or SIGTERM (143): one line, no traceback."""
    line, code = stop_message(exc)
    _say(f"\nspica: {line}{hint}")
    _leave(code)


@contextlib.contextmanager
def _resumable(again_with: str) -> Iterator[None]:
    """Ctrl-C or SIGTERM during a search: one line saying how to resume, exit 130 (143 for
    SIGTERM); what the search started is shut down on the way out (spica/core/stops.py)."""
    with stop_signals():
        try:
            yield
        except KeyboardInterrupt as exc:
            # Everything the search started is shut down and every finished evaluation is on disk by now.
            _stopped(exc, f" Finished evaluations are kept; run again with {again_with} to resume.")


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
    parser.add_argument("--draws", default="cache", help="where kv_router draws are kept and told again: 'cache' "
                        "(default), a folder (commit it beside the plan), or 'off' to draw afresh")
    args = parser.parse_args(argv)
    try:
        plan = load_plan(args.plan)
    except PlanError as exc:
        raise UserError([str(exc)]) from None
    from spica.search import run_smart_search

    with _resumable(f"-o {args.output}" if args.output else "the same command"):
        results = run_smart_search(plan, results_dir=args.output, progress=True, draws=args.draws)
    _exit_if_nothing_feasible(results)


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
    _search_and_report(config, app, args.results_dir or app.results_dir)


def _hydra_app() -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig

    started = []

    @hydra.main(version_base=None, config_path=str(CONF_DIR), config_name="config")
    def app(cfg: DictConfig) -> None:
        started.append(True)
        logging.getLogger().setLevel(logging.WARNING)  # Hydra sets the root to INFO; libraries stay quiet
        for name in [name for name in logging.root.manager.loggerDict if name.split(".")[0] == "spica"]:
            logging.getLogger(name).disabled = False  # Hydra's logging config disables loggers made before it
        with _user_errors():
            config, settings = split_app_settings(_to_container(cfg))
            _search_and_report(config, settings, settings.results_dir or HydraConfig.get().runtime.output_dir)

    register_schema()
    _compose_once()
    overrides = normalise_overrides(sys.argv[1:])
    results_dir = next((item.split("=", 1)[1] for item in overrides if item.startswith("results_dir=")), None)
    if results_dir and not any(item.startswith(("hydra.run.dir=", "-m", "--multirun")) for item in overrides):
        overrides.append(f"hydra.run.dir={results_dir}")  # Hydra's own files go there, not into ./outputs
        from spica.results.ledger import ensure_results_folder

        with _user_errors():  # before Hydra writes its files there: a full or read-only folder is one line
            ensure_results_folder(Path(results_dir))
    sys.argv = [sys.argv[0], *overrides]
    try:
        app()
    except SystemExit as exc:
        if exc.code == 1 and not started:  # Hydra refused the overrides or the config before the search
            raise SystemExit(EXIT_USAGE) from None
        raise


def _compose_once() -> None:
    """Hydra composes the whole config twice per run: first only to read `hydra.mode`, then to run
    (~0.4 s each on 2 cores). conf/ never sets `hydra.mode` (tests/cli/test_hydra.py checks), so
    without an override naming it the first answer is None, which Hydra reads as run, or multirun
    under -m: it is given without composing."""
    from hydra._internal.hydra import Hydra

    read_mode = Hydra.get_mode
    if getattr(read_mode, "spica_compose_once", False):
        return

    def get_mode(self: Hydra, config_name: str | None, overrides: list[str]) -> Any:
        if any(item.lstrip("+~").startswith("hydra.mode") for item in overrides):
            return read_mode(self, config_name, overrides)
        return None

    get_mode.spica_compose_once = True  # type: ignore[attr-defined]
    Hydra.get_mode = get_mode  # type: ignore[method-assign]


class _user_errors:
    """User errors print as lines and exit 2; a search that cannot go on says why and exits 1; a
    bug prints its traceback and asks for a report, exit 1 — never "invalid input"."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if isinstance(exc, UserError):
            _say("\n".join(["spica: invalid input:", *(f"  {line}" for line in exc.lines)]))
            raise SystemExit(EXIT_USAGE)
        if isinstance(exc, SearchError):
            _say(f"spica: {exc}")
            raise SystemExit(1)
        if isinstance(exc, Exception):
            import traceback

            _say("".join(traceback.format_exception(exc)).rstrip("\n"))
            _say(f"spica: this is a bug in Spica, not a problem with your input ({type(exc).__name__}); please report "
                 "it with the traceback above and the command you ran")
            raise SystemExit(1)
        return False


def _upstream_spelling(arg: str) -> str:
    """`--config FILE` (upstream's `python -m spica --config`) is `--config-file FILE`."""
    if arg == "--config" or arg.startswith("--config="):
        return "--config-file" + arg[len("--config"):]
    return arg


COMMANDS = {"compile": _cmd_compile, "run-plan": _cmd_run_plan, "space": _cmd_space, "calibrate": _cmd_calibrate, "compare": _cmd_compare}


def main(argv: Sequence[str] | None = None) -> None:
    """The `spica` command. Called without `argv` (the command itself, from its entry
    spica/__main__.py, which holds Ctrl-C and SIGTERM for its whole run; not a caller's library
    use), it collects garbage less often (spica/core/startup.py) and ends, once its output is
    flushed, without interpreter finalization (`_leave`)."""
    explicit = argv is not None
    if explicit:
        return _dispatch(list(argv), explicit)
    collect_less()
    try:
        _dispatch(sys.argv[1:], explicit)
    except SystemExit as exc:
        if not isinstance(exc.code, (int, type(None))):
            raise
        _leave(exc.code or 0)
    except KeyboardInterrupt as exc:  # before a search (or outside one): nothing to resume
        _stopped(exc)
    _leave(0)


def _dispatch(argv: list[str], explicit: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="spica: %(message)s")  # libraries: warnings only
    logging.getLogger("spica").setLevel(logging.INFO)
    with _user_errors():
        if argv and argv[0] in COMMANDS:
            return COMMANDS[argv[0]](argv[1:])
        argv = [_upstream_spelling(arg) for arg in argv]
        if any(arg == "--config-file" or arg.startswith("--config-file=") for arg in argv):
            return _run_file(argv)
    if explicit:
        sys.argv = [sys.argv[0], *argv]
    _hydra_app()


def _leave(code: int) -> NoReturn:
    """Exit with `code`, skipping interpreter finalization: the work is done and on disk, and
    tearing down the JAX, TensorFlow Probability and Replay runtimes a search loaded only cost
    time (~1 s of an S1 search) — or, with a JAX thread still running, aborted the process
    (exit -6) instead of exiting with the code. What finalization would have removed and a
    search leaves behind is removed here: the evaluation workers' forkserver (idle, its pool
    closed; left to itself it ends only after its own finalization, ~0.1 s after this process),
    multiprocessing's resource tracker (it ends when this process's end of its pipe closes, so
    it would end after this process) and multiprocessing's temporary folder (the forkserver's
    socket, `/tmp/pymp-*`). An interrupted search's pools still hold their queues' semaphores:
    they are removed here, as their owners' finalizers would at a normal exit, before the tracker
    stops. Left to the tracker, it removed them itself with a warning of leaks, and the
    finalizers, run later by a garbage collection, printed a traceback for each. A pool's
    processes still running are killed first: a pool a Ctrl-C stopped while it was being made
    was never closed, and its processes, which hold the tracker's pipe, kept the tracker, and so
    this exit, waiting for ever. A stop while it leaves changes nothing: it is leaving."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    logging.shutdown()
    if "multiprocessing" in sys.modules:
        import multiprocessing
        from multiprocessing import forkserver, process, resource_tracker, synchronize, util

        for child in multiprocessing.active_children():  # a pool stopped before it could be closed
            with contextlib.suppress(OSError):
                child.kill()
        for finalizer in list(util._finalizer_registry.values()):  # a copy: each call removes itself
            if getattr(finalizer, "_callback", None) is synchronize.SemLock._cleanup:
                with contextlib.suppress(Exception):  # already gone (a cleaner of /dev/shm): nothing to remove
                    finalizer()

        server = getattr(forkserver, "_forkserver", None)
        pid = getattr(server, "_forkserver_pid", None)  # the module's one forkserver, if it was started
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        tracker = getattr(resource_tracker, "_resource_tracker", None)  # the module's one tracker
        with contextlib.suppress(Exception):
            tracker._stop()  # closes its pipe and waits for it to end
        folder = process.current_process()._config.get("tempdir")  # get_temp_dir() would make one, and may fail to
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    flush_output()
    os._exit(code)


if __name__ == "__main__":
    main()
