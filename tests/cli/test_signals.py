"""Stopping a search for real: SIGTERM and SIGKILL of the command leave nothing running and
lose nothing finished (real processes, real signals)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared"))
pytestmark = pytest.mark.e2e


def _descendants(root: int) -> set[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z":
                parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.add(pid)
        except OSError:
            pass
    return alive


@pytest.fixture
def leave_nothing():
    """Whatever a failing test leaves of the search it started (a search that hung, say) is
    killed at teardown, with every process it started."""
    started: list[subprocess.Popen] = []
    yield started.append
    for process in started:
        if process.poll() is None:
            left = _descendants(process.pid)
            process.kill()
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            process.wait(timeout=30)


def _ctrl_c_as_in_a_terminal() -> None:
    """A suite started in the background of a script (`cmd &`, nohup) ignores SIGINT, and so would
    the search it starts: Python leaves an inherited SIG_IGN in place, as a background job should.
    The search here is started as from a terminal, where Ctrl-C reaches it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _temporary(results: Path) -> dict[str, str]:
    """The environment of a search whose temporary files go to a folder of the test's own."""
    folder = results.parent / "tmp"
    folder.mkdir(exist_ok=True)
    return {**os.environ, "TMPDIR": str(folder)}


def _left_in_tmp(results: Path) -> list[str]:
    """multiprocessing's temporary folders (`pymp-*`, the forkserver's socket) left behind."""
    return sorted(path.name for path in (results.parent / "tmp").glob("pymp-*"))


def _start(results: Path, *overrides: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "spica", "--config", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"),
         "--results-dir", str(results), "sweep.max_rounds=10", *overrides],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_as_in_a_terminal,
        env=_temporary(results),
    )


