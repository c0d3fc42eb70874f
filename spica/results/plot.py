"""The results picture: score vs GPUs for a scalar goal, or the two first objectives for a front.

Drawn on a bare `Figure` (Agg canvas), so it never touches pyplot's global state or a display.
Candidates that could not be scored stay visible: as grey crosses under the data (scalar) or
counted in the legend (Pareto), so a plot of mostly failures does not look like a good search.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from spica.core.candidate import Candidate
from spica.evaluation.score import MINIMIZED, pareto_front, signed_score
from spica.results.table import UNITS

FIGSIZE = (10, 6.5)
DPI = 120
MARKED = 9  # selected candidates annotated by rank; more would bury the points
RING_SIZE = 190  # the ring round a selected point (scatter size, points squared)

Coordinate = Callable[[Candidate], float]


def _axis_label(objective: str) -> str:
    name = objective.replace("_per_", " per ").replace("_", " ").replace("gpu", "GPU").replace("e2e", "E2E")
    better = "lower is better" if objective in MINIMIZED else "higher is better"
    return f"{name} ({UNITS.get(objective, '?')}) — {better}"




def _statuses(candidates: Sequence[Candidate]) -> str:
    return " / ".join(sorted({c.status for c in candidates}))


def _plottable(candidate: Candidate, objectives: Sequence[str]) -> bool:
    return candidate.feasible and all(name in candidate.objectives for name in objectives)


def _scatter_groups(axes: Axes, points: Sequence[Candidate], x_of: Coordinate, y_of: Coordinate) -> None:
    """One colour per mode/backend pair, so agg vs disagg and backends read at a glance."""
    palette = colormaps["tab10"]
    for index, group in enumerate(sorted({c.group for c in points})):
        members = [c for c in points if c.group == group]
        axes.scatter([x_of(c) for c in members], [y_of(c) for c in members], s=36, alpha=0.8,
                     color=palette(index % 10), label=f"{group} ({len(members)})", zorder=2)


def _mark_selected(axes: Axes, selected: Sequence[Candidate], plotted: Sequence[str], x_of: Coordinate, y_of: Coordinate) -> None:
    """Ring and rank the selection (ranks as in the table, even if one of them cannot be drawn)."""
    shown = [(rank, c) for rank, c in enumerate(selected[:MARKED], 1) if _plottable(c, plotted)]
    if not shown:
        return
    axes.scatter([x_of(c) for _, c in shown], [y_of(c) for _, c in shown], s=RING_SIZE, facecolors="none",
                 edgecolors="black", linewidths=1.6, label=f"selected ({len(selected)})", zorder=3)
    ranks_at: dict[tuple[float, float], list[str]] = {}
    for rank, c in shown:  # equal points share one label instead of overprinting
        ranks_at.setdefault((x_of(c), y_of(c)), []).append(f"#{rank}")
    for point, ranks in ranks_at.items():  # placed apart once the figure's layout is final (_place_ranks)
        axes.annotate(" ".join(ranks), point, xytext=RANK_OFFSETS[0], textcoords="offset points", fontsize=9,
                      fontweight="bold", zorder=4, gid=RANK_LABEL)


RANK_LABEL = "rank"
RANK_OFFSETS = [(dx, dy) for row in range(4) for dy in (7 + 13 * row, -16 - 13 * row) for dx in (7, -7)] + [(30, -4), (-30, -4)]
"""Where a rank label may sit, in points from its point, nearest first: above or under it, right
or left (a left one ends at the point), a label's height further out each row, then beside it."""


