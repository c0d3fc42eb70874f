"""The Hydra tree composes the same SmartSearchConfig; overrides read like sentences."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spica.cli.config_file import config_from_file
from spica.cli.hydra_app import CONF_DIR, compose, normalise_overrides
from spica.config import SmartSearchConfig
from spica.config.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared"))
TRACE = SHARED / "data" / "mooncake" / "conversation_trace_15min.jsonl"
WORKLOAD_DATA = Path(__file__).parents[1] / "workloads" / "data"
TRACES = {"agentic_mooncake": WORKLOAD_DATA / "agentic.jsonl", "dynamo": WORKLOAD_DATA / "dynamo.jsonl"}  # else the mooncake TRACE


def test_default_composition_is_the_embedded_search():
    config, app = compose([])
    space = config.search_space
    assert (space.model_name, space.hardware_sku, space.gpu_budget) == ("Qwen/Qwen3-32B-FP8", "h200_sxm", 8)
    assert space.backend == ["vllm", "sglang"] and space.deployment_mode == ["disagg", "agg"]
    assert space.router_mode == ["round_robin"] and space.planner_scaling_policy == ["disabled"]
    assert config.workload.concurrency == 32 and config.goal.target == "throughput_per_gpu"
    assert (config.sweep.max_rounds, config.sweep.per_round, config.sweep.random_seed) == (4, 2, 42)
    assert app.results_dir is None and app.evaluation.executor == "local"


def test_overrides_from_the_issue():
    config, _ = compose(["model=qwen3_32b", "system=h200_sxm", "goal=goodput", "goal.sla.ttft_ms=500"])
    assert config.search_space.model_name == "Qwen/Qwen3-32B"
    assert config.goal.target == "goodput" and config.goal.sla.ttft_ms == 500 and config.goal.sla.itl_ms == 50


def test_trace_workload_with_plus_or_without():
    for spelling in ("+workload=trace", "workload=trace"):
        config, _ = compose([spelling, f"workload.trace_path={TRACE}"])
        assert config.workload.trace_path == str(TRACE) and config.workload.isl is None


def test_trace_without_path_names_the_field():
    with pytest.raises(ConfigError) as info:
        compose(["workload=trace"])
    assert info.value.lines[0] == "workload.trace_path: required; set it on the command line, e.g. workload.trace_path=..."


def _leaves(data: dict, path: tuple = ()) -> dict[tuple, object]:
    """{('search_space', 'backend'): ['vllm'], ...}: every value a mapping sets, by its path."""
    out: dict[tuple, object] = {}
    for key, value in data.items():
        out.update(_leaves(value, (*path, key)) if isinstance(value, dict) else {(*path, key): value})
    return out


def _option(path: Path) -> dict[tuple, object]:
    """What a group option file sets, by its path in the composed config (its `# @package` first)."""
    package = path.read_text().splitlines()[0].removeprefix("# @package ").strip()
    prefix = () if package == "_global_" else tuple(package.split("."))
    return _leaves(yaml.safe_load(path.read_text()) or {}, prefix)


def _needs(group: str, stem: str, sets: dict) -> list[str]:
    """What an option needs beside it to validate: a trace file in its format, or prices (and the systems they price)."""
    from spica.core.goals import GOALS

    if group == "workload" and ("workload", "trace_format") in sets:  # a trace of the option's format
        return [f"workload.trace_path={TRACES.get(sets[('workload', 'trace_format')], TRACE)}"]
    named = [sets.get(("goal", "target")), *(sets.get(("goal", "pareto_objectives")) or [])]
    if group == "goal" and any(GOALS[name].priced for name in named if name in GOALS):
        return ["goal.gpu_hour_price={h200_sxm:3.5}"]
    if group == "prices" and stem != "none":
        return [f"hardware={stem.removeprefix('example_')}", "goal=cost_per_mtok"]
    return []


@pytest.mark.parametrize("group", ["model", "system", "hardware", "backend", "mode", "role_hardware", "router", "planner", "quant",
                                   "speculation", "workload", "goal", "prices", "sweep"])
def test_every_group_option_composes_to_what_it_sets(group):
    """Each option's values reach the validated config; an option that sets nothing (e.g.
    role_hardware=same) leaves what its siblings set at the schema's default (a required field,
    hardware=system's hardware_sku, at what the embedded default composes; a price, at none)."""
    from spica.config.app import schema_defaults

    baseline = _leaves(compose([])[0].model_dump(mode="json"))
    defaults = {**baseline, **_leaves(schema_defaults())}
    options = {path.stem: _option(path) for path in sorted((CONF_DIR / group).glob("*.yaml"))}
    siblings = {key for sets in options.values() for key in sets}
    for stem, sets in options.items():
        config, _ = compose([f"{group}={stem}", *_needs(group, stem, sets)])
        composed = _leaves(config.model_dump(mode="json"))
        expected = {key: value for key, value in sets.items() if value != "???"} or {key: defaults.get(key) for key in siblings}
        assert {key: composed.get(key) for key in expected} == expected, f"{group}={stem}"


