"""The results plot: a readable PNG for scalar goals, Pareto fronts and searches with nothing feasible."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from spica.core.candidate import Candidate
from spica.evaluation.score import pareto_front
from spica.results.plot import plot_results, results_figure

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def agg(backend: str, tp: int, replicas: int) -> dict[str, Any]:
    return {
        "deployment_mode": "agg", "backend": backend, "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm",
        "tp": tp, "pp": 1, "attention_dp": 1, "moe_tp": 1, "moe_ep": 1, "strategy": "tp", "replicas": replicas,
        "used_gpus": tp * replicas, "agg_max_num_seqs": 128, "agg_max_num_batched_tokens": 8192,
        "router_mode": "kv_router",
    }


def disagg(prefill_tp: int, decode_tp: int) -> dict[str, Any]:
    return {
        "deployment_mode": "disagg", "backend": "sglang", "model_name": "Qwen/Qwen3-32B-FP8", "hardware_sku": "h200_sxm",
        "prefill_tp": prefill_tp, "prefill_pp": 1, "prefill_attention_dp": 1, "prefill_strategy": "tp", "prefill_replicas": 1,
        "decode_tp": decode_tp, "decode_pp": 1, "decode_attention_dp": 1, "decode_strategy": "tp", "decode_replicas": 2,
        "used_gpus": prefill_tp + 2 * decode_tp, "router_mode": "round_robin",
    }


def measured(index: int, unrolled: dict[str, Any], **objectives: float) -> Candidate:
    return Candidate(key=f"k{index:03d}", branch="b", round=1, status="feasible", unrolled=unrolled,
                     objectives=objectives, score=next(iter(objectives.values())))


def failed(index: int, unrolled: dict[str, Any], status: str) -> Candidate:
    return Candidate(key=f"f{index:03d}", branch="b", round=1, status=status, unrolled=unrolled, reason="KV does not fit")


@pytest.fixture
def ledger() -> list[Candidate]:
    """A small mixed search: three mode/backend groups, throughput traded against per-user speed."""
    shapes = [agg("vllm", tp, r) for tp in (1, 2, 4) for r in (1, 2)] + [agg("trtllm", tp, 2) for tp in (1, 2, 4)]
    shapes += [disagg(p, d) for p in (1, 2) for d in (1, 2, 4)]
    candidates = []
    for index, unrolled in enumerate(shapes):
        tp = unrolled.get("tp", unrolled.get("decode_tp"))
        per_gpu = 900.0 / tp**0.5 + 40 * index % 7 + (60 if unrolled["deployment_mode"] == "disagg" else 0)
        per_user = 25.0 * tp**0.6 + index % 3
        candidates.append(measured(index, unrolled, throughput_per_gpu=per_gpu, throughput_per_user=per_user))
    candidates += [failed(100, agg("vllm", 1, 4), "infeasible"), failed(101, disagg(1, 1), "failed")]
    candidates += [failed(102, agg("sglang", 8, 1), "unsupported")]
    return candidates


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def legend_labels(figure: Any) -> list[str]:
    return [text.get_text() for text in figure.axes[0].get_legend().get_texts()]


def test_scalar_plot_scores_vs_gpus(tmp_path: Path, ledger: list[Candidate]) -> None:
    feasible = [c for c in ledger if c.feasible]
    top = sorted(feasible, key=lambda c: -c.objectives["throughput_per_gpu"])[:5]
    kwargs = dict(objectives=["throughput_per_gpu"], selected=top, pareto=False, title="Qwen3-32B on h200_sxm — throughput_per_gpu")
    path = plot_results(tmp_path / "out" / "plot.png", ledger, **kwargs)
    assert path == tmp_path / "out" / "plot.png"
    assert png_size(path) == (1200, 780) and 20_000 < path.stat().st_size < 1_500_000
    figure = results_figure(ledger, **kwargs)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "GPUs used"
    assert axes.get_ylabel() == "throughput per GPU (tok/s/GPU) — higher is better"
    assert legend_labels(figure) == [
        "agg trtllm (3)", "agg vllm (6)", "disagg sglang (6)", "failed / infeasible / unsupported (3)", "selected (5)"
    ]
    best = top[0]
    assert [t.get_text() for t in axes.texts][:5] == ["#1", "#2", "#3", "#4", "#5"]
    assert axes.texts[0].xy == (best.used_gpus, best.objectives["throughput_per_gpu"])
    failures = axes.collections[3].get_offsets()  # the grey crosses sit under every score
    assert failures[:, 1].max() < min(c.objectives["throughput_per_gpu"] for c in feasible)
    assert "#1  agg" in figure.texts[0].get_text() or "#1  disagg" in figure.texts[0].get_text()


def test_pareto_plot_connects_the_front(tmp_path: Path, ledger: list[Candidate]) -> None:
    objectives = ["throughput_per_gpu", "throughput_per_user"]
    feasible = [c for c in ledger if c.feasible]
    front = pareto_front(feasible, lambda c: [c.objectives[name] for name in objectives])
    kwargs = dict(objectives=objectives, selected=front, pareto=True, title="Qwen3-32B on h200_sxm — pareto")
    path = plot_results(tmp_path / "pareto.png", ledger, **kwargs)
    assert png_size(path) == (1200, 780) and path.stat().st_size > 20_000
    figure = results_figure(ledger, **kwargs)
    axes = figure.axes[0]
    assert axes.get_xlabel() == "throughput per GPU (tok/s/GPU) — higher is better"
    assert axes.get_ylabel() == "throughput per user (tok/s/user) — higher is better"
    line = axes.lines[0]
    drawn = sorted(zip(line.get_xdata(), line.get_ydata()))
    assert drawn == sorted((c.objectives[objectives[0]], c.objectives[objectives[1]]) for c in front)
    assert f"front ({len(front)})" in legend_labels(figure)
    assert "failed / infeasible / unsupported, not shown (3)" in legend_labels(figure)


def test_minimised_objective_is_labelled_lower_is_better() -> None:
    candidates = [measured(i, agg("vllm", tp, 1), e2e_latency=900.0 / tp) for i, tp in enumerate((1, 2, 4))]
    figure = results_figure(candidates, objectives=["e2e_latency"], selected=candidates[-1:], pareto=False, title="latency")
    assert figure.axes[0].get_ylabel() == "E2E latency (ms) — lower is better"


@pytest.mark.parametrize("candidates", [[], [failed(1, agg("vllm", 1, 1), "failed"), failed(2, agg("vllm", 2, 1), "infeasible")]],
                         ids=["empty", "all-failed"])
@pytest.mark.parametrize("pareto", [False, True], ids=["scalar", "pareto"])
def test_nothing_feasible_still_writes_a_figure(tmp_path: Path, candidates: list[Candidate], pareto: bool) -> None:
    kwargs = dict(objectives=["throughput_per_gpu", "throughput_per_user"], selected=[], pareto=pareto, title="nothing")
    path = plot_results(tmp_path / "plot.png", candidates, **kwargs)
    assert png_size(path) == (1200, 780) and path.stat().st_size > 5_000
    texts = [text.get_text() for text in results_figure(candidates, **kwargs).axes[0].texts]
    assert texts[0] == "no feasible candidate"
    assert texts[1] == ("no candidate evaluated" if not candidates else "1 failed, 1 infeasible")


def test_pareto_needs_two_objectives() -> None:
    with pytest.raises(ValueError, match=r"^objectives: a Pareto plot needs two objectives \(got \['throughput'\]\)$"):
        results_figure([], objectives=["throughput"], selected=[], pareto=True, title="t")


def rank_boxes(figure: Any) -> list[Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(figure).get_renderer()
    return [(text.get_text(), text.get_window_extent(renderer)) for text in figure.axes[0].texts if text.get_gid() == "rank"]


@pytest.mark.parametrize("pareto", [False, True], ids=["scalar", "pareto"])
def test_rank_labels_of_close_points_never_overlap(pareto: bool) -> None:
    """Nine selected points a hair apart (as #4 and #5 of the default search were): every label
    readable, none on another, all inside the axes."""
    close = [measured(i, agg("vllm", 2, 2), throughput_per_gpu=1000.0 + i * 0.5, throughput_per_user=40.0 + i * 0.05) for i in range(9)]
    spread_out = [measured(20 + i, agg("trtllm", 1, i + 1), throughput_per_gpu=400.0 + 90 * i, throughput_per_user=20.0 + 9 * i) for i in range(6)]
    objectives = ["throughput_per_gpu", "throughput_per_user"] if pareto else ["throughput_per_gpu"]
    figure = results_figure(close + spread_out, objectives=objectives, selected=close, pareto=pareto, title="t")
    boxes = rank_boxes(figure)
    assert sorted(text for text, _ in boxes) == sorted(f"#{rank}" for rank in range(1, 10))
    for index, (text, box) in enumerate(boxes):
        for other_text, other in boxes[index + 1:]:
            assert not box.overlaps(other), (text, other_text)
