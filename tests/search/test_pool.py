"""The evaluation pool: ordered results, per-item exceptions, a friendly dead-pool error."""

from __future__ import annotations

import os

import pytest

from spica.errors import DeadPoolError
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


def test_dead_pool_mentions_the_main_guard():
    pool = ProcessPool(2)
    try:
        with pytest.raises(DeadPoolError, match=r'if __name__ == "__main__":'):
            run_all(pool, os._exit, [1, 1])
    finally:
        pool.close()


def _interrupt_handler(_: object) -> str:
    import signal

    return "ignored" if signal.getsignal(signal.SIGINT) == signal.SIG_IGN else "handled"


def test_workers_leave_ctrl_c_to_the_caller():
    pool = ProcessPool(2)
    try:
        assert run_all(pool, _interrupt_handler, [None, None]) == ["ignored", "ignored"]
    finally:
        pool.close()