def _place_ranks(figure: Figure, axes: Axes) -> None:
    """Moves each rank label (in rank order) to the nearest of RANK_OFFSETS where it covers no
    label placed before it, no other ring, neither title nor legend, and stays on the figure;
    where none is free, the least covered. Close points (#4 and #5 of the default search) were
    drawn on top of each other."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.transforms import Bbox

    renderer = FigureCanvasAgg(figure).get_renderer()
    inside = figure.bbox
    labels = [text for text in axes.texts if text.get_gid() == RANK_LABEL]
    ring = RING_SIZE**0.5 / 2 * figure.dpi / 72  # the ring's radius, in pixels
    rings = [Bbox.from_bounds(x - ring, y - ring, 2 * ring, 2 * ring) for x, y in (axes.transData.transform(label.xy) for label in labels)]
    fixed = [artist.get_window_extent(renderer) for artist in (axes.title if axes.get_title() else None, axes.get_legend()) if artist is not None]
    placed: list = []
    for index, label in enumerate(labels):
        covered = fixed + placed + rings[:index] + rings[index + 1:]
        best, least = RANK_OFFSETS[0], None
        for offset in RANK_OFFSETS:
            _offset(label, offset)
            box = label.get_window_extent(renderer).padded(1.5)
            overlap = sum(_overlap(box, other) for other in covered) + (0.0 if _within(box, inside) else box.width * box.height)
            if least is None or overlap < least:
                best, least = offset, overlap
            if overlap == 0:
                break
        _offset(label, best)
        placed.append(label.get_window_extent(renderer).padded(1.5))


def _offset(label, offset: tuple[int, int]) -> None:
    label.xyann = offset
    label.set_horizontalalignment("left" if offset[0] > 0 else "right")


def _overlap(a, b) -> float:
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return width * height if width > 0 and height > 0 else 0.0


def _within(box, outer) -> bool:
    return box.x0 >= outer.x0 and box.x1 <= outer.x1 and box.y0 >= outer.y0 and box.y1 <= outer.y1


def _selection_legend(figure: Figure, selected: Sequence[Candidate], objectives: Sequence[str]) -> None:
    """The selection spelled out under the axes: rank, deployment, GPUs, objective values."""
    lines = []
    for rank, c in enumerate(list(selected)[:MARKED], 1):
        values = ", ".join(f"{name}={c.objectives[name]:,.1f}" for name in objectives if name in c.objectives)
        lines.append(f"#{rank}  {c.label()}  ({c.used_gpus} GPUs)  {values}")
    if lines:
        figure.text(0.01, 0.01, "\n".join(lines), fontsize=7.5, family="monospace", va="bottom")
        figure.subplots_adjust(bottom=0.1 + 0.026 * len(lines))


def _screened(axes: Axes, screened: Sequence[Candidate], x_of: Coordinate, y_of: Coordinate) -> None:
    """Screening replays (docs/search.md step 5): what the study learnt from, faint under the answer."""
    if screened:
        axes.scatter([x_of(c) for c in screened], [y_of(c) for c in screened], marker=".", color="0.75", s=18,
                     label=f"screened: a shorter replay, not the answer ({len(screened)})", zorder=0)


def _scalar(axes: Axes, scored: list[Candidate], unscored: list[Candidate], objective: str, selected: Sequence[Candidate],
            screened: Sequence[Candidate] = ()) -> None:
    def score(c: Candidate) -> float:
        return c.objectives[objective]

    _screened(axes, screened, lambda c: c.used_gpus, score)
    values = [score(c) for c in scored]
    low, high = min(values), max(values)
    floor = low - 0.08 * ((high - low) or abs(low) or 1.0)  # the failure strip, under every score
    _scatter_groups(axes, scored, lambda c: c.used_gpus, score)
    if unscored:
        axes.scatter([c.used_gpus for c in unscored], [floor] * len(unscored), marker="x", color="0.6", s=30,
                     label=f"{_statuses(unscored)} ({len(unscored)})", zorder=1)
    _mark_selected(axes, selected, [objective], lambda c: c.used_gpus, score)
    axes.set_xlabel("GPUs used")
    axes.set_ylabel(_axis_label(objective))
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


def _against_sla(axes: Axes, candidates: Sequence[Candidate], metric: str, bound: float, selected: Sequence[Candidate]) -> None:
    """Under an SLA-constrained goal: the bounded latency of every replay vs GPUs, the SLA as a
    line; the points under it are the feasible ones, the smallest of them the answer."""
    measured = [c for c in candidates if metric in c.metrics]

    def latency(c: Candidate) -> float:
        return c.metrics[metric]

    _scatter_groups(axes, [c for c in measured if c.feasible], lambda c: c.used_gpus, latency)
    missed = [c for c in measured if not c.feasible]
    if missed:
        axes.scatter([c.used_gpus for c in missed], [latency(c) for c in missed], marker="x", color="0.6", s=30,
                     label=f"{_statuses(missed)} ({len(missed)})", zorder=1)
    axes.axhline(bound, color="crimson", linestyle="--", linewidth=1.2, label=f"SLA: {metric} ≤ {bound:,.6g}", zorder=1)
    _mark_selected(axes, [c for c in selected if metric in c.metrics], [], lambda c: c.used_gpus, latency)
    if max(map(latency, measured)) > 20 * bound:  # queueing blow-ups: keep the line readable
        axes.set_yscale("log")
    axes.set_xlabel("GPUs used")
    axes.set_ylabel(f"{metric.replace('_', ' ')} — lower is better")
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))


def _pareto(axes: Axes, scored: list[Candidate], unscored: list[Candidate], objectives: Sequence[str], selected: Sequence[Candidate],
            screened: Sequence[Candidate] = ()) -> None:
    x_name, y_name = objectives[0], objectives[1]

    def x_of(c: Candidate) -> float:
        return c.objectives[x_name]

    def y_of(c: Candidate) -> float:
        return c.objectives[y_name]

    _screened(axes, screened, x_of, y_of)
    _scatter_groups(axes, scored, x_of, y_of)
    front = sorted(pareto_front(scored, lambda c: [signed_score(x_name, c.objectives), signed_score(y_name, c.objectives)]), key=x_of)
    axes.plot([x_of(c) for c in front], [y_of(c) for c in front], color="black", linewidth=1.2, linestyle="--",
              marker="D", markersize=4, label=f"front ({len(front)})", zorder=2)
    if unscored:
        axes.plot([], [], linestyle="none", marker="x", color="0.6", label=f"{_statuses(unscored)}, not shown ({len(unscored)})")
    _mark_selected(axes, selected, objectives, x_of, y_of)
    axes.set_xlabel(_axis_label(x_name))
    axes.set_ylabel(_axis_label(y_name))


def _nothing_to_plot(axes: Axes, candidates: Sequence[Candidate]) -> None:
    statuses: dict[str, int] = {}
    for c in candidates:
        statuses[c.status] = statuses.get(c.status, 0) + 1
    tally = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items())) or "no candidate evaluated"
    axes.text(0.5, 0.55, "no feasible candidate", ha="center", va="center", fontsize=20, transform=axes.transAxes)
    axes.text(0.5, 0.42, tally, ha="center", va="center", fontsize=11, color="0.4", transform=axes.transAxes)
    axes.set_axis_off()


def results_figure(
    candidates: Sequence[Candidate], *, objectives: Sequence[str], selected: Sequence[Candidate], pareto: bool, title: str,
    sla_line: tuple[str, float] | None = None,
) -> Figure:
    """The results figure: score vs used GPUs, or the Pareto front of the two first objectives; with
    `sla_line` (metric, bound: an SLA-constrained goal) that metric vs GPUs under the SLA line."""
    if not objectives:
        raise ValueError("objectives: give at least the one objective to plot")
    if pareto and len(objectives) < 2:
        raise ValueError(f"objectives: a Pareto plot needs two objectives (got {list(objectives)})")
    plotted = list(objectives[:2] if pareto else objectives[:1])
    figure = Figure(figsize=FIGSIZE, dpi=DPI)
    axes = figure.add_subplot()
    axes.set_title(title, fontsize=12)
    scored = [c for c in candidates if _plottable(c, plotted)]
    screened = [c for c in candidates if c.status == "screened" and all(name in c.objectives for name in plotted)]
    unscored = [c for c in candidates if not _plottable(c, plotted) and c.status != "screened"]
    if sla_line is not None and not pareto and any(sla_line[0] in c.metrics for c in candidates):
        _against_sla(axes, candidates, *sla_line, selected)
        axes.grid(True, alpha=0.3)
        axes.legend(fontsize=8, loc="best", framealpha=0.85)
        _selection_legend(figure, selected, plotted)
        _place_ranks(figure, axes)
        return figure
    if not scored:
        _nothing_to_plot(axes, candidates)
        return figure
    if pareto:
        _pareto(axes, scored, unscored, plotted, selected, screened)
    else:
        _scalar(axes, scored, unscored, plotted[0], selected, screened)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8, loc="best", framealpha=0.85)
    _selection_legend(figure, selected, plotted)
    _place_ranks(figure, axes)
    return figure


def plot_results(
    path: Path, candidates: list[Candidate], *, objectives: list[str], selected: list[Candidate], pareto: bool, title: str,
    sla_line: tuple[str, float] | None = None,
) -> Path:
    """Write `results_figure` as a PNG to `path` (parent folders created)."""
    figure = results_figure(candidates, objectives=objectives, selected=selected, pareto=pareto, title=title, sla_line=sla_line)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path
