"""A typed view of the unrolled candidate (docs/unrolled-candidate.md): read once from the flat dict.

The flat dict stays the wire and ledger format (upstream's keys, content-addressed by
`candidate_key`); evaluation, manifests, the Planner's config, the ledger's labels and the tables
read this view instead of re-deriving the same facts (a role's key prefix, its GPUs per worker,
its hardware) from the keys each time.

A pool needs its `tp`; every other field a record may lack (a ledger row
written for a plot or a Planner check holds a few keys) is None or its neutral value (pp, replicas,
attention_dp, moe_tp, moe_ep: 1). An unrolled sample holds them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from spica.core.quant import QUANT_NAMES

Mode = Literal["agg", "disagg"]
ROLES: Mapping[str, tuple[str, ...]] = {"agg": ("agg",), "disagg": ("prefill", "decode")}
"""The worker roles of each deployment mode."""
MODES: tuple[str, ...] = tuple(ROLES)
EVERY_ROLE: tuple[str, ...] = tuple(role for roles in ROLES.values() for role in roles)
SHAPE_KEYS = ("tp", "pp", "attention_dp", "moe_tp", "moe_ep")
"""One worker's parallel shape (spica.space.shapes.WorkerShape); a pool adds its `replicas`."""
WORKER_TYPES = {"agg": "aggregated", "prefill": "prefill", "decode": "decode"}
ROUTER_KNOBS = (
    "overlap_score_credit",
    "prefill_load_scale",
    "router_temperature",
    "host_cache_hit_weight",
    "disk_cache_hit_weight",
    "router_queue_threshold",
)


def shape_prefix(role: str) -> str:
    """The prefix of a role's shape keys: none for agg (`tp`), the role for disagg (`prefill_tp`)."""
    return "" if role == "agg" else f"{role}_"


def role_hardware_sku(unrolled: Mapping[str, Any], role: str) -> str:
    """The system a role runs on: its own `{role}_hardware_sku` (mixed-hardware disagg), else `hardware_sku`."""
    return str(unrolled.get(f"{role}_hardware_sku") or unrolled["hardware_sku"])


@dataclass(frozen=True)
class Pool:
    """One worker pool ("agg", "prefill" or "decode"): its hardware, shape, replicas and engine knobs."""

    role: str
    hardware_sku: str
    tp: int
    pp: int
    attention_dp: int
    moe_tp: int
    moe_ep: int
    strategy: str | None
    replicas: int
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    block_size: int | None
    gpu_memory_utilization: float | None
    prefix_caching: bool | None
    num_gpu_blocks: int | None
    kv_capacity_tokens: int | None  # None: no memory model sized it

    @classmethod
    def of(cls, unrolled: Mapping[str, Any], role: str) -> "Pool":
        shape = shape_prefix(role)

        def read(name: str, kind: type) -> Any:
            value = unrolled.get(f"{role}_{name}")
            return None if value is None else kind(value)

        return cls(
            role=role,
            hardware_sku=role_hardware_sku(unrolled, role),
            tp=int(unrolled[f"{shape}tp"]),
            **{key: int(unrolled.get(f"{shape}{key}", 1)) for key in SHAPE_KEYS[1:]},
            strategy=unrolled.get(f"{shape}strategy"),
            replicas=int(unrolled.get(f"{shape}replicas", 1)),
            max_num_seqs=read("max_num_seqs", int),
            max_num_batched_tokens=read("max_num_batched_tokens", int),
            block_size=read("block_size", int),
            gpu_memory_utilization=read("gpu_memory_utilization", float),
            prefix_caching=read("enable_prefix_caching", bool),
            num_gpu_blocks=read("num_gpu_blocks", int),
            kv_capacity_tokens=read("kv_capacity_tokens", int),
        )

    @property
    def gpus(self) -> int:
        """GPUs of one worker (engine): tp × pp × attention_dp."""
        return self.tp * self.pp * self.attention_dp

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas

    @property
    def disaggregated(self) -> bool:
        return self.role != "agg"

    @property
    def moe(self) -> bool:
        return self.moe_tp * self.moe_ep > 1

    @property
    def worker_type(self) -> str:
        return WORKER_TYPES[self.role]

    @property
    def label(self) -> str:
        """E.g. '2xtp4' (replicas × strategy and GPUs per worker)."""
        return f"{self.replicas}x{self.strategy}{self.gpus}"


