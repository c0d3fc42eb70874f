"""The executor registry is the one place an executor is described: the config's evaluation
block, the command's pool, runner's launches and probes, and the Hydra launchers read it."""

from __future__ import annotations

import shlex
import sys

import pytest
import yaml
from hydra.core.config_store import ConfigStore

from hydra_plugins.spica_launcher import spica_launcher  # noqa: F401 - stores the launchers
from runner import probe
from runner.executors import make_executor
from runner.slurm_pool import SlurmPool
from spica.cli import commands
from spica.cli.search import evaluation_pool
from spica.config import executors
from spica.config.app import EvaluationSettings, split_app_settings
from spica.config.errors import ConfigError

BASE = {"search_space": {"model_name": "m", "hardware_sku": "h"},
        "workload": {"isl": 1, "osl": 1, "concurrency": 1, "num_request_ratio": 1}}
ALLOWED = ", ".join(executors.NAMES)


def evaluation_errors(block: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        split_app_settings({**BASE, "evaluation": block})
    return info.value.lines


def test_an_unknown_executor_is_one_line_listing_the_registered_ones(tmp_path):
    assert evaluation_errors({"executor": "k8s"}) == [f"evaluation.executor: 'k8s' is not one of {ALLOWED}"]
    with pytest.raises(ValueError, match=rf"^cluster='k8s' is not supported; allowed: {ALLOWED}$"):
        make_executor(tmp_path, cluster="k8s", timeout_min=1)


def test_the_evaluation_block_is_executor_beside_every_executors_own_keys():
    own = {name for entry in executors.EXECUTORS.values() for name in entry.settings.model_fields}
    assert set(EvaluationSettings.model_fields) == {"executor", "calibration"} | own
    for name in executors.NAMES:
        assert EvaluationSettings(executor=name).executor == name


def test_each_executor_validates_its_own_settings():
    assert executors.LocalSettings.model_fields == {}
    settings = EvaluationSettings(executor="slurm", slurm_partition="debug", max_parallel=2).executor_settings()
    assert settings == executors.SlurmSettings(slurm_partition="debug", max_parallel=2)
    assert evaluation_errors({"executor": "slurm", "max_parallel": 0}) == ["evaluation.max_parallel: 0: input should be greater than 0"]
    assert evaluation_errors({"executor": "slurm", "container_mode": "nfs"}) == [
        "evaluation.container_mode: 'nfs' is not one of self-contained, shared-fs"]
    with pytest.raises(ValueError, match="max_paralel"):
        executors.SlurmSettings.model_validate({"max_paralel": 2})


def test_the_pool_is_the_executors_with_its_settings_and_job_folder(tmp_path, monkeypatch):
    monkeypatch.setattr("runner.container._podman_has", lambda image: image == executors.DEFAULT_IMAGE)
    assert evaluation_pool(EvaluationSettings(), str(tmp_path)) is None  # Spica's own process pool
    trace = tmp_path / "trace.jsonl"
    pool = evaluation_pool(EvaluationSettings(executor="slurm", max_parallel=3), str(tmp_path), str(trace))
    assert isinstance(pool, SlurmPool)
    assert pool._executor.folder == (tmp_path / "slurm").resolve()
    assert pool._executor.parameters["array_parallelism"] == 3
    argv = shlex.split(pool._executor.python)  # in the self-contained image by default
    assert argv[:3] == ["podman", "run", "--rm"] and "--network=none" in argv and "--cap-drop=all" in argv
    assert argv[-2:] == ["--entrypoint=/opt/spica/bin/python", "localhost/spica:latest"]
    assert f"--volume={trace}:{trace}:ro" in argv and f"--workdir={(tmp_path / 'slurm').resolve()}" in argv
    on_host = evaluation_pool(EvaluationSettings(executor="slurm", container_image=None), str(tmp_path))
    assert on_host._executor.python == sys.executable


def test_a_missing_evaluation_image_is_one_line_from_the_command_before_the_search(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("runner.container._podman_has", lambda image: False)
    monkeypatch.setattr("spica.search.run_smart_search", lambda *a, **k: pytest.fail("the search started"))
    config = tmp_path / "search.yaml"
    config.write_text(yaml.safe_dump({**BASE, "search_space": {"model_name": "Qwen/Qwen3-32B", "hardware_sku": "h200_sxm"}}))
    with pytest.raises(SystemExit) as info:
        commands.main(["--config-file", str(config), "evaluation.executor=slurm", f"results_dir={tmp_path / 'out'}"])
    assert info.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "spica: invalid input:",
        "  evaluation.container_image=localhost/spica:latest: not in podman's store on this host; build Spica's image with "
        "`bash containers/build-image.sh` (root; it tags localhost/spica:latest), give another image, or set "
        "evaluation.container_image=null to run on the host"]
    assert not (tmp_path / "out" / "slurm").exists()


def test_jobs_take_what_their_executor_supports(tmp_path):
    slurm = make_executor(tmp_path, cluster="slurm", timeout_min=5, slurm_partition="debug", array_parallelism=4)
    assert {key: slurm.parameters[key] for key in ("time", "partition", "array_parallelism")} == {
        "time": 5, "partition": "debug", "array_parallelism": 4}
    local = make_executor(tmp_path, cluster="local", timeout_min=5, array_parallelism=4)
    assert local.parameters == {"timeout_min": 5}


def test_every_executor_has_a_hydra_launcher_and_a_probe_choice(capsys):
    launchers = ConfigStore.instance().repo["hydra"]["launcher"]
    for name in executors.NAMES:
        assert launchers[f"spica_{name}.yaml"].node.cluster == name
    with pytest.raises(SystemExit):
        probe.main(["--cluster", "k8s"])
    assert f"choose from {', '.join(repr(name) for name in executors.NAMES)}" in capsys.readouterr().err