EMBEDDED_CHOICES = {
    # what conf/ deliberately sets otherwise than the schema, so that `spica` alone stays small
    ("search_space", "gpu_budget"): 8,
    ("search_space", "context_length"): 4096,
    ("search_space", "prefill_max_num_seqs"): [1, 2, 4, 8],
    ("search_space", "backend"): ["vllm", "sglang"],
    ("search_space", "router_mode"): ["round_robin"],
    ("search_space", "planner_scaling_policy"): ["disabled"],
    ("sweep", "max_rounds"): 4,
    ("sweep", "candidates_per_round"): 2,
    ("sweep", "parallel_evals"): 2,
    ("sweep", "random_seed"): 42,
    ("goal", "target"): "throughput_per_gpu",
}


def test_conf_sets_only_the_embedded_searchs_own_choices():
    """The schema owns every default: the composed default differs from it exactly where the
    embedded search says so (a stale copy of a default in conf/ would show up here)."""
    from spica.config import OptimizationGoal, SearchSpace, SweepConfig

    config, _ = compose([])
    composed = config.model_dump(mode="json")
    schema = {"search_space": SearchSpace, "goal": OptimizationGoal, "sweep": SweepConfig}
    differing = {}
    for block, model in schema.items():
        for name, field in model.model_fields.items():
            if field.is_required():
                continue
            default = model.model_validate({**{n: composed[block][n] for n in ("model_name", "hardware_sku") if block == "search_space"}}).model_dump(mode="json")[name]
            if composed[block][name] != default:
                differing[(block, name)] = composed[block][name]
    assert differing == EMBEDDED_CHOICES


def test_the_app_blocks_are_validated_like_the_rest():
    with pytest.raises(ConfigError) as info:
        compose(["+evaluation.max_paralel=3"])
    assert info.value.lines == ["evaluation.max_paralel: unknown field; allowed: calibration, container_image, container_mode, executor, max_parallel, slurm_partition"]
    with pytest.raises(ConfigError) as info:
        compose(["evaluation.executor=cloud"])
    assert info.value.lines == ["evaluation.executor: 'cloud' is not one of local, slurm"]


def test_plus_prefix_is_kept_for_non_groups():
    assert normalise_overrides(["+workload=trace", "+foo.bar=1", "++sweep.random_seed=2"]) == ["workload=trace", "+foo.bar=1", "++sweep.random_seed=2"]


def test_plain_yaml_with_dotted_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config, _ = config_from_file(str(SHARED / "scenarios" / "s1_dense_budget8.yaml"), ["sweep.seed=3"])
    assert config.sweep.random_seed == 3 and config.search_space.model_name == "Qwen/Qwen3-32B-FP8"



def test_an_override_replaces_the_files_seed_under_either_name(tmp_path, monkeypatch):
    """The shared scenarios spell it `sweep.seed`; `sweep.random_seed=3` on the command line wins
    instead of being refused as both names given."""
    monkeypatch.chdir(REPO)
    scenario = str(SHARED / "scenarios" / "s1_dense_budget8.yaml")
    assert config_from_file(scenario, ["sweep.random_seed=3"])[0].sweep.random_seed == 3
    assert config_from_file(scenario, ["sweep.max_rounds=2"])[0].sweep.random_seed == 42
    both = tmp_path / "both.yaml"
    both.write_text(Path(scenario).read_text().replace("  seed: 42", "  seed: 42\n  random_seed: 7"))
    with pytest.raises(ConfigError, match="seed is the earlier name of random_seed; give only random_seed"):
        config_from_file(str(both), [])

