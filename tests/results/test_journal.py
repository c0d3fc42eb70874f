"""The journal survives torn and foreign lines: nothing finished is lost, nothing is replayed twice."""

from __future__ import annotations

import pytest

from spica.config.errors import ConfigError
from spica.core.candidate import Candidate
from spica.results.ledger import AskJournal, Journal, ensure_results_folder


def record(index: int, plan: str = "plan") -> Candidate:
    return Candidate(f"k{index}", "agg", 0, "feasible", {"deployment_mode": "agg", "used_gpus": 1},
                     objectives={"throughput": float(index)}, plan_fingerprint=plan)


def test_a_torn_last_line_is_closed_before_the_next_record_and_junk_is_skipped(tmp_path):
    journal = Journal(tmp_path, "plan")
    journal.append(record(1))
    with journal.path.open("a") as handle:
        handle.write('{"key": "k2", "branch": "agg", "rou')  # the disk filled up mid-record
    journal.append(record(3))
    with journal.path.open("a") as handle:
        handle.write('42\nnull\n{"key": "x"}\n["list"]\n{"status": "feasible", "unrolled": 5}\n')
    journal.append(record(4))
    again = Journal(tmp_path, "plan")
    assert [candidate.key for candidate in again.load()] == ["k1", "k3", "k4"]
    assert again.skipped == 6
    assert again.load()[1].objectives == {"throughput": 3.0}


def test_other_plans_records_are_ignored_not_counted(tmp_path):
    other = Journal(tmp_path, "another plan")
    other.append(record(1, plan="another plan"))
    journal = Journal(tmp_path, "plan")
    assert journal.load() == [] and journal.skipped == 0


def test_only_failures_of_the_process_are_transient():
    lost = Candidate("k", "agg", 0, "failed", {}, reason="worker_lost: WorkerLost: died")
    crashed = Candidate("k", "agg", 0, "failed", {}, reason="worker_crashed: replay worker died with exit code -9")
    cache = Candidate("k", "agg", 0, "failed", {}, reason="timing_cache: RuntimeError: Failed to open NPZ file")
    bare_cache = Candidate("k", "agg", 0, "failed", {}, reason="timing_cache")
    real = Candidate("k", "agg", 0, "failed", {}, reason="invalid_input: ValueError: bad")
    overrun = Candidate("k", "agg", 0, "infeasible", {}, reason="exceed runtime: replay exceeded the 600 s time cap")
    assert [c.transient for c in (lost, crashed, cache, bare_cache, real, overrun)] == [True, True, True, True, False, False]


def test_a_second_search_into_a_held_folder_is_refused_naming_the_holder(tmp_path):
    import os

    import pytest

    from spica.config import ConfigError

    first = Journal(tmp_path, "plan")
    first.lock()
    try:
        with pytest.raises(ConfigError) as info:
            Journal(tmp_path, "another plan").lock()
        assert info.value.lines == [f"results_dir: {tmp_path} is in use by another search (PID {os.getpid()}); "
                                    "wait for it or choose another folder"]
    finally:
        first.unlock()
    again = Journal(tmp_path, "plan")
    again.lock()  # free again once the holder let go
    again.unlock()


def test_an_overrun_is_measured_again_only_under_a_longer_cap():
    overrun = Candidate("k", "agg", 0, "infeasible", {}, reason="exceed runtime: replay exceeded the 60 s time cap", seconds=60.2)
    assert not overrun.overran_before(60.0) and overrun.overran_before(600.0) and overrun.overran_before(None)
    assert not Candidate("k", "agg", 0, "feasible", {}, seconds=1.0).overran_before(None)


def test_a_folder_another_user_owns_is_one_line_saying_how_to_hand_it_over(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    owner = tmp_path.stat().st_uid  # root may write anywhere: play a process of another uid
    monkeypatch.setattr("os.getuid", lambda: owner + 10001)
    monkeypatch.setattr("pathlib.Path.open", refused)
    monkeypatch.delenv("container", raising=False)
    with pytest.raises(ConfigError) as info:
        ensure_results_folder(tmp_path)
    assert info.value.lines == [f"results_dir: {tmp_path} cannot hold results (Permission denied); it belongs to uid "
                                f"{owner}, Spica runs as uid {owner + 10001}: chown it to uid {owner + 10001} or choose another folder"]
    monkeypatch.setenv("container", "podman")
    with pytest.raises(ConfigError, match=rf"; it belongs to uid {owner}, .*mount the host folder with :U \(podman run -v HOST:{tmp_path}:U\)"):
        ensure_results_folder(tmp_path)


def test_the_ask_journal_gives_back_answers_of_its_versions_only_and_skips_a_torn_line(tmp_path):
    versions = {"spica": "0.1.0", "google-vizier": "0.1.24"}
    kept = AskJournal(tmp_path, versions)
    kept.keep("m1", [{"tp": 4, "backend": "vllm"}])
    kept.keep("m2", [])
    with (tmp_path / "asks.jsonl").open("a") as handle:
        handle.write('{"versions": "x", "moment": "m3", "poi')  # torn by an interruption
    AskJournal(tmp_path, versions).keep("m4", [{"tp": 8, "backend": "sglang"}])  # starts on a new line

    again = AskJournal(tmp_path, versions)
    assert [again.recall(m) for m in ("m1", "m2", "m3", "m4", "m5")] == [
        [{"tp": 4, "backend": "vllm"}], [], None, [{"tp": 8, "backend": "sglang"}], None]
    assert again.recalled == 3
    assert AskJournal(tmp_path, {**versions, "google-vizier": "0.1.25"}).recall("m1") is None  # another designer's answer
