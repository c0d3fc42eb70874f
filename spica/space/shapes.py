"""Per-worker parallel shapes, the rules that make a shape legal on a backend, and model facts.

A shape is what one worker (engine) runs: tp × pp × attention_dp GPUs, with the MoE layers
split moe_tp × moe_ep over the same GPUs. The rules are kept as data (name, statement,
source) so a table or an error can say which one excluded a shape and where it comes from.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from spica.backends import AIC_ENUMERATOR, LegalityRule, legality_rules
from spica.core.errors import UserError
from spica.core.unrolled import SHAPE_KEYS

GPUS_PER_WORKER = (1, 2, 4, 8, 16)
WIDE_EP_GPUS_PER_WORKER = (32, 64)
"""MoE workers wider than GPUS_PER_WORKER: AI Configurator's wide expert-parallel widths, whose
experts are split whole over every GPU (moe_tp 1, moe_ep = width) under tp ≤ WIDE_EP_MAX_TP
attention. Offered only where one NVLink domain holds the worker (`capacity.nvlink_domain`:
GB200 / GB300 NVL72 racks), so the experts' all-to-all stays on NVLink."""
WIDE_EP_MAX_TP = 8
WIDE_EP_SOURCE = "aiconfigurator.sdk.task_v2.build_disagg_parallel_lists (wide EP: trtllm and sglang, tp ≤ 8, up to 64 GPUs)"


@dataclass(frozen=True)
class ModelInfo:
    """What the search space needs to know about a model, read from AI Configurator's config."""

    name: str
    architecture: str
    is_moe: bool
    max_context: int


@functools.lru_cache(maxsize=None)
def bundled_models() -> list[str] | None:
    """The HF ids whose configs AI Configurator ships (its package's model_configs folder);
    None for a release that keeps them elsewhere (before aiconfigurator-core)."""
    try:
        folder = importlib.resources.files("aiconfigurator_core") / "model_configs"
    except ModuleNotFoundError:
        return None
    suffix = "_config.json"
    return sorted(
        entry.name[: -len(suffix)].replace("--", "/", 1)
        for entry in folder.iterdir()
        if entry.name.endswith(suffix) and not entry.name.endswith("_hf_quant_config.json")
    )


def load_model_info(model_name: str) -> ModelInfo:
    """Dense vs MoE and the max context from AI Configurator's bundled (or local) HF config."""
    from aiconfigurator.sdk.utils import get_model_config_from_model_path

    if not (Path(model_name) / "config.json").is_file():
        bundled = bundled_models()
        if bundled is not None and model_name not in bundled:  # AIC would try to download it, which cannot work offline
            close = difflib.get_close_matches(model_name, bundled, n=4, cutoff=0.6)
            hint = f"; close names: {', '.join(close)}" if close else f" (e.g. {', '.join(sorted(bundled)[:3])})"
            raise UserError(
                f"search_space.model_name: {model_name!r} is not among AI Configurator's {len(bundled)} bundled models and is "
                f"not a local folder with a config.json{hint}"
            )
    try:
        parsed = get_model_config_from_model_path(model_name)
    except Exception as exc:  # AIC raises its own download / parse errors
        raise UserError(
            f"model_name {model_name!r}: AI Configurator has no usable config for it ({exc})"
        ) from exc
    return ModelInfo(
        name=model_name,
        architecture=str(parsed["architecture"]),
        is_moe=int(parsed.get("num_experts") or 0) > 0,
        max_context=int(parsed["context"]),
    )


@dataclass(frozen=True, order=True)
class WorkerShape:
    """One worker's parallel layout; field names are the published parallel_configs keys."""

    tp: int = 1
    pp: int = 1
    attention_dp: int = 1
    moe_tp: int = 1
    moe_ep: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.attention_dp

    @property
    def attention_mode(self) -> str:
        """How attention is spread: 'tp', 'dp' (one rank per sequence set) or 'tp+dp'."""
        if self.attention_dp == 1:
            return "tp"
        return "dp" if self.tp == 1 else "tp+dp"

    @property
    def ffn_mode(self) -> str:
        """How MoE experts are spread: 'tp' (sliced), 'ep' (whole experts per GPU) or 'tp+ep'."""
        if self.moe_ep == 1:
            return "tp"
        return "ep" if self.moe_tp == 1 else "tp+ep"

    @property
    def attention_tp_fraction(self) -> float:
        """Share of the attention width (log2) that is TP: 1 = pure TP, 0 = pure DP."""
        width = self.tp * self.attention_dp
        return 1.0 if width == 1 else math.log2(self.tp) / math.log2(width)

    @property
    def ffn_ep_fraction(self) -> float:
        """Share of the MoE width (log2) that is EP: 0 = pure TP, 1 = pure EP."""
        width = self.moe_tp * self.moe_ep
        return 0.0 if width == 1 else math.log2(self.moe_ep) / math.log2(width)

    @property
    def is_wide_ep(self) -> bool:
        """A wide expert-parallel worker (WIDE_EP_GPUS_PER_WORKER)."""
        return (
            self.gpus in WIDE_EP_GPUS_PER_WORKER and self.pp == 1 and self.moe_tp == 1
            and self.moe_ep == self.gpus and self.tp <= WIDE_EP_MAX_TP
        )

    @property
    def is_mixed(self) -> bool:
        return "+" in self.attention_mode or "+" in self.ffn_mode

    @property
    def strategy(self) -> str:
        """'tp', 'tep' (TP attention, EP experts), 'dep' (DP attention, EP experts), else
        'attention/ffn' modes, e.g. 'tp+dp/ep'."""
        named = {("tp", "tp"): "tp", ("tp", "ep"): "tep", ("dp", "ep"): "dep"}
        return named.get((self.attention_mode, self.ffn_mode), f"{self.attention_mode}/{self.ffn_mode}")

    @property
    def label(self) -> str:
        """Compact, unique text form, e.g. 'tp2 dp4 etp1 ep8' (pp shown only when > 1)."""
        parts = [f"tp{self.tp}"]
        if self.pp != 1:
            parts.append(f"pp{self.pp}")
        if self.attention_dp != 1 or self.moe_tp * self.moe_ep != 1:
            parts += [f"dp{self.attention_dp}", f"etp{self.moe_tp}", f"ep{self.moe_ep}"]
        return " ".join(parts)

    def to_dict(self) -> dict[str, int]:
        return {key: getattr(self, key) for key in SHAPE_KEYS}


