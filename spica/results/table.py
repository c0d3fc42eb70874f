"""The terminal view of a search: the ranked table (or the front) and the tallies."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from spica.config import SmartSearchConfig
from spica.config.goal import SLA_METRICS
from spica.core.candidate import Candidate
from spica.core.goals import GOALS
from spica.deploy.versions import engine_versions, version_note
from spica.evaluation import screening
from spica.evaluation.calibration import describe as describe_calibration
from spica.plan import scale_free
from spica.results.outcome import SearchResults

UNITS = {name: goal.unit for name, goal in GOALS.items()}
COST_COLUMNS = {"min_cost": "cost_per_hour", "cost_per_mtok": "cost_per_mtok"}
"""The cost goals and the candidate metric each one's value is also kept as (spica/evaluation/evaluate.py)."""
TOP_N = 10
SPREAD_NOTE = (
    "±: half the range of the first objective over the draws of the same kv_router candidate "
    "(Dynamo's KV router breaks ties and samples with a generator seeded from the clock; each draw reads a clock of its own "
    "and repeats on every run; candidate.json has their number and range); round_robin replays do not vary"
)


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:,.3f}"
    return "-" if value is None else str(value)


def knob_summary(candidate: Candidate) -> str:
    view = candidate.view
    parts = [f"{pool.role[0]}:seqs={pool.max_num_seqs},mbt={pool.max_num_batched_tokens}" for pool in view.pools]
    parts.append(view.router.mode)
    if (view.planner.policy or "disabled") != "disabled":
        parts.append(f"planner={view.planner.policy}")
    if view.concurrency is not None:
        parts.append(f"conc={view.concurrency}")
    return " ".join(parts)


def render_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max(len(header), *(len(row[i]) for row in cells)) if cells else len(header) for i, header in enumerate(headers)]
    line = "  ".join(header.ljust(width) for header, width in zip(headers, widths))
    rule = "  ".join("-" * width for width in widths)
    body = ["  ".join(value.rjust(width) if i == 0 or _numeric(value) else value.ljust(width) for i, (value, width) in enumerate(zip(row, widths))) for row in cells]
    return "\n".join([line, rule, *body])


def _numeric(text: str) -> bool:
    return text.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()


SCALE_NOTE = (
    "The load follows each deployment's KV capacity and requests go round robin, so k× a row's replicas "
    "(k× its load) scores the same: one replica ratio of each was measured; scale out within gpu_budget."
)


def format_results(config: SmartSearchConfig, results: SearchResults, timings: Mapping[str, float]) -> str:
    objectives = config.goal.objectives
    pareto = config.goal.target == "pareto"
    title = "Pareto front" if pareto else f"Top {min(TOP_N, len(results))} by {objectives[0]} ({UNITS[objectives[0]]})"
    headers = ["#", "deployment", "GPUs", "avg GPUs", *[f"{name} ({UNITS[name]})" for name in objectives], "ttft ms", "tpot ms", "knobs"]
    rows = []
    shown = list(results)[: None if pareto else TOP_N]
    for index, candidate in enumerate(shown, 1):
        rows.append(
            [index, candidate.label(), candidate.used_gpus, candidate.metrics.get("provisioned_gpus"), *[candidate.objectives.get(name) for name in objectives],
             candidate.metrics.get("mean_ttft_ms"), candidate.metrics.get("mean_tpot_ms"), knob_summary(candidate)]
        )
    if config.goal.sla_constrained and any("goodput_request_throughput_rps" in c.metrics for c in shown):
        # the SLA holds as an aggregate: how many requests each one served within it, per second
        headers.insert(-1, "good req/s")
        for row, candidate in zip(rows, shown):
            good, offered = candidate.metrics.get("goodput_request_throughput_rps"), candidate.metrics.get("request_throughput_rps")
            row.insert(-1, "-" if good is None else f"{good:,.2f} of {offered:,.2f}" if offered else f"{good:,.2f}")
    for goal, metric in COST_COLUMNS.items():  # what each deployment costs, whichever goal ranked it
        if config.goal.gpu_hour_price is not None and goal not in objectives:
            headers.insert(-3, f"cost ({UNITS[goal]})")
            for row, candidate in zip(rows, shown):
                row.insert(-3, candidate.metrics.get(metric))
    spreads = [candidate.spread_percent(objectives[0]) for candidate in shown]
    if any(spread is not None for spread in spreads):
        headers.insert(5, "±")
        for row, spread in zip(rows, spreads):
            row.insert(5, "-" if spread is None else f"{spread:.2f}%")
    wall = timings.get("wall_seconds", 0.0)
    choosing = timings.get("optimizer_seconds", 0.0)
    exposed = timings.get("optimizer_exposed_seconds", choosing)
    lines = [
        "",
        title,
        render_table(headers, rows) if rows else "(no feasible candidate — see the ledger for reasons)",
        *result_notes(config, results.plan.calibration, results.tallies, timings, shown),
        "",
        tally_line(results),
        f"wall {wall:,.1f}s; choosing the next candidates took {choosing:,.1f}s, "
        f"{exposed:,.1f}s of it ({exposed / wall * 100 if wall else 0.0:.1f}% of the wall) with no replay running",
        *([idle] if (idle := idle_line(timings)) else []),
    ]
    return "\n".join(lines)


