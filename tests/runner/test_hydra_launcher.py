"""hydra/launcher=spica_slurm / spica_local: a Hydra multirun whose jobs run in Spica's image."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from results_checks import check_results_folder

from spica.cli.hydra_app import CONF_DIR, register_schema

SMALL_SEARCH = ["search_space.gpu_budget=1", "mode=agg", "backend=vllm", "sweep.max_rounds=1"]


@pytest.mark.parametrize(("name", "cluster"), [("spica_slurm", "slurm"), ("spica_local", "local")])
def test_the_launchers_default_to_the_self_contained_image(name, cluster):
    register_schema()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"hydra/launcher={name}"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.spica_launcher.spica_launcher.ContainerLauncher"
    assert (launcher.cluster, launcher.container_mode, launcher.container_image) == (
        cluster, "self-contained", "localhost/spica:latest")


@pytest.mark.e2e
def test_a_multirun_on_slurm_runs_each_search_in_the_image(slurm_partition, runtime_image, tmp_path):
    sweep = tmp_path / "multirun"
    argv = [sys.executable, "-m", "spica", "-m", "hydra/launcher=spica_slurm", f"hydra.sweep.dir={sweep}",
            f"hydra.launcher.container_image={runtime_image}", "hydra.launcher.cpus_per_task=1",
            *([f"hydra.launcher.partition={slurm_partition}"] if slurm_partition else []),
            "sweep.random_seed=1,2", *SMALL_SEARCH]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    for job in ("0", "1"):
        check_results_folder(sweep / job)
    sbatch = "".join(path.read_text() for path in (sweep / ".submitit").glob("*_submission.sh"))
    assert f"--entrypoint=/opt/spica/bin/python {runtime_image}" in sbatch


@pytest.mark.e2e
def test_a_missing_image_is_one_line_before_any_job(docker_host, tmp_path):
    argv = [sys.executable, "-m", "spica", "-m", "hydra/launcher=spica_local", f"hydra.sweep.dir={tmp_path / 'multirun'}",
            "hydra.launcher.container_image=localhost/spica-missing:0", "sweep.random_seed=1,2", *SMALL_SEARCH]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=os.environ)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines() == [
        "spica: invalid input:",
        "  hydra.launcher.container_image=localhost/spica-missing:0: not in podman's store on this host; build Spica's "
        "image with `bash containers/build-image.sh` (root; it tags localhost/spica:latest), give another image, or use "
        "hydra/launcher=submitit_local to run on the host"]
    assert not (tmp_path / "multirun" / ".submitit").exists()
