"""The Hydra tree composes the same SmartSearchConfig; overrides read like sentences."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from spica.cli import CONF_DIR, compose, config_from_file, normalise_overrides
from spica.config import SmartSearchConfig
from spica.config.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared"))
TRACE = SHARED / "data" / "mooncake" / "conversation_trace_15min.jsonl"


def test_default_composition_is_the_embedded_search():
    config, app = compose([])
    space = config.search_space
    assert (space.model_name, space.hardware_sku, space.gpu_budget) == ("Qwen/Qwen3-32B-FP8", "h200_sxm", 8)
    assert space.backend == ["vllm", "sglang"] and space.deployment_mode == ["agg", "disagg"]
    assert config.workload.concurrency == 32 and config.goal.target == "throughput_per_gpu"
    assert (config.sweep.max_rounds, config.sweep.per_round) == (4, 2)
    assert app["results_dir"] is None and app["evaluation"]["executor"] == "local"


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
    assert info.value.lines == ["workload.trace_path: required; set it on the command line, e.g. workload.trace_path=..."]


def test_every_group_option_composes():
    for group in ("model", "system", "backend", "mode", "router", "planner", "workload", "goal", "sweep"):
        for option in sorted((CONF_DIR / group).glob("*.yaml")):
            extra = [f"workload.trace_path={TRACE}"] if (group, option.stem) == ("workload", "trace") else []
            if (group, option.stem) == ("goal", "pareto"):
                extra = []
            config, _ = compose([f"{group}={option.stem}", *extra])
            assert isinstance(config, SmartSearchConfig)


def test_config_yaml_defaults_agree_with_the_schema():
    """Every default spelled out in conf/config.yaml equals the schema's own default."""
    from spica.config.schema import SearchSpace, Sweep

    conf = yaml.safe_load((CONF_DIR / "config.yaml").read_text())
    for model, block in ((SearchSpace, "search_space"), (Sweep, "sweep")):
        for name, value in conf[block].items():
            if name in {"gpu_budget", "context_length"}:
                continue  # the embedded search's own choices (budget 8, context 4096)
            assert model.model_fields[name].default == value, name


def test_plus_prefix_is_kept_for_non_groups():
    assert normalise_overrides(["+workload=trace", "+foo.bar=1", "++sweep.seed=2"]) == ["workload=trace", "+foo.bar=1", "++sweep.seed=2"]


def test_plain_yaml_with_dotted_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    config, _ = config_from_file(str(SHARED / "scenarios" / "s1_dense_budget8.yaml"), ["sweep.seed=3"])
    assert config.sweep.seed == 3 and config.search_space.model_name == "Qwen/Qwen3-32B-FP8"


def _spica(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "spica.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


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
    run = _spica("router=both", "search_space.router_mode=[random]", "search_space.gpu_budget=0")
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "search_space.router_mode[0]: 'random' is not one of kv_router, round_robin" in run.stderr
    assert "search_space.gpu_budget: 0: input should be greater than 0" in run.stderr


def test_compile_writes_a_plan(tmp_path):
    out = tmp_path / "plan.yaml"
    run = _spica("compile", "-o", str(out), "sweep.seed=5")
    assert run.returncode == 0, run.stderr
    plan = yaml.safe_load(out.read_text())
    assert plan["seed"] == 5 and len(plan["fingerprint"]) == 64


def test_run_plan_refuses_a_tampered_plan(tmp_path):
    out = tmp_path / "plan.yaml"
    assert _spica("compile", "-o", str(out)).returncode == 0
    out.write_text(out.read_text().replace("seed: 42", "seed: 43"))
    run = _spica("run-plan", str(out))
    assert run.returncode == 2 and "fingerprint does not match the content" in run.stderr
    assert "Traceback" not in run.stderr


def test_ctrl_c_keeps_finished_work_and_says_how_to_resume(monkeypatch, capsys):
    import spica.cli
    import spica.search

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(spica.search, "run_smart_search", interrupted)
    config, app = compose([])
    with pytest.raises(SystemExit) as exit_info:
        spica.cli._search_and_report(config, app, "/tmp/results-x")
    assert exit_info.value.code == 130
    assert "interrupted. Finished evaluations are kept; run again with results_dir=/tmp/results-x to resume." in capsys.readouterr().err