RULES: tuple[LegalityRule, ...] = (  # every backend's, then each backend's own (spica.backends)
    LegalityRule(
        "gpus_per_worker",
        f"tp × pp × attention_dp must be one of {list(GPUS_PER_WORKER)}, or {' or '.join(map(str, WIDE_EP_GPUS_PER_WORKER))} "
        f"for a MoE's wide expert parallelism (moe_tp 1, moe_ep = the width, tp ≤ {WIDE_EP_MAX_TP})",
        f"docs/search.md step 4; wide EP: {WIDE_EP_SOURCE}",
        (),
        lambda s, m: s.gpus in GPUS_PER_WORKER or (m.is_moe and s.is_wide_ep),
    ),
    LegalityRule(
        "no_pipeline_parallel",
        "pp must be 1",
        "Dynamo Replay's mocker rejects pp > 1; AIC real-silicon sweeps also pin pp=1",
        (),
        lambda s, m: s.pp == 1,
    ),
    LegalityRule(
        "dense_is_tp",
        "a dense model takes tensor parallelism only (attention_dp = moe_tp = moe_ep = 1)",
        f"{AIC_ENUMERATOR}: the non-MoE branch emits (tp, pp, 1, 1, 1)",
        (),
        lambda s, m: m.is_moe or s.attention_dp == s.moe_tp == s.moe_ep == 1,
    ),
    LegalityRule(
        "moe_width",
        "for MoE, tp × attention_dp must equal moe_tp × moe_ep",
        f"{AIC_ENUMERATOR}: `dp * tp * cp != moe_tp * moe_ep` is skipped",
        (),
        lambda s, m: not m.is_moe or s.tp * s.attention_dp == s.moe_tp * s.moe_ep,
    ),
) + legality_rules()


def broken_rules(shape: WorkerShape, model: ModelInfo, backend: str) -> tuple[LegalityRule, ...]:
    """The rules `shape` breaks on `backend` (empty = legal)."""
    return tuple(rule for rule in RULES if rule.applies_to(backend) and not rule.holds(shape, model))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def enumerate_shapes(model: ModelInfo, max_gpus: int, nvlink_domain: int = 0) -> tuple[WorkerShape, ...]:
    """Every shape of up to `max_gpus` GPUs the width identity allows, before backend rules.

    Dense: TP only. MoE: every split of the attention width into tp × attention_dp and of the
    same width into moe_tp × moe_ep (pure TP / TEP / DEP and the mixed forms), and the wide
    expert-parallel shapes that fit in one NVLink domain of `nvlink_domain` GPUs.
    """
    shapes: list[WorkerShape] = []
    for gpus in (g for g in GPUS_PER_WORKER if g <= max_gpus):
        if not model.is_moe:
            shapes.append(WorkerShape(tp=gpus))
            continue
        for tp in _divisors(gpus):
            for moe_tp in _divisors(gpus):
                shapes.append(WorkerShape(tp=tp, attention_dp=gpus // tp, moe_tp=moe_tp, moe_ep=gpus // moe_tp))
    for gpus in (g for g in WIDE_EP_GPUS_PER_WORKER if model.is_moe and g <= min(max_gpus, nvlink_domain)):
        shapes.extend(WorkerShape(tp=tp, attention_dp=gpus // tp, moe_ep=gpus) for tp in _divisors(gpus) if tp <= WIDE_EP_MAX_TP)
    return tuple(shapes)


def parse_shape(entry: Mapping[str, object], where: str, extra_keys: tuple[str, ...] = ()) -> WorkerShape:
    """A shape from a published parallel_configs dict (omitted keys = 1); rejects unknown keys."""
    allowed = SHAPE_KEYS + extra_keys
    for key, value in entry.items():
        if key not in allowed:
            raise UserError(f"{where}: unknown key {key!r} (allowed: {', '.join(allowed)})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UserError(f"{where}.{key}: must be a positive integer, got {value!r}")
    return WorkerShape(**{key: int(entry.get(key, 1)) for key in SHAPE_KEYS})  # type: ignore[arg-type]
