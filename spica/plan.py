"""Frozen plans: a validated config plus the exact versions and data it was made with.

A plan file is meant to be committed. Running it later refuses a file whose fingerprint does
not match its content (hand edits) or whose recorded versions differ from the installed ones
(a different simulator gives different numbers), so a plan always means one result.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from spica.config import ConfigError, SLATarget, SmartSearchConfig
from spica.config.loading import load_yaml
from spica.core.errors import UserError
from spica.core.goals import GOALS
from spica.evaluation import clock
from spica.planner.policies import filter_scaling_policies, is_static
from spica.study.algorithms import ALGORITHMS

PLAN_FORMAT = 2
"""Bumped when a plan's fields would score otherwise than when it was written: 2, screening's
default (sweep.screen_request_ratio: auto), which a plan of format 1 leaves out and never ran with."""
VERSIONED_PACKAGES = (
    "spica",
    "ai-dynamo",
    "ai-dynamo-runtime",
    "aisimulate",
    "aiconfigurator",
    "aiconfigurator-core",
    "google-vizier",
)


class PlanError(UserError):
    """A plan file that must not be run as it is; the message says why and what to do."""


def installed_versions(packages: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str]:
    versions = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fingerprint(body: Mapping[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class Plan:
    """What a search will do, exactly: config, seed, versions, input data digest."""

    config: SmartSearchConfig
    versions: Mapping[str, str]
    trace_sha256: str | None
    fingerprint: str
    calibration: Mapping[str, Any] | None = None
    """The timing calibration every candidate is scored with (spica/evaluation/calibration.py's
    `for_search`: file name, digest, factors per system/backend); None: uncalibrated."""

    @property
    def seed(self) -> int:
        return self.config.sweep.seed

    @property
    def short_id(self) -> str:
        return self.fingerprint[:12]

    @functools.cached_property
    def scores_fingerprint(self) -> str:
        """What a candidate's measured result depends on beyond the candidate itself (whose
        unrolled sample is self-contained): the traffic, the goal, the timing mode, the versions,
        the trace and, with kv_router, the clock its draws read (spica/evaluation/clock.py).
        Sweep settings such as parallel_evals, rounds or the time cap are left out, so changing
        them keeps every finished result; the seed counts only where it draws the traffic (a
        request-rate workload's arrivals, a length spread's lengths)."""
        config = self.config
        body = {
            # an algorithm's own packages choose the candidates, they never score one
            "versions": {name: version for name, version in self.versions.items() if name in VERSIONED_PACKAGES},
            "trace_sha256": self.trace_sha256,
            "workload": _workload_body(config),
            # no prices, no key: earlier results folders keep their fingerprint
            "goal": config.goal.model_dump(mode="json", exclude={"gpu_hour_price"} if config.goal.gpu_hour_price is None else None),
            "timing": config.sweep.timing,
            "arrival_seed": config.sweep.seed if config.workload.kind == "request_rate" or config.workload.length_spread else None,
        }
        if self.calibration:  # absent when uncalibrated, so earlier results folders keep their fingerprint
            body["calibration"] = dict(self.calibration)
        if "kv_router" in config.search_space.router_mode:  # the clock its draws read (absent otherwise, as above)
            body["replay_clock"] = clock.identity()
        return _fingerprint(body)

    def body(self) -> dict[str, Any]:
        return _body(self.config, self.versions, self.trace_sha256, self.calibration)

    def to_yaml(self) -> str:
        header = (
            "# Spica plan: a validated SmartSearchConfig frozen with the versions that will run it.\n"
            "# Run it with `spica run-plan <this file>`. Do not edit: the fingerprint covers every line below.\n"
        )
        document = {"fingerprint": self.fingerprint, **self.body()}
        return header + yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=110)

    def write(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.to_yaml())
        return path


def _workload_body(config: SmartSearchConfig) -> dict[str, Any]:
    """The workload as its results depend on it; client_start is absent at its default, so results
    measured before it existed keep their fingerprint."""
    workload = config.workload.model_dump(mode="json")
    if workload.get("client_start") is None:
        workload.pop("client_start", None)
    return workload


def _body(
    config: SmartSearchConfig, versions: Mapping[str, str], trace_sha256: str | None, calibration: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    body = {
        "plan_format": PLAN_FORMAT,
        "seed": config.sweep.seed,
        "versions": dict(versions),
        "trace_sha256": trace_sha256,
        "config": config.to_data(),
    }
    if calibration:
        body["calibration"] = dict(calibration)
    return body


def with_usable_policies(config: SmartSearchConfig) -> SmartSearchConfig:
    """docs/search.md step 2: drop the planner scaling policies the goal cannot use (each logged) and
    write the kept list back, so the plan, its fingerprint and the search all mean the same."""
    goal, space = config.goal, config.search_space
    sla = goal.sla or SLATarget()
    try:
        result = filter_scaling_policies(space.scaling_policies(), goal.target, sla.ttft_ms, sla.itl_ms, sla.e2e_ms)
    except ValueError as exc:
        raise ConfigError([f"search_space.planner_scaling_policy: {exc}"]) from None
    if len(result.kept) == len(space.planner_scaling_policy):
        return config
    kept = {name for name, _ in result.kept}
    entries = [entry for (name, _), entry in zip(space.scaling_policies(), space.planner_scaling_policy) if name in kept]
    data = config.to_data()
    data["search_space"]["planner_scaling_policy"] = entries
    return SmartSearchConfig.from_mapping(data)


def scale_free(config: SmartSearchConfig) -> bool:
    """Whether scaling a deployment's replicas (and, with them, its load) leaves its scores alone."""
    space, goal = config.search_space, config.goal
    return (
        config.workload.kind == "kv_load_ratio"
        and list(space.router_mode) == ["round_robin"]
        and all(is_static(fields) for _, fields in space.scaling_policies())
        and not any(GOALS[name].extensive for name in goal.objectives)
        and goal.min_goodput_rps is None
    )


