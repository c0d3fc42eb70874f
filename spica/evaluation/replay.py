"""Run one `ReplayCall` and report what happened, never raising for a bad candidate.

Time cap. Replay is one single-threaded Rust call that does not return to Python until it is
done: a SIGALRM handler only runs after the call returns (measured: a 0.5 s alarm fired after
9 s), ``max_sim_time_ms`` bounds simulated time, not wall time, and an abandoned thread would
keep burning its core. So a capped replay (``timeout_s`` set) runs in a child process that is
killed at the cap. Measured on 2 busy cores, a fresh child per replay added ~0.1 s to a tiny
replay and ~0.2 s to a 1k-request one (fork, then the Rust runtime's first-replay warm-up in
every child). So each process keeps one long-lived replay child and sends it one call at a
time; a capped replay then costs about what an in-process one does (benchmarks/bench_evaluation.py).
An evaluation worker (itself forked from a forkserver that imported WORKER_IMPORTS) forks its
replay child directly (~10 ms per restart); any other process (a search evaluating inline, with
JAX's threads running) starts it from a ``forkserver`` that imports them (~0.5 s once). The child
is killed and replaced only when a cap is hit or it dies. It must be started from a non-daemonic
process (ProcessPoolExecutor workers are fine, multiprocessing.Pool workers are not).
Uncapped calls (``timeout_s=None``) run in-process, except in an evaluation worker, which never
replays itself.

A kv_router replay runs in a child of its own, forked for it alone from a forkserver that has
only imported WORKER_IMPORTS, with its clock held (spica/evaluation/clock.py). Its router's
generator is seeded from the clock and from what the process did before: a replay before it in
the same process gave another result, and so did a child forked from an evaluation worker (three
workers, three results, each repeating in its own children). An evaluation worker therefore
starts a forkserver of its own at its first kv_router replay (~0.5 s once). Measured: ~0.1-0.2 s
more per kv_router replay (the fork and the Rust runtime's first-replay warm-up), and the same
result in every process, capped or not.

The cap counts the replay child's CPU seconds, not wall seconds, and not a cold timing-table
build before it (~1-3 s once per shape, done in this process): with more workers than cores each
replay gets a share of a core, and a wall cap cut replays by how busy the machine was and by what
the cache held (S3 with 8 workers on 2 cores, 3 s cap: 6, 11, 31 of 64 cut idle, beside another
run's 2 replay workers, beside two spinning processes; counting CPU: 1, 1, 3), so a seeded search
did not repeat its ledger. A replay that uses no CPU for WALL_FACTOR times the cap (a hung child)
is cut too.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping

from spica.core.stops import starting_processes
from spica.evaluation import clock
from spica.evaluation.deployment import ReplayCall
from spica.evaluation.timing import materialize_engine_args, mean_token_position
from spica.evaluation.traffic import STAND_INS, as_trace_call
from spica.workloads import registry as workloads

Status = Literal["ok", "failed", "timeout", "no_samples"]
ENGINE_ARG_KEYS = ("extra_engine_args", "prefill_engine_args", "decode_engine_args")
MESSAGE_LIMIT = 300
RETRIED = ("timing_cache", "worker_crashed")
"""Failures that say nothing about the candidate (its timing table vanished, its replay child was
killed, e.g. by a scheduler signalling every process of a job): replayed once more at once."""


@dataclass(frozen=True)
class ReplayOutcome:
    """Result of one replay.

    reason is a category: ``timing_model`` (AIS could not time this shape), ``invalid_input``
    (Replay rejected the deployment or workload), ``replay_error`` / ``replay_panic`` (Replay
    raised / panicked), ``worker_crashed`` (the capped worker died or could not start), ``replay_clock`` (a
    kv_router replay's clock could not be held: spica/evaluation/clock.py), ``timing_cache`` (a timing
    table could not be written or read, twice: the cache was removed or the disk is full), ``time_cap`` and
    ``no_completed_requests``. `summary` is Replay's summary (also kept for no_samples).
    """

    status: Status
    seconds: float
    summary: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None
    message: str | None = None


WALL_FACTOR = 10
"""A capped replay is also cut after this many times its cap in wall seconds (a hung child)."""


def run_replay(call: ReplayCall, timeout_s: float | None = None, draw: int = 0) -> ReplayOutcome:
    """`draw`: which replay of a kv_router candidate this is (0 the search's own, 1, 2, ... the
    spread's), each the same on every run; round_robin replays never read it."""
    started = time.perf_counter()

    def outcome(status: Status, summary: Mapping[str, Any] | None = None, reason: str | None = None, message: str | None = None) -> ReplayOutcome:
        return ReplayOutcome(status, time.perf_counter() - started, dict(summary or {}), reason, message)

    try:
        if any(name in call.kwargs for name in STAND_INS):  # synthetic traffic Replay cannot draw: replayed as its trace
            function, args, kwargs = as_trace_call(call.args, call.kwargs)
            call = ReplayCall(function, args, kwargs, call.timing)
        token_position = _token_position(call) if call.timing == "table" else None
    except (OSError, ValueError, KeyError) as exc:
        return outcome("failed", reason="invalid_input", message=f"trace {call.args[0]}: {_one_line(exc)}")

    def attempt() -> _Result | None:
        try:
            kwargs = _with_timing(call, token_position)
        except OSError as exc:  # the timing cache could not be written (removed or full): not the candidate's fault
            return "failed", {}, "timing_cache", _one_line(exc)
        except Exception as exc:  # AIS unavailable for this model/system/backend/shape
            return "failed", {}, "timing_model", _one_line(exc)
        if clock.varies(kwargs):
            result = capped_worker.run_alone(call.function, call.args, kwargs, timeout_s, draw)
        elif timeout_s is None and not capped_worker.fork:
            result = _execute(call.function, call.args, kwargs)
        else:
            result = capped_worker.run(call.function, call.args, kwargs, timeout_s)
        lost = _lost_tables(kwargs, result)
        for path in lost:  # a table removed or torn under the replay is rebuilt by the next attempt
            Path(path).unlink(missing_ok=True)
        return ("failed", {}, "timing_cache", result[3]) if lost else result

    result = attempt()
    if result is not None and result[2] in RETRIED:
        result = attempt()  # once: a cache removed mid-run is rebuilt, a dead child replaced; twice in a row is reported
    if result is None:
        return outcome("timeout", reason="time_cap", message=f"replay exceeded the {timeout_s:g} s CPU-time cap")
    status, summary, reason, message = result
    return outcome(status, summary, reason, message)


def _lost_tables(kwargs: Mapping[str, Any], result: _Result | None) -> list[str]:
    """Timing tables a failed replay could not read (Replay names the file in its message)."""
    if result is None or result[0] != "failed":
        return []
    message = result[3] or ""
    paths = [
        kwargs[key]["engine"]["timing_model"]["config"]["path"]
        for key in ENGINE_ARG_KEYS
        if kwargs.get(key) and (kwargs[key]["engine"].get("timing_model") or {}).get("provider") == "dynamo_profile"
    ]
    return [path for path in paths if path in message]


def _with_timing(call: ReplayCall, token_position: int | None) -> dict[str, Any]:
    resolved = dict(call.kwargs)
    for key in ENGINE_ARG_KEYS:
        if resolved.get(key) is not None:
            resolved[key] = materialize_engine_args(resolved[key], call.timing, token_position)
    return resolved


def _token_position(call: ReplayCall) -> int | None:
    """The workload's mean prompt-token position, which prices the table's prefill entries."""
    if call.function == "run_synthetic_trace_replay":
        return mean_token_position([int(call.args[0])])
    trace = Path(call.args[0])
    stat = trace.stat()
    return _trace_token_position(str(trace.resolve()), call.kwargs.get("trace_format", "mooncake"), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _trace_token_position(path: str, trace_format: str, mtime_ns: int, size: int) -> int | None:
    """Cached per file version: a search replays the same trace for every candidate."""
    return mean_token_position(request.input_length for request in workloads.read(path, trace_format))


_Result = tuple[Status, dict[str, Any], str | None, str | None]


def _execute(function: str, args: tuple[Any, ...], kwargs: dict[str, Any], draw: int | None = None) -> _Result:
    """Call Replay, reading draw `draw`'s clock (None: the real one); every failure becomes a
    result (a Rust panic surfaces as a BaseException)."""
    import dynamo.replay
    from dynamo.llm import KvRouterConfig

    try:
        if kwargs.get("router_config") is not None:
            kwargs = {**kwargs, "router_config": KvRouterConfig(**kwargs["router_config"])}
        with _off_the_terminal(), clock.held(draw):
            report = getattr(dynamo.replay, function)(*args, **kwargs)
    except clock.ClockNotHeld as exc:
        return "failed", {}, "replay_clock", _one_line(exc)
    except (ValueError, TypeError, KeyError) as exc:
        return "failed", {}, "invalid_input", _one_line(exc)
    except Exception as exc:
        return "failed", {}, "replay_error", _one_line(exc)
    except BaseException as exc:
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return "failed", {}, "replay_panic", _one_line(exc)
    summary = dict(report.summary)
    if not summary.get("completed_requests"):
        requests = summary.get("num_requests", "?")
        return "no_samples", summary, "no_completed_requests", f"none of {requests} requests completed"
    return "ok", summary, None, None


@contextmanager
def _off_the_terminal() -> Iterator[None]:
    """Replay draws its own progress bar on stderr whenever stderr is a terminal (from every
    worker at once, with ETAs of its own): for the call, stderr points at /dev/null instead.
    What goes wrong inside Replay still reaches the search, as the exception it raises."""
    try:
        on_terminal = os.isatty(2)
    except OSError:
        on_terminal = False
    if not on_terminal:
        yield
        return
    saved = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(quiet, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(quiet)


class _CappedWorker:
    """This process's replay children: a long-lived one, replaced after a time cap or a crash, and
    one for each kv_router replay alone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: Any = None
        self._connection: Connection | None = None
        self.fork = False  # fork the children from this process (an evaluation worker: see prepare_worker)

    def run(self, function: str, args: tuple[Any, ...], kwargs: dict[str, Any], cpu_seconds: float | None) -> _Result | None:
        """`_execute` in the long-lived child; None when it has used `cpu_seconds` of CPU, or
        WALL_FACTOR times that in wall seconds (the child is then killed)."""
        with self._lock:
            try:
                connection = self._ensure_started()
            except (EOFError, OSError) as exc:  # e.g. the forkserver was signalled with the whole job
                return "failed", {}, "worker_crashed", f"replay worker could not start: {_one_line(exc)}"
            result = _exchange(self._process, connection, (function, args, kwargs, None), cpu_seconds)
            if result is None or result[2] == "worker_crashed":
                self._stop()
            return result

    def run_alone(self, function: str, args: tuple[Any, ...], kwargs: dict[str, Any], cpu_seconds: float | None, draw: int) -> _Result | None:
        """`_execute` of draw `draw`, held (spica/evaluation/clock.py), in a child started for it
        alone from a forkserver and ended after it; capped as `run`."""
        with self._lock:
            try:
                process, connection = self._new_child(alone=True)
            except (EOFError, OSError) as exc:
                return "failed", {}, "worker_crashed", f"replay worker could not start: {_one_line(exc)}"
            try:
                return _exchange(process, connection, (function, args, kwargs, draw), cpu_seconds)
            finally:
                _end(process, connection)

    def start(self) -> None:
        """Start the replay child now (an evaluation worker's start), not at the first replay."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._connection is not None:
            return self._connection
        self._stop()
        self._process, self._connection = self._new_child()  # only a started child is ever joined
        return self._connection

    def _new_child(self, alone: bool = False) -> tuple[Any, Connection]:
        """A replay child: `alone` (a kv_router draw) always from a forkserver, which has only
        imported; else forked from this process when it is an evaluation worker."""
        served = alone or not self.fork
        context = multiprocessing.get_context("forkserver" if served else "fork")
        ours, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs,), daemon=True, name="spica-replay")
        try:
            with starting_processes():  # born with Ctrl-C blocked, as a pool's processes are (the forkserver too)
                if served:
                    clock.start_forkserver(WORKER_IMPORTS)
                process.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return process, ours

    def _stop(self) -> int | None:
        if self._process is None:
            return None
        exit_code = _end(self._process, self._connection)
        self._process, self._connection = None, None
        return exit_code


def _exchange(process: Any, connection: Connection, call: tuple[Any, ...], cpu_seconds: float | None) -> _Result | None:
    """Send `call` to a replay child and wait for its result; None once it has used `cpu_seconds`
    of CPU or WALL_FACTOR times that in wall seconds (no cap: None)."""
    try:
        before = _cpu_seconds(process.pid)
        sent = time.monotonic()
        connection.send(call)
        while True:
            left = None
            if cpu_seconds is not None:
                wall = time.monotonic() - sent
                used = _cpu_seconds(process.pid) if before is not None else None
                spent = wall if used is None else used - before  # no CPU clock for the child: wall seconds
                left = min(cpu_seconds - spent, WALL_FACTOR * cpu_seconds - wall)
                if left <= 0:
                    return None
            if connection.poll(left):  # a single-threaded child uses no more CPU than the wall time passed
                return connection.recv()
    except (EOFError, OSError):
        process.join(1.0)
        return "failed", {}, "worker_crashed", f"replay worker died with exit code {process.exitcode}"


def _end(process: Any, connection: Connection | None) -> int | None:
    """Kill a replay child if it still runs, reap it, and close its pipe; its exit code."""
    if process.is_alive():
        process.kill()
    process.join()
    if connection is not None:
        connection.close()
    return process.exitcode


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds process `pid` has used (Linux /proc; None elsewhere or once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime, stime: stat fields 14 and 15


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _serve(connection: Connection) -> None:
    """Replay each call the worker sends; end quietly when the worker is gone (it finished, or
    was killed mid-replay: a reset or broken pipe then, not a traceback on the search's stderr)."""
    _die_with_parent()
    while True:
        try:
            function, args, kwargs, draw = connection.recv()
        except (EOFError, OSError):
            return
        result = _execute(function, args, kwargs, draw)
        try:
            connection.send(result)
        except OSError:  # nobody is waiting for this result any more
            return


def _die_with_parent() -> None:
    """Linux: SIGKILL this replay child when its parent (the evaluation worker that forked it, or
    the forkserver, which ends with the process that started it) is gone, so a killed search
    leaves no replay running."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the replay ends on its own and finds the pipe closed
        pass


PR_SET_PDEATHSIG = 1
capped_worker = _CappedWorker()


WORKER_IMPORTS = ("dynamo.replay", "dynamo.llm", "spica.evaluation.evaluate")  # evaluate imports this module and prepares the worker
"""What an evaluation worker and its replay child import: once, in the forkserver they are forked
from (spica.search.pool.local_pool), not in every process (~0.45 s each)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    line = f"{type(exc).__name__}: {text}"
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 3] + "..."