def tally_line(results: SearchResults) -> str:
    summary = ", ".join(f"{count} {status.replace('_', ' ')}" for status, count in results.tallies.items() if count or status != "screened")
    return f"{len(results.ledger)} candidates replayed: {summary}"


def result_notes(config: SmartSearchConfig, calibration: Mapping[str, Any] | None, tallies: Mapping[str, int],
                 timings: Mapping[str, Any], shown: Sequence[Candidate]) -> list[str]:
    """What the reader of the results must know to read them right (the lines under the table,
    and the report's header): versions, calibration, spread, SLA, scale, screening, budget."""
    note = version_note(engine_versions(candidate.unrolled for candidate in shown))  # once, under the table
    calibrated = describe_calibration(calibration)
    spread = any(candidate.spread_percent(config.goal.objectives[0]) is not None for candidate in shown)
    return [
        *([note] if note else []),
        *([calibrated] if calibrated else []),
        *([SPREAD_NOTE] if spread else []),
        *([sla_note(config)] if config.goal.sla_constrained else []),
        *([price_note(config.goal.gpu_hour_price, any(len(set(c.view.hardware_skus)) > 1 for c in shown))] if config.goal.gpu_hour_price else []),
        *([SCALE_NOTE] if scale_free(config) else []),
        *([screening_note(config, tallies["screened"])] if tallies.get("screened") else []),
        *([budget_note(budget)] if (budget := timings.get("budget")) and budget["ran_out"] else []),
    ]


def screening_note(config: SmartSearchConfig, screened: int) -> str:
    """What a screened search shows: docs/search.md step 5, "Screening"."""
    return (f"{screened:,} candidates were screened first: replayed at {screening.configured_ratio(config):g} requests per client instead of "
            f"{config.workload.num_request_ratio:g} (status \"screened\" in the ledger), and their study learnt from that; "
            f"those that could be on the answer were replayed in full, and only full replays are shown")


def price_note(prices: Mapping[str, float], mixed: bool = False) -> str:
    """The prices every cost was computed with; with `mixed` (a prefill/decode pair on two systems
    shown), how such a pair is priced."""
    listed = ", ".join(f"{sku} {price:g}" for sku, price in prices.items())
    pairs = "; a mixed pair's weighted by its roles' GPUs" if mixed else ""
    return f"prices per GPU-hour (goal.gpu_hour_price, the unit 'price' of every cost): {listed}{pairs}"


def budget_note(budget: Mapping[str, Any]) -> str:
    ended = budget["replays_ended"]
    return (f"stopped on the time budget (sweep.max_search_seconds={budget['max_search_seconds']:g}): "
            f"{ended} replay{'s' * (ended != 1)} not finished; the same command resumes with a fresh budget, reusing every finished replay")