def test_conf_never_sets_hydra_mode():
    """`spica` answers Hydra's question of run or multirun without composing (spica/cli/hydra_app.py's _compose_once):
    right only while conf/ leaves `hydra.mode` unset."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from spica.cli.hydra_app import register_schema

    register_schema()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        for group in ("sweep=default", "workload=trace", "planner=all"):
            assert hydra_compose(config_name="config", overrides=[group], return_hydra_config=True).hydra.mode is None


@pytest.mark.parametrize("flags, composed", [((), ["RUN"]), (("-m",), ["MULTIRUN"]), (("hydra.mode=MULTIRUN",), ["MULTIRUN"] * 2)])
def test_hydra_composes_the_config_once_to_run_or_sweep(flags, composed, tmp_path, monkeypatch):
    """Not once more only to read `hydra.mode`, unless an override names it. Each search here
    stops at validation (exit 2), after its composition (a multirun's jobs compose by another path)."""
    from hydra._internal.hydra import Hydra

    from spica.cli.commands import main

    calls = []
    real = Hydra.compose_config
    monkeypatch.setattr(Hydra, "compose_config", lambda self, *a, **k: calls.append(k["run_mode"].name) or real(self, *a, **k))
    monkeypatch.setattr(sys, "argv", ["spica"])
    monkeypatch.chdir(tmp_path)
    budgets = "search_space.gpu_budget=0,-1" if flags else "search_space.gpu_budget=0"
    with pytest.raises(SystemExit) as exit_:
        main([*flags, budgets, f"hydra.run.dir={tmp_path / 'run'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    assert exit_.value.code == 2 and calls == composed


def _spica(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spica", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_cfg_job_prints_the_composed_config():
    run = _spica("--cfg", "job", "model=qwen3_32b")
    assert run.returncode == 0, run.stderr
    assert "model_name: Qwen/Qwen3-32B" in run.stdout


def test_help_teaches_groups_and_examples():
    run = _spica("--help")
    assert run.returncode == 0
    for text in ("model: deepseek_v3, llama3_1_70b", "spica --config-file my.yaml", "spica -m workload=chat,summarize"):
        assert text in run.stdout


def test_bad_input_is_one_line_per_problem_without_traceback(tmp_path):
    run = _spica("router=both", "search_space.router_mode=[random]", "search_space.gpu_budget=0", cwd=tmp_path)
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "search_space.router_mode[0]: 'random' is not one of kv_router, round_robin" in run.stderr
    assert "search_space.gpu_budget: 0: input should be greater than 0" in run.stderr


def test_compile_writes_a_plan(tmp_path):
    out = tmp_path / "plan.yaml"
    run = _spica("compile", "-o", str(out), "sweep.random_seed=5")
    assert run.returncode == 0, run.stderr
    plan = yaml.safe_load(out.read_text())
    assert plan["seed"] == 5 and len(plan["fingerprint"]) == 64


def test_python_dash_m_spica_takes_upstreams_config_flag(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("search_space: {model_name: m, hardware_sku: h}\nworkload: {isl: 1, osl: 1, concurrency: 2}\n")
    run = subprocess.run([sys.executable, "-m", "spica", "--config", str(config)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "workload: num_request_ratio is required for a synthetic workload" in run.stderr


def test_run_plan_refuses_a_tampered_plan(tmp_path):
    out = tmp_path / "plan.yaml"
    assert _spica("compile", "-o", str(out)).returncode == 0
    out.write_text(out.read_text().replace("seed: 42", "seed: 43"))
    run = _spica("run-plan", str(out))
    assert run.returncode == 2 and "fingerprint does not match the content" in run.stderr
    assert "Traceback" not in run.stderr


def test_an_override_hydra_refuses_exits_2(tmp_path):
    run = _spica("evaluation.max_paralel=3", f"results_dir={tmp_path / 'r'}", cwd=tmp_path)
    assert run.returncode == 2 and "Could not override 'evaluation.max_paralel'" in run.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.e2e
def test_results_dir_holds_hydras_files_and_no_outputs_folder_is_made(tmp_path):
    results = tmp_path / "r"
    run = _spica("mode=agg", "backend=vllm", "sweep.max_rounds=1", f"results_dir={results}", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (results / "ledger.json").exists() and (results / ".hydra" / "overrides.yaml").exists()
    assert not (tmp_path / "outputs").exists()