def _wait_for_evaluations(journal: Path, count: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= count:
            return
        time.sleep(0.2)
    pytest.fail(f"the search did not reach {count} evaluations")


def test_nothing_a_finished_search_started_outlives_its_exit(tmp_path, leave_nothing):
    results = tmp_path / "results"
    search = _start(results)
    leave_nothing(search)
    started: set[int] = set()
    while search.poll() is None:
        started |= _descendants(search.pid)
        time.sleep(0.05)
    assert search.returncode == 0, search.stderr.read()[-2000:]
    assert len(started) >= 3, "the search ran a forkserver, workers and a results writer"
    assert not _alive(started), f"alive when the search had exited: {[_cmdline(pid)[:80] for pid in _alive(started)]}"


# Runs a command as its child subreaper (Linux): a process the command started and did not wait
# for is handed to this one when the command exits, and shows here as a child of its own,
# even one (such as multiprocessing's resource tracker) that ends moments after the command.
ORPHANS = """
import ctypes, json, os, subprocess, sys, time
from pathlib import Path
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
time.sleep(1)
orphans = []
for entry in Path("/proc").iterdir():
    try:
        if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == os.getpid():
            orphans.append((entry / "cmdline").read_text().replace("\\0", " ") or (entry / "stat").read_text().split()[1])
    except OSError:
        pass
print(json.dumps([code, orphans]))
"""


def test_a_finished_search_waits_for_every_process_it_started(tmp_path):
    results = tmp_path / "results"
    command = [sys.executable, "-m", "spica", "--config", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"), "--results-dir", str(results)]
    out = subprocess.run([sys.executable, "-c", ORPHANS, *command], cwd=REPO, capture_output=True, text=True, timeout=600, env=_temporary(results))
    code, orphans = json.loads(out.stdout.strip().splitlines()[-1])
    assert code == 0 and orphans == []


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_a_stopped_search_leaves_no_process_and_resumes(tmp_path, signum, code, leave_nothing):
    results = tmp_path / "results"
    search = _start(results)
    leave_nothing(search)
    journal = results / "evaluations.jsonl"
    _wait_for_evaluations(journal, 1, search)  # early: the study's JAX warm-up is still running
    started = _descendants(search.pid)
    assert started, "the search runs worker processes"
    search.send_signal(signum)
    _, stderr = search.communicate(timeout=120)
    assert search.returncode == code
    if signum != signal.SIGKILL:
        how = "terminated" if signum == signal.SIGTERM else "interrupted"
        assert f"spica: {how}. Finished evaluations are kept; run again with results_dir={results} to resume." in stderr
        # nothing but Spica's own lines: no traceback, no multiprocessing warning of leaked semaphores
        assert [line for line in stderr.splitlines() if line.strip() and not line.startswith("spica: ")] == []
    deadline = time.monotonic() + 15
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(started), "processes the search started outlived it"
    if signum != signal.SIGKILL:
        assert _left_in_tmp(results) == []
    finished = [json.loads(line)["key"] for line in journal.read_text().splitlines() if line.strip().endswith("}")]
    assert len(finished) >= 1
    again = subprocess.run(
        [sys.executable, "-m", "spica", "--config", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"),
         "--results-dir", str(results), "sweep.max_rounds=10"],
        cwd=REPO, capture_output=True, text=True, timeout=900, env=_temporary(results),
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resuming: {len(set(finished))} finished evaluations" in again.stderr
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines() if line.strip()]
    assert len(keys) == len(set(keys)), "no evaluation was repeated"


def _ctrl_c_from_a_terminal_of_its_own() -> None:
    """As from a terminal: Ctrl-C reaches the search and every process it starts (a group of its own)."""
    _ctrl_c_as_in_a_terminal()
    os.setpgrp()


def test_ctrl_c_while_the_search_starts_its_processes_stops_it_in_one_line(tmp_path, leave_nothing):
    """Ctrl-C reaches the whole process group. Landing while the forkserver and the results writer
    still import (before they can ignore it), it killed them with tracebacks; landing while the
    search's own imports ran a garbage collector's callback, it was dropped there and the search
    went on, its pool dead. Now: one line, exit 130, nothing left."""
    results = tmp_path / "results"
    search = subprocess.Popen(
        [sys.executable, "-m", "spica", "--config", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"), "--results-dir", str(results)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_from_a_terminal_of_its_own,
        env=_temporary(results),
    )
    leave_nothing(search)
    deadline = time.monotonic() + 60
    while search.poll() is None and time.monotonic() < deadline:
        if any("multiprocessing.forkserver" in _cmdline(pid) for pid in _descendants(search.pid)):
            break  # the forkserver has started; it imports the evaluation stack for ~0.5 s
        time.sleep(0.01)
    started = _descendants(search.pid)
    os.killpg(search.pid, signal.SIGINT)
    _, stderr = search.communicate(timeout=120)
    assert search.returncode == 130, stderr[-2000:]
    assert [line for line in stderr.splitlines() if line.strip() and not line.startswith("spica: ")] == [], stderr[-2000:]
    assert "spica: interrupted." in stderr
    deadline = time.monotonic() + 15
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(started) and _left_in_tmp(results) == []


def _loaded(pid: int, library: str) -> bool:
    try:
        return library in (Path("/proc") / str(pid) / "maps").read_text()
    except OSError:
        return False


@pytest.mark.parametrize(("signum", "code", "said"), [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_stop_while_the_command_imports_itself_is_one_line(tmp_path, signum, code, said, leave_nothing):
    """The `spica` command as installed, stopped while it imports its own code (pydantic's native
    core is loading: spica/cli/'s config layer; the standard library alone ran before). Ctrl-C
    there printed Python's traceback and SIGTERM ended it with no word (exit -15)."""
    results = tmp_path / "results"
    search = subprocess.Popen(
        [str(Path(sys.executable).with_name("spica")), "--config-file", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"),
         f"results_dir={results}"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_from_a_terminal_of_its_own,
        env=_temporary(results),
    )
    leave_nothing(search)
    deadline = time.monotonic() + 30
    while search.poll() is None and not _loaded(search.pid, "pydantic_core") and time.monotonic() < deadline:
        time.sleep(0.001)
    started = _descendants(search.pid)
    os.killpg(search.pid, signum)
    _, stderr = search.communicate(timeout=60)
    assert search.returncode == code, stderr[-2000:]
    assert [line for line in stderr.splitlines() if line.strip() and not line.startswith("spica: ")] == [], stderr[-2000:]
    assert f"spica: {said}." in stderr
    assert not _alive(started) and _left_in_tmp(results) == []


def _reader_gone(search: subprocess.Popen, journal: Path) -> set[int]:
    """Once the search replays, the program reading its output ends (its parent was killed, its
    terminal closed): every line the search or its workers print from now on fails. Returns the
    processes the search had started."""
    _wait_for_evaluations(journal, 1, search)
    started = _descendants(search.pid)
    search.stdout.close()
    search.stderr.close()
    return started


def test_a_search_whose_reader_has_gone_still_stops_on_sigterm(tmp_path, leave_nothing):
    """SIGTERM still stops it with 143 and leaves nothing. Before, the message it could not print
    skipped the exit that does not wait for threads, and the process waited in interpreter
    finalization for a JAX warm-up (29-45 s with a cold trace cache)."""
    results = tmp_path / "results"
    search = _start(results)
    leave_nothing(search)
    journal = results / "evaluations.jsonl"
    started = _reader_gone(search, journal)
    _wait_for_evaluations(journal, 6, search)  # a round's progress line, at least, found no reader
    assert search.poll() is None, "the search went on without a reader"
    search.send_signal(signal.SIGTERM)
    assert search.wait(timeout=120) == 143
    deadline = time.monotonic() + 15
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(started) and _left_in_tmp(results) == []


def test_a_search_whose_reader_has_gone_finishes_as_usual(tmp_path, leave_nothing):
    """Without its progress lines and its table, it measures every candidate (none failed for
    lack of a reader: replays and workers print into the same closed pipe) and writes its folder."""
    results = tmp_path / "results"
    search = _start(results)
    leave_nothing(search)
    _reader_gone(search, results / "evaluations.jsonl")
    assert search.wait(timeout=600) == 0
    tallies = json.loads((results / "summary.json").read_text())["tallies"]
    assert tallies["failed"] == 0 and tallies["feasible"] == S1_EVALUATIONS, tallies
    assert (results / "ledger.json").exists() and _left_in_tmp(results) == []


S1_EVALUATIONS = 2 * 10 * 2 + 2  # S1's two branches × sweep.max_rounds=10 × candidates_per_round 2, and 2 replica steps


def _stat(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name: [state, parent, ...] (["X", "0"] once it is gone)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return ["X", "0"]


def _pool_workers(search: int) -> list[int]:
    """The search's evaluation pool workers: the children of its forkserver (not the resource
    tracker, not the results writer), each the parent of its replay child."""
    forkservers = [pid for pid in _descendants(search) if int(_stat(pid)[1]) == search and "multiprocessing.forkserver" in _cmdline(pid)]
    return sorted(pid for forkserver in forkservers for pid in _descendants(forkserver) if int(_stat(pid)[1]) == forkserver)


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _a_replaying_worker(workers: list[int], process: subprocess.Popen) -> int:
    """A worker caught in the middle of an evaluation: its replay child found running, not
    waiting for work, twice 5 ms apart."""
    deadline = time.monotonic() + 300
    running: set[int] = set()
    while time.monotonic() < deadline and process.poll() is None:
        now = set()
        for worker in workers:
            children = [pid for pid in _descendants(worker) if int(_stat(pid)[1]) == worker]
            if any(_stat(pid)[0] == "R" for pid in children):
                now.add(worker)
        if now & running:
            return min(now & running)
        running = now
        time.sleep(0.005)
    pytest.fail("no worker was seen replaying")


def test_a_search_stopped_while_it_starts_says_only_its_own_lines(tmp_path, leave_nothing):
    """SIGTERM once the evaluation workers are up, before any result: the pools are still
    starting and hold their queues' semaphores, which the exit removes without multiprocessing's
    warning of leaked semaphores or a finalizer's traceback."""
    results = tmp_path / "results"
    search = _start(results)
    leave_nothing(search)
    deadline = time.monotonic() + 300
    while not _pool_workers(search.pid) and search.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _pool_workers(search.pid), "the search started its evaluation workers"
    started = _descendants(search.pid)
    assert not (results / "evaluations.jsonl").exists() or not (results / "evaluations.jsonl").read_text().strip()
    search.send_signal(signal.SIGTERM)
    _, stderr = search.communicate(timeout=120)
    assert search.returncode == 143, stderr[-3000:]
    assert [line for line in stderr.splitlines() if line.strip() and not line.startswith("spica: ")] == []
    deadline = time.monotonic() + 15
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(started) and _left_in_tmp(results) == []


def test_a_pool_worker_killed_mid_search_costs_nothing(tmp_path, leave_nothing):
    """kill -9 of one evaluation worker from outside: the pool is replaced, the candidates it held
    are replayed once more, and the search finishes every evaluation as if nothing happened."""
    results = tmp_path / "results"
    search = _start(results, "workload.num_request_ratio=40")  # 1,280 requests: replays long enough to be caught in
    leave_nothing(search)
    journal = results / "evaluations.jsonl"
    _wait_for_evaluations(journal, 2, search)  # the workers are up and replaying
    workers = _pool_workers(search.pid)
    assert len(workers) == 2, workers  # S1: parallel_evals 2
    busy = _a_replaying_worker(workers, search)
    before = len(journal.read_text().splitlines())
    os.kill(busy, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while search.poll() is None and not set(_pool_workers(search.pid)) - set(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    replaced = search.poll() is None and bool(set(_pool_workers(search.pid)) - set(workers))
    _, stderr = search.communicate(timeout=600)
    assert replaced, "fresh workers replaced the pool that lost one"
    assert search.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "pool died" not in stderr, stderr[-3000:]
    assert _left_in_tmp(results) == []  # the replaced pool's forkserver socket included
    assert before < S1_EVALUATIONS, "the worker was killed before the search was over"
    summary = json.loads((results / "summary.json").read_text())
    tallies = summary["tallies"]
    assert sum(tallies[status] for status in ("feasible", "infeasible", "failed", "unsupported")) == S1_EVALUATIONS, tallies
    assert tallies["failed"] == 0, tallies  # the candidates in flight on the lost worker were replayed, not failed
    ledger = json.loads((results / "ledger.json").read_text())
    assert len(ledger) == S1_EVALUATIONS and all(row["status"] == "feasible" for row in ledger)
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines() if line.strip()]
    assert len(keys) == len(set(keys)) == S1_EVALUATIONS


def test_a_second_search_into_a_folder_in_use_is_refused_while_the_first_finishes(tmp_path, leave_nothing):
    results = tmp_path / "results"
    first = _start(results)
    leave_nothing(first)
    _wait_for_evaluations(results / "evaluations.jsonl", 1, first)  # the first holds the folder and is replaying
    started = time.monotonic()
    second = subprocess.run(
        [sys.executable, "-m", "spica", "--config", str(SHARED / "scenarios" / "s1_dense_budget8.yaml"),
         "--results-dir", str(results), "sweep.max_rounds=10"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert time.monotonic() - started < 60
    assert second.returncode == 2, second.stderr[-3000:]
    assert "Traceback" not in second.stderr
    problems = [line.strip() for line in second.stderr.splitlines() if line.startswith("  ")]
    assert problems == [f"results_dir: {results} is in use by another search (PID {first.pid}); wait for it or choose another folder"], second.stderr
    assert first.poll() is None, "the first search is still running when the second is refused"
    _, stderr = first.communicate(timeout=600)
    assert first.returncode == 0, stderr[-3000:]
    tallies = json.loads((results / "summary.json").read_text())["tallies"]
    assert sum(tallies[status] for status in ("feasible", "infeasible", "failed", "unsupported")) == S1_EVALUATIONS, tallies
    keys = [json.loads(line)["key"] for line in (results / "evaluations.jsonl").read_text().splitlines() if line.strip()]
    assert len(keys) == len(set(keys)) == S1_EVALUATIONS  # the second search added nothing
