"""The self-contained image by hand, as the README shows it: a plan and a config-file search
run offline with nothing mounted but the input (read-only) and the results folder."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
import yaml
from results_checks import check_results_folder

import spica.plan
from spica.config import SmartSearchConfig

pytestmark = pytest.mark.e2e

CONFIG = {
    "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm", "gpu_budget": 1,
                     "context_length": 4096, "deployment_mode": ["agg"], "backend": ["vllm"],
                     "agg_max_num_batched_tokens": [8192], "agg_max_num_seqs": [64],
                     "router_mode": ["round_robin"], "planner_scaling_policy": ["disabled"]},
    "workload": {"isl": 512, "osl": 32, "concurrency": 4, "num_request_ratio": 2},
    "sweep": {"algorithm": "grid", "parallel_evals": 1, "random_seed": 3},
}


def _run(image: str, inputs: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    inputs.chmod(0o755)  # readable by the image's non-root user
    out.mkdir()
    argv = ["podman", "run", "--rm", "--network=none", "-v", f"{inputs}:/in:ro", "-v", f"{out}:/out:U", image, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def test_run_plan_in_the_image_with_only_the_plan_and_the_results_folder(runtime_image, tmp_path):
    plan = spica.plan.compile_plan(SmartSearchConfig.from_mapping(CONFIG)).write(tmp_path / "plans" / "p.yaml")
    done = _run(runtime_image, plan.parent, tmp_path / "out", "run-plan", "/in/p.yaml", "-o", "/out")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "results: /out" in done.stdout
    assert check_results_folder(tmp_path / "out")[0]["status"] == "feasible"


def test_a_config_file_search_in_the_image(runtime_image, tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "search.yaml").write_text(yaml.safe_dump(CONFIG))
    done = _run(runtime_image, tmp_path / "cfg", tmp_path / "out", "--config-file", "/in/search.yaml", "results_dir=/out")
    assert done.returncode == 0, done.stderr[-2000:]
    assert check_results_folder(tmp_path / "out")[0]["status"] == "feasible"


def _plan_dir(tmp_path: Path) -> Path:
    plan = spica.plan.compile_plan(SmartSearchConfig.from_mapping(CONFIG)).write(tmp_path / "plans" / "p.yaml")
    plan.parent.chmod(0o755)  # readable by the image's non-root user
    return plan.parent


def test_the_readme_command_line_writes_the_ledger_and_the_best_candidate(runtime_image, tmp_path):
    plans, out = _plan_dir(tmp_path), tmp_path / "out"
    out.mkdir()
    argv = ["podman", "run", "--rm", "--network=none", "-v", f"{plans}:/plans:ro", "-v", f"{out}:/out:U",
            runtime_image, "run-plan", "/plans/p.yaml", "-o", "/out"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ledger = json.loads((out / "ledger.json").read_text())
    with (out / "best.csv").open() as rows:
        best = list(csv.DictReader(rows))
    assert len(ledger) == 1 and ledger[0]["status"] == "feasible"
    assert [(row["rank"], row["key"], row["deployment"]) for row in best] == [("1", ledger[0]["key"], "agg vllm 1xtp1")]
    assert check_results_folder(out) == ledger


def test_a_results_folder_mounted_without_U_is_one_line_naming_it_and_the_fix(runtime_image, tmp_path):
    plans, out = _plan_dir(tmp_path), tmp_path / "out"
    out.mkdir()  # root's: the image's user (uid 10001) cannot write it
    argv = ["podman", "run", "--rm", "--network=none", "-v", f"{plans}:/plans:ro", "-v", f"{out}:/out",
            runtime_image, "run-plan", "/plans/p.yaml", "-o", "/out"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        "spica: invalid input:",
        "  results_dir: /out cannot hold results (Permission denied); it belongs to uid 0, Spica runs as uid 10001: "
        "mount the host folder with :U (podman run -v HOST:/out:U) or chown it to uid 10001"]
    assert list(out.iterdir()) == []