def compile_plan(config: SmartSearchConfig, calibration: Mapping[str, Any] | None = None) -> Plan:
    """`calibration`: the search's timing calibration as `spica.evaluation.calibration.for_search` gives it."""
    config = with_usable_policies(config)
    trace = config.workload.trace_path
    trace_sha256 = file_sha256(trace) if trace else None
    versions = installed_versions(VERSIONED_PACKAGES + ALGORITHMS[config.sweep.algorithm].packages)
    calibration = dict(calibration) if calibration else None
    return Plan(config, versions, trace_sha256, _fingerprint(_body(config, versions, trace_sha256, calibration)), calibration)


def load_plan(path: str | Path, *, check_versions: bool = True) -> Plan:
    """Read and verify a plan file; PlanError (one line) when it must not run."""
    data = load_yaml(path)
    if not isinstance(data, dict) or "fingerprint" not in data or "config" not in data:
        raise PlanError(f"{path}: not a Spica plan (no fingerprint/config); write one with `spica compile`")
    recorded = data.pop("fingerprint")
    if data.get("plan_format") != PLAN_FORMAT:
        raise PlanError(f"{path}: plan_format {data.get('plan_format')!r} is not {PLAN_FORMAT}; recompile it")
    if _fingerprint(data) != recorded:
        raise PlanError(f"{path}: fingerprint does not match the content (the file was edited); recompile it with `spica compile`")
    versions, seed, trace_sha256 = data.get("versions"), data.get("seed"), data.get("trace_sha256")
    if not isinstance(versions, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in versions.items()):
        raise PlanError(f"{path}: versions must map each package to its version, got {versions!r:.60}; recompile it")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise PlanError(f"{path}: seed must be an integer, got {seed!r:.60}; recompile it")
    if trace_sha256 is not None and not isinstance(trace_sha256, str):
        raise PlanError(f"{path}: trace_sha256 must be a sha256 string or null, got {trace_sha256!r:.60}; recompile it")
    try:
        config = SmartSearchConfig.from_mapping(data["config"])
    except ConfigError as exc:
        raise PlanError(f"{path}: the recorded config is no longer valid: {exc.lines[0]}") from None
    if with_usable_policies(config) != config:
        raise PlanError(f"{path}: its planner_scaling_policy holds policies its goal cannot use; recompile it with `spica compile`")
    if data["seed"] != config.sweep.seed:
        raise PlanError(f"{path}: seed {data['seed']} differs from sweep.seed {config.sweep.seed}")
    if check_versions:
        installed = installed_versions(data["versions"])
        drift = [f"{name} {want} (installed {installed.get(name)})" for name, want in data["versions"].items() if installed.get(name) != want]
        if drift:
            raise PlanError(f"{path}: made with other versions: {'; '.join(drift)}; install those or recompile the plan")
    trace = config.workload.trace_path
    if trace and data["trace_sha256"] != file_sha256(trace):
        raise PlanError(f"{path}: the trace {trace} changed since the plan was compiled (sha256 differs)")
    calibration = data.get("calibration")
    if calibration is not None and not (isinstance(calibration, dict) and isinstance(calibration.get("factors"), dict)):
        raise PlanError(f"{path}: calibration must be the mapping `spica compile` wrote; recompile it")
    return Plan(config, data["versions"], data["trace_sha256"], recorded, calibration)
