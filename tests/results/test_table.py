"""The lines under the results table: how much of the workers' time went idle, and while the
search did what."""

from __future__ import annotations

from spica.results.table import idle_line


def test_idle_workers_are_shares_of_the_workers_time_by_phase():
    timings = {
        "workers": 8, "first_evaluation_at": 100.0, "evaluations_done_at": 200.0,  # 800 worker-seconds
        "idle_worker_seconds": {"asking": 8.0, "waiting": 40.0, "finishing": 80.0},
    }
    assert idle_line(timings) == (
        "8 workers, idle 16.0% of their time: 1.0% while choosing, 5.0% waiting for results due before the next ask, "
        "10.0% after the last ask"
    )


def test_where_the_cores_went_idle_less_than_the_workers_the_line_says_how_long():
    timings = {
        "workers": 8, "first_evaluation_at": 100.0, "evaluations_done_at": 200.0,
        "idle_worker_seconds": {"asking": 8.0, "waiting": 40.0, "finishing": 80.0},
        "cores": 2, "idle_core_seconds": 3.0,  # of 200 core-seconds
    }
    assert idle_line(timings).endswith("10.0% after the last ask; their 2 cores, counting the asks on them, 1.5%")
    same = timings | {"cores": 8, "idle_core_seconds": 128.0}  # a core per worker, no ask while one was idle: the same figure
    assert idle_line(same).endswith("10.0% after the last ask")


def test_a_search_in_one_process_has_no_idle_line():
    assert idle_line({"workers": 1, "first_evaluation_at": 1.0, "evaluations_done_at": 2.0, "idle_worker_seconds": {"asking": 0.5}}) is None
    assert idle_line({"wall_seconds": 3.0}) is None  # a summary written before workers were counted


def test_the_price_note_says_how_a_mixed_pair_is_priced_only_when_one_is_shown():
    from spica.results.table import price_note

    prices = {"h100_sxm": 2.5, "h200_sxm": 3.5}
    assert price_note(prices) == "prices per GPU-hour (goal.gpu_hour_price, the unit 'price' of every cost): h100_sxm 2.5, h200_sxm 3.5"
    assert price_note(prices, mixed=True).endswith("h200_sxm 3.5; a mixed pair's weighted by its roles' GPUs")


def test_workers_left_empty_on_purpose_are_not_idle():
    """A budgeted search's confirmations run one per core (spica/search/rounds.py): 8 workers for
    60 s, then 2 for 40 s, is 560 worker-seconds, not 800."""
    timings = {
        "workers": 8, "first_evaluation_at": 100.0, "evaluations_done_at": 200.0, "left_empty_worker_seconds": 240.0,
        "idle_worker_seconds": {"asking": 5.6, "waiting": 28.0, "finishing": 56.0}, "cores": 2, "idle_core_seconds": 20.0,
    }
    assert idle_line(timings).startswith(
        "8 workers (2 at a time while confirming against the budget), idle 16.0% of their time: 1.0% while choosing")
    whole = timings | {"left_empty_worker_seconds": 0.0}  # a search without a budget, or before it ran out
    assert idle_line(whole).startswith("8 workers, idle 11.2% of their time")
