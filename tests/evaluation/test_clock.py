"""The held replay clock's library (spica/evaluation/clock.py): built once into the cache with the
machine's C compiler, preloaded only into the processes started meanwhile, and said when it
cannot be built. That a held kv_router draw repeats is tests/evaluation/test_replay_e2e.py's."""

from __future__ import annotations

import os
import subprocess
import sys

from spica.evaluation import clock


def test_the_library_is_built_once_into_the_cache_and_names_its_source(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path))
    built = clock.library()
    assert built is not None and built.parent == tmp_path / "clock" and built.name.endswith(".so")
    stamp = built.stat().st_mtime_ns
    assert clock.library() == built and built.stat().st_mtime_ns == stamp  # not rebuilt
    assert clock.unavailable() is None and clock.identity().startswith("held-")
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(built)], capture_output=True, text=True, check=True).stdout
    assert {"clock_gettime", "gettimeofday", "getrandom", "spica_clock_hold", "spica_clock_release"} <= {
        line.split()[-1] for line in symbols.splitlines()}


def test_without_a_compiler_it_says_why_and_replays_on_the_real_clock(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-cc")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert clock.library() is None
    assert clock.unavailable() == "no C compiler (cc, or $CC) to build spica/evaluation/replay_clock.c"
    assert clock.identity() == "real"  # rows drawn so are not reused by a search that holds the clock
    with clock.held(0):  # the search said so when it began; the replay goes on
        pass


def test_only_a_process_started_while_preloading_carries_the_library(tmp_path, monkeypatch):
    monkeypatch.setenv("SPICA_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    probe = [sys.executable, "-c", "import ctypes; print(hasattr(ctypes.CDLL(None), 'spica_clock_hold'))"]
    with clock.preloaded():
        assert os.environ["LD_PRELOAD"] == str(clock.library())
        inside = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
    assert "LD_PRELOAD" not in os.environ
    outside = subprocess.run(probe, capture_output=True, text=True, check=True).stdout.strip()
    assert (inside, outside) == ("True", "False")
