"""The evaluation pool: ordered results, per-item exceptions, a friendly dead-pool error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from spica.search.pool import InlinePool, ProcessPool, local_pool, run_all


def test_worker_count_rule():
    assert isinstance(local_pool(1, 8), InlinePool)
    assert isinstance(local_pool(8, 1), InlinePool)
    pool = local_pool(16, 2)
    try:
        assert isinstance(pool, ProcessPool) and pool.workers == 2
    finally:
        pool.close()


def test_inline_pool_returns_exceptions_in_place():
    results = run_all(InlinePool(), int, ["1", "x", "3"])
    assert results[0] == 1 and isinstance(results[1], ValueError) and results[2] == 3


def test_process_pool_orders_results_and_keeps_exceptions():
    pool = ProcessPool(2)
    try:
        results = run_all(pool, int, ["4", "nope", "6"])
    finally:
        pool.close()
    assert results[0] == 4 and isinstance(results[1], ValueError) and results[2] == 6


def test_a_pool_whose_workers_cannot_start_names_the_main_guard(tmp_path):
    """A script without the main guard: every spawned worker re-runs it and dies starting up."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text("from spica.search.pool import ProcessPool, run_all\nprint(run_all(ProcessPool(2), abs, [-1, -2]))\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0
    assert 'spica.core.errors.DeadPoolError: the evaluation worker pool died.' in run.stderr
    assert 'if __name__ == "__main__":' in run.stderr


def _interrupt_handler(_: object) -> str:
    import signal

    return "ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "handled"


def test_workers_leave_ctrl_c_to_the_caller():
    pool = ProcessPool(2)
    try:
        assert run_all(pool, _interrupt_handler, [None, None]) == ["ignored", "ignored"]
    finally:
        pool.close()


def _ctrl_c_blocked_from_birth(_: object) -> bool:
    """Whether this process's main thread has Ctrl-C blocked: only inherited (nothing here blocks it)."""
    import signal

    return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _blocked_signals(pid: int) -> int:
    line = next(line for line in open(f"/proc/{pid}/status") if line.startswith("SigBlk:"))
    return int(line.split()[1], 16)


@pytest.mark.parametrize("imports", [(), ("json",)], ids=["spawned", "forked"])
def test_processes_a_pool_starts_are_born_with_ctrl_c_blocked(imports):
    """Ctrl-C reaches the terminal's whole process group: a worker, a spawned pool's process or the
    forkserver still importing when it lands would die with a traceback (the forkserver ignores it
    only once its imports are done, a worker once it is set up)."""
    import multiprocessing.forkserver
    import signal

    pool = ProcessPool(2, imports=imports)
    try:
        assert run_all(pool, _ctrl_c_blocked_from_birth, [None, None]) == [True, True]
        if imports:
            forkserver = multiprocessing.forkserver._forkserver._forkserver_pid
            assert _blocked_signals(forkserver) & (1 << (signal.SIGINT - 1))
    finally:
        pool.close()
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the caller's own threads are untouched


