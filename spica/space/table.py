"""Plain-text view of the enumerated pools: one row per (role, shape) with KV per backend."""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from spica.space.branches import Branch, ShapeAssessment
from spica.space.capacity import aic_version, perf_data_versions
from spica.space.shapes import RULES


def _grid(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def _cell(verdict: ShapeAssessment | None) -> str:
    if verdict is None:
        return "-"
    if not verdict.viable:
        return "excluded: " + ", ".join(verdict.exclusion_codes)
    if verdict.kv_tokens is None:
        return "kv unknown"
    return f"{verdict.kv_tokens:,} / {verdict.num_gpu_blocks:,}"


def _branch_lines(branch: Branch) -> list[str]:
    skus = tuple(dict.fromkeys(branch.role_skus.values()))
    mixed = len(skus) > 1  # a single system is said once, in the header
    versions = ", ".join(
        f"{b} {branch.backend_version(b)} (perf data scorable: "
        + "; ".join(f"{', '.join(perf_data_versions(sku, b))}" + (f" on {sku}" if mixed else "") for sku in skus) + ")"
        for b in branch.backends
    )
    systems = " (" + ", ".join(f"{role} on {sku}" for role, sku in branch.role_skus.items()) + ")" if mixed else ""
    lines = [f"[{branch.name}] {len(branch.configs)} configs{systems}; backends: {versions}"]
    for backend, choices in branch.quant_choices.items():
        if not choices:
            continue
        listed = ", ".join(f"{name} [{', '.join(modes)}]" for name, modes in choices.items())
        lines.append(f"  {backend} quant choices: {listed} (KV shown at the choice that holds most)")
    columns = list(dict.fromkeys(a.backend for a in branch.assessments))
    verdicts = {(a.backend, a.role, a.shape): a for a in branch.assessments}
    replicas: dict[tuple[str, object], list[int]] = {}
    for config in branch.configs:
        for pool in config.pools:
            replicas.setdefault((pool.role, pool.shape), []).append(pool.replicas)
    header = ["role", *(["system"] if mixed else []), "shape", "strategy", "gpus", "replicas"]
    header += [f"{backend} kv_tokens / blocks" for backend in columns]
    rows = [header]
    for (role, shape), counts in sorted(replicas.items(), key=lambda item: (item[0][0] != "prefill", item[0])):
        span = f"{min(counts)}-{max(counts)}" if min(counts) != max(counts) else str(counts[0])
        row = [role, *([branch.role_skus[role]] if mixed else []), shape.label, shape.strategy, str(shape.gpus), span]  # type: ignore[attr-defined]
        row += [_cell(verdicts.get((backend, role, shape))) for backend in columns]
        rows.append(row)
    lines += _grid(rows)
    for backend in columns:
        for role in dict.fromkeys(a.role for a in branch.assessments):
            codes = Counter(c for a in branch.assessments if (a.backend, a.role) == (backend, role) for c in a.exclusion_codes)
            if codes:
                summary = ", ".join(f"{count} {code}" for code, count in sorted(codes.items()))
                lines.append(f"  {backend} {role} shapes excluded: {summary}")
            untimed = [a for a in branch.assessments if (a.backend, a.role) == (backend, role) and "no_perf_data" in a.exclusion_codes]
            if untimed:  # AIS's reason, which no rule states: the shapes and one example
                reason = next(part for part in untimed[0].exclusions if part.startswith("no_perf_data"))
                lines.append(f"  {backend} {role} shapes AIS cannot time: {', '.join(a.shape.label for a in untimed)} "
                             f"(e.g. {untimed[0].shape.label}: {reason.split(': ', 1)[1]})")
    lines += [f"  dropped {backend}: {reason}" for backend, reason in branch.dropped]
    return lines


def format_pool_table(branches: Iterable[Branch]) -> str:
    """The pools as text: a header with model / context / budget, the rules, one block per mode."""
    branches = tuple(branches)
    if not branches:
        return "no branches"
    first = branches[0]
    kind = "MoE" if first.model.is_moe else "dense"
    skus = tuple(dict.fromkeys(sku for branch in branches for sku in branch.role_skus.values()))
    per_sku = "".join(f", {sku} ≤ {budget}" for sku, budget in first.gpu_budget_per_sku.items())
    lines = [
        f"{first.model.name} ({kind}, {first.model.architecture}, max context {first.model.max_context}) "
        f"on {', '.join(skus)}; context_length {first.context_length}; gpu budget "
        f"[{first.min_gpu_budget}, {first.gpu_budget}]{per_sku}; aiconfigurator {aic_version()}",
    ]
    if not first.kv_known:
        lines.append("KV capacity unknown (no AI Configurator memory model): KV filter skipped")
    lines.append("KV per engine = per-rank KV × attention_dp; a shape is kept when one rank holds context_length.")
    lines.append("Legality rules:")
    lines += [
        f"  {rule.name} [{', '.join(rule.backends) or 'all'}]: {rule.statement} ({rule.source})" for rule in RULES
    ]
    for branch in branches:
        lines.append("")
        lines += _branch_lines(branch)
    return "\n".join(lines)