@dataclass(frozen=True)
class Router:
    """`router_mode` and the KV router's knobs that are set."""

    mode: str | None
    knobs: Mapping[str, float]


@dataclass(frozen=True)
class Planner:
    """The scaling policy as unrolled: the entry as given and both switches."""

    policy: Any
    throughput: bool
    load: bool
    target: str | None

    @property
    def enabled(self) -> bool:
        return self.throughput or self.load


@dataclass(frozen=True)
class Unrolled:
    """The whole candidate: its pools, router, planner and resolved workload, beside the flat dict."""

    flat: Mapping[str, Any]
    mode: str
    backend: str
    backend_version: str | None
    model_name: str | None
    pools: tuple[Pool, ...]
    router: Router
    planner: Planner
    context_length: int | None
    startup_time: float | None
    nextn: int
    nextn_accepted: float | None
    quant: Mapping[str, str]
    num_g2_blocks: int
    kv_bytes_per_token: int | None
    kv_transfer_bandwidth_gbps: float | None
    concurrency: int | None
    used_gpus: int

    @classmethod
    def of(cls, unrolled: "Unrolled | Mapping[str, Any]") -> "Unrolled":
        """The view of a flat candidate dict (a view is returned as it is)."""
        if isinstance(unrolled, Unrolled):
            return unrolled
        u = unrolled
        mode = u["deployment_mode"]
        if mode not in ROLES:
            raise ValueError(f"mode: {mode!r} is not one of {', '.join(ROLES)}")

        def optional(key: str, kind: type) -> Any:
            return None if u.get(key) is None else kind(u[key])

        return cls(
            flat=u,
            mode=mode,
            backend=u["backend"],
            backend_version=u.get("backend_version"),
            model_name=u.get("model_name"),
            pools=tuple(Pool.of(u, role) for role in ROLES[mode]),
            router=Router(u.get("router_mode"), {name: float(u[name]) for name in ROUTER_KNOBS if u.get(name) is not None}),
            planner=Planner(
                u.get("planner_scaling_policy"),
                bool(u.get("enable_throughput_scaling", False)),
                bool(u.get("enable_load_scaling", False)),
                u.get("planner_optimization_target"),
            ),
            context_length=optional("context_length", int),
            startup_time=optional("startup_time", float),
            nextn=int(u.get("aic_nextn") or 0),
            nextn_accepted=optional("nextn_accepted", float),
            quant={name: u[name] for name in QUANT_NAMES if u.get(name) is not None},
            num_g2_blocks=int(u.get("num_g2_blocks") or 0),
            kv_bytes_per_token=optional("kv_bytes_per_token", int),
            kv_transfer_bandwidth_gbps=optional("kv_transfer_bandwidth_gbps", float),
            concurrency=optional("concurrency", int),
            used_gpus=int(u.get("used_gpus", 0)),
        )

    @property
    def roles(self) -> tuple[str, ...]:
        return ROLES[self.mode]

    def pool(self, role: str) -> Pool:
        if role not in WORKER_TYPES:
            raise ValueError(f"role: {role!r} is not one of {', '.join(WORKER_TYPES)}")
        for pool in self.pools:
            if pool.role == role:
                return pool
        raise ValueError(f"role {role!r} does not exist in a {self.mode} candidate")

    @property
    def hardware_skus(self) -> tuple[str, ...]:
        """The systems the candidate runs on, in role order, each once."""
        return tuple(dict.fromkeys(pool.hardware_sku for pool in self.pools))

    @property
    def mixed_hardware(self) -> bool:
        return len(self.hardware_skus) > 1

    @property
    def pinned_hardware(self) -> bool:
        """Whether the deployment must name its GPUs: its roles differ, or its system was chosen among several."""
        return self.mixed_hardware or "searched_hardware_skus" in self.flat

    @property
    def label(self) -> str:
        """A short human description: mode, backend and shape, e.g. 'disagg vllm P 1xtp2 + D 2xtp4'."""
        if self.mode == "agg":
            shape = self.pools[0].label + (f" @{self.hardware_skus[0]}" if self.pinned_hardware else "")
        else:
            shape = " + ".join(
                f"{pool.role[0].upper()} {pool.label}" + (f" @{pool.hardware_sku}" if self.pinned_hardware else "")
                for pool in self.pools
            )
        return f"{self.mode} {self.backend} {shape}"