def test_a_stop_held_back_by_an_import_is_raised_before_the_main_thread_starts_a_process(tmp_path, monkeypatch):
    """SIGTERM to a search's process group while it imported: held back until the import was done,
    the search went on, started a forkserver in place of the one the signal had ended, and a
    worker forked for it read semaphores the command's exit had removed (a traceback)."""
    import importlib
    import sys

    from spica.core.stops import Terminated, starting_processes, stop_signals

    (tmp_path / "stopped_while_it_imports.py").write_text("import _thread, signal\n_thread.interrupt_main(signal.SIGTERM)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "stopped_while_it_imports", raising=False)
    started = []
    with pytest.raises(Terminated), stop_signals():
        importlib.import_module("stopped_while_it_imports")
        with starting_processes():
            started.append("a process")
    assert started == []


def test_once_a_stop_has_arrived_no_thread_starts_a_process():
    """The pool's start-up thread, and a submit from any thread, start nothing once a stop has
    arrived: processes started then may be missed by the command's exit."""
    import multiprocessing
    import signal
    import time

    from spica.search import pool
    from spica.core.stops import stop_signals

    earlier = set(multiprocessing.active_children())  # other tests' pools may still be ending
    # as from a terminal: a suite started in a script's background inherits an ignored SIGINT,
    # which stop_signals rightly leaves ignored (tests/test_stops.py)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with stop_signals():
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        workers = pool.ProcessPool(2)  # its start-up thread runs after the stop
        (future,) = workers.submit(str, [1])
        time.sleep(0.5)
        try:
            assert future.cancelled()
            assert set(multiprocessing.active_children()) - earlier == set()
        finally:
            workers.close()
            signal.signal(signal.SIGINT, previous)


def _sleep_after_writing_pid(path: str) -> None:
    import time

    Path(path).write_text(str(os.getpid()))
    time.sleep(120)


def test_closing_without_waiting_kills_what_runs(tmp_path):
    """An interrupted search closes its pool without waiting: what runs would be thrown away, and a
    replay may run for minutes."""
    import time

    pool = ProcessPool(1)
    marker = tmp_path / "pid"
    (future,) = pool.submit(_sleep_after_writing_pid, [str(marker)])
    while not marker.exists() or not marker.read_text():
        time.sleep(0.05)
    pid = int(marker.read_text())
    pool.close(wait=False)
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()  # gone (reaped), not sleeping on for two minutes
    assert future.cancelled()


def _die_once(marker: str) -> str:
    """Kill this worker the first time it sees `marker`; succeed when retried."""
    from pathlib import Path

    path = Path(marker)
    if not path.exists():
        path.write_text("died")
        os._exit(9)
    return "retried"


def _die_always_for(item: str) -> str:
    if item == "poison":
        os._exit(9)
    import time

    time.sleep(0.2)
    return item


def test_a_lost_worker_is_replaced_and_its_item_retried_once(tmp_path):
    pool = ProcessPool(2)
    try:
        assert run_all(pool, _die_once, [str(tmp_path / "a")]) == ["retried"]
        assert run_all(pool, int, ["7", "8"]) == [7, 8]  # the healed pool goes on
    finally:
        pool.close()


def test_an_item_that_kills_its_worker_every_time_fails_as_worker_lost_and_the_pool_goes_on():
    from spica.search.pool import WorkerLost

    pool = ProcessPool(2)
    try:
        results = run_all(pool, _die_always_for, ["poison"])
        assert isinstance(results[0], WorkerLost)
        assert run_all(pool, _die_always_for, ["a", "b"]) == ["a", "b"]
    finally:
        pool.close()


@pytest.mark.e2e
@pytest.mark.parametrize("pool", ["ProcessPool(2)", "ProcessPool(2, imports=['json'])"], ids=["spawned", "forked"])
def test_workers_end_when_their_caller_is_killed(tmp_path, pool):
    """kill -9 of the process that owns the pool leaves no worker behind, even while the caller
    is a zombie its parent has not reaped (a parent reading the output it shares with them)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "owner.py"
    script.write_text(
        "import os, sys, time\n"
        "from spica.search.pool import ProcessPool\n"
        "if __name__ == '__main__':\n"
        f"    pool = {pool}\n"
        "    pool.submit(abs, [1, 2])[1].result()\n"
        "    print(' '.join(map(str, pool._executor._processes)), flush=True)\n"
        "    time.sleep(120)\n"
    )
    # killed, the owner cannot remove its multiprocessing folder (the forkserver's socket): it goes to the test's own
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    workers = [int(pid) for pid in owner.stdout.readline().split()]
    assert len(workers) == 2
    owner.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.2)
    left = [pid for pid in workers if _alive(pid)]
    owner.wait()
    assert not left


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_caller_counts_as_gone_once_it_has_ended_even_before_it_is_reaped():
    import subprocess
    import sys
    import time

    from spica.search.pool import _exists

    assert _exists(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while _exists(child.pid) and time.monotonic() < deadline:  # ended, a zombie until waited for
        time.sleep(0.05)
    assert not _exists(child.pid) and child.poll() == 0
    assert not _exists(child.pid)


def test_evaluation_workers_yield_the_cores_to_the_search():
    """A local pool's workers run below the caller's CPU priority, so a study's ask is not slowed
    by every replay running beside it; the caller keeps its own."""
    from spica.search.pool import WORKER_NICENESS

    pool = ProcessPool(2, imports=["json"], niceness=WORKER_NICENESS)
    try:
        assert run_all(pool, os.nice, [0, 0]) == [os.nice(0) + WORKER_NICENESS] * 2
    finally:
        pool.close()
    assert run_all(InlinePool(), os.nice, [0]) == [os.nice(0)]


def test_a_forkserver_a_replay_starts_in_the_caller_is_born_with_ctrl_c_blocked():
    """A search replaying in its own process (one worker, or a kv_router draw) starts the
    forkserver its replay children come from; born with Ctrl-C open, it and every pool worker
    forked from it later die of one pressed while they import. Two ways it was: started outside
    the block, and, within it, after Python's resource tracker (which, started first there,
    unblocks Ctrl-C in its caller's thread). A fresh interpreter, so neither runs yet."""
    probe = (
        "import multiprocessing.forkserver, signal\n"
        "from spica.evaluation.replay import _CappedWorker\n"
        "worker = _CappedWorker()\n"
        "worker.start()\n"
        "pid = multiprocessing.forkserver._forkserver._forkserver_pid\n"
        "blocked = int(next(l for l in open(f'/proc/{pid}/status') if l.startswith('SigBlk:')).split()[1], 16)\n"
        "print(bool(blocked & (1 << (signal.SIGINT - 1))), signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))\n"
        "worker._stop()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False"], done.stderr[-2000:]  # the forkserver's blocked, the caller's not