def idle_shares(timings: Mapping[str, Any]) -> dict[str, float] | None:
    """summary.json's idle worker seconds as shares of the workers' time between the first replay
    handed out and the last one back (less the seconds of workers left empty on purpose, in a
    summary that has them), by phase; None for a search evaluating in one process."""
    workers, idle = timings.get("workers", 1), timings.get("idle_worker_seconds")
    first, last = timings.get("first_evaluation_at"), timings.get("evaluations_done_at")
    if workers <= 1 or not idle or not first or not last or last <= first:
        return None
    capacity = workers * (last - first) - timings.get("left_empty_worker_seconds", 0.0)
    return {phase: seconds / capacity for phase, seconds in idle.items()}


def idle_core_share(timings: Mapping[str, Any]) -> float | None:
    """The share of the cores' time (those the workers could use) with neither a replay nor an
    ask, in the same window; None where idle_shares is None."""
    cores = min(timings.get("workers", 1), timings.get("cores") or 0)
    first, last = timings.get("first_evaluation_at"), timings.get("evaluations_done_at")
    if idle_shares(timings) is None or not cores or timings.get("idle_core_seconds") is None:
        return None
    return timings["idle_core_seconds"] / (cores * (last - first))


def idle_line(timings: Mapping[str, Any]) -> str | None:
    """How much of the workers' time went without a replay, and while the search did what
    (spica/search/clocks.py counts it); None for a search evaluating in one process."""
    shares = idle_shares(timings)
    if shares is None:
        return None
    share = {phase: value * 100 for phase, value in shares.items()}
    workers = f"{timings['workers']} workers"
    if timings.get("left_empty_worker_seconds"):
        workers += f" ({min(timings['workers'], timings['cores'])} at a time while confirming against the budget)"
    line = (
        f"{workers}, idle {sum(share.values()):.1f}% of their time: {share['asking']:.1f}% while choosing, "
        f"{share['waiting']:.1f}% waiting for results due before the next ask, {share['finishing']:.1f}% after the last ask"
    )
    cores = idle_core_share(timings)
    if cores is not None and cores * 100 < sum(share.values()) - 0.05:  # an ask, or more workers than cores, kept some busy
        line += f"; their {min(timings['cores'], timings['workers'])} cores, counting the asks on them, {cores * 100:.1f}%"
    return line


def nothing_feasible(ledger: Sequence[Candidate]) -> str:
    """One line on why no candidate was feasible: reason categories by count, then the commonest
    reason in full (the ledger has them all)."""
    if not ledger:
        return "no candidate was evaluated"
    counts: dict[str, int] = {}
    examples: dict[str, str] = {}
    for candidate in ledger:
        reason = candidate.reason or candidate.status
        category = reason.split(":", 1)[0]
        counts[category] = counts.get(category, 0) + 1
        examples.setdefault(category, reason)
    ranked = sorted(counts, key=lambda category: -counts[category])
    tally = ", ".join(f"{counts[category]} {category}" for category in ranked)
    return f"no feasible deployment among {len(ledger)} candidates ({tally}); e.g. {examples[ranked[0]][:200]}"


def sla_note(config: SmartSearchConfig) -> str:
    """The SLA every shown candidate met, e.g. "SLA (mean): ttft_ms ≤ 2,000, itl_ms ≤ 50"."""
    goal = config.goal
    bounds = ", ".join(f"{name} ≤ {getattr(goal.sla, name):,.6g}" for name in SLA_METRICS if getattr(goal.sla, name) is not None)
    floor = f"; goodput ≥ {goal.min_goodput_rps:,.6g} req/s" if goal.min_goodput_rps is not None else ""
    return f"SLA ({goal.sla_aggregate}): {bounds}{floor} — candidates that missed it are infeasible (reason \"sla: ...\")"
