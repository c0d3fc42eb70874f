"""Run one `ReplayCall` and report what happened, never raising for a bad candidate.

Time cap. Replay is one single-threaded Rust call that does not return to Python until it is
done: a SIGALRM handler only runs after the call returns (measured: a 0.5 s alarm fired after
9 s), ``max_sim_time_ms`` bounds simulated time, not wall time, and an abandoned thread would
keep burning its core. So a capped replay runs in a child process that is killed at the cap.
Children come from a ``forkserver`` that has already imported ``dynamo.replay``: a fork of that
clean server (no Rust runtime threads yet, unlike the parent after its first replay) costs a few
tens of ms instead of the ~1 s import a ``spawn`` child would pay. Uncapped calls
(``timeout_s=None``) run in-process with no overhead. benchmarks/bench_evaluation.py measures both.
The cap covers the whole call, including a cold timing-table build (which itself is not
interruptible but takes ~1-3 s and runs at most once per shape).
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Literal, Mapping

from spica.evaluation.deployment import ReplayCall
from spica.evaluation.timing import TimingMode, materialize_engine_args

Status = Literal["ok", "failed", "timeout", "no_samples"]
ENGINE_ARG_KEYS = ("extra_engine_args", "prefill_engine_args", "decode_engine_args")
MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class ReplayOutcome:
    """Result of one replay.

    reason is a category: ``timing_model`` (AIS could not time this shape), ``invalid_input``
    (Replay rejected the deployment or workload), ``replay_error`` / ``replay_panic`` (Replay
    raised / panicked), ``worker_crashed`` (the capped child died), ``time_cap`` and
    ``no_completed_requests``. `summary` is Replay's summary (also kept for no_samples).
    """

    status: Status
    seconds: float
    summary: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None
    message: str | None = None


def run_replay(call: ReplayCall, timeout_s: float | None = None) -> ReplayOutcome:
    started = time.perf_counter()

    def outcome(status: Status, summary: Mapping[str, Any] | None = None, reason: str | None = None, message: str | None = None) -> ReplayOutcome:
        return ReplayOutcome(status, time.perf_counter() - started, dict(summary or {}), reason, message)

    try:
        kwargs = _with_timing(call.kwargs, call.timing)
    except Exception as exc:  # AIS unavailable for this model/system/backend/shape
        return outcome("failed", reason="timing_model", message=_one_line(exc))
    if timeout_s is None:
        result = _execute(call.function, call.args, kwargs)
    else:
        remaining = timeout_s - (time.perf_counter() - started)
        result = _execute_in_child(call.function, call.args, kwargs, remaining)
        if result is None:
            return outcome("timeout", reason="time_cap", message=f"replay exceeded the {timeout_s:g} s time cap")
    status, summary, reason, message = result
    return outcome(status, summary, reason, message)


def _with_timing(kwargs: Mapping[str, Any], timing: TimingMode) -> dict[str, Any]:
    resolved = dict(kwargs)
    for key in ENGINE_ARG_KEYS:
        if resolved.get(key) is not None:
            resolved[key] = materialize_engine_args(resolved[key], timing)
    return resolved


_Result = tuple[Status, dict[str, Any], str | None, str | None]


def _execute(function: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Result:
    """Call Replay; every failure becomes a result (a Rust panic surfaces as a BaseException)."""
    import dynamo.replay
    from dynamo.llm import KvRouterConfig

    try:
        if kwargs.get("router_config") is not None:
            kwargs = {**kwargs, "router_config": KvRouterConfig(**kwargs["router_config"])}
        report = getattr(dynamo.replay, function)(*args, **kwargs)
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


def _execute_in_child(function: str, args: tuple[Any, ...], kwargs: dict[str, Any], timeout_s: float) -> _Result | None:
    """`_execute` in a forkserver child; None when the cap is hit (the child is killed)."""
    context = _forkserver()
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_main, args=(sender, function, args, kwargs), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(max(0.0, timeout_s)):
            return None
        return receiver.recv()
    except EOFError:
        child.join()
        return "failed", {}, "worker_crashed", f"replay process died with exit code {child.exitcode}"
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()


def _child_main(sender: Connection, function: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    sender.send(_execute(function, args, kwargs))
    sender.close()


_context: Any = None


def _forkserver() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        # Only these modules: preloading __main__ (the default) would re-run an unguarded script.
        _context.set_forkserver_preload(["dynamo.replay", "dynamo.llm", __name__])
    return _context


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    line = f"{type(exc).__name__}: {text}"
    return line if len(line) <= MESSAGE_LIMIT else line[: MESSAGE_LIMIT - 3] + "..."
