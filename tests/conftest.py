"""Fixtures shared by the whole suite: the shared data folder, and the real services that
runner tests use (SLURM, Podman with its Docker API, Spica's runtime image) and the browser the
report tests use (Chromium). A service that
is not up is started with the same scripts .ci/run uses (containers/*.sh, root needed), so
`bin/test` works on a developer machine too: outside CI, podman runs with Spica's own settings
(containers/containers.conf, through CONTAINERS_CONF), where CI writes them into the host's
config. Without root a service test is skipped, named with the reason in pytest's closing
summary, except in CI (CI=true), where a missing service fails the run instead of hiding it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """Read-only shared data (mooncake traces): $SPICA_SHARED_DIR, else <repo>/../shared."""
    return Path(os.environ.get("SPICA_SHARED_DIR", REPO.parent / "shared"))


def _succeeds(*argv: str) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


SERVICES = {"slurm.sh": "SLURM", "podman.sh": "Podman", "build-image.sh": "Spica's container image", "chromium.sh": "Chromium"}


def _run_service_script(script: str, *args: str) -> str:
    """Run containers/<script> and return its stdout; skip (fail in CI) without root."""
    if os.geteuid() != 0:
        message = f"starting {SERVICES[script]} (containers/{script}) needs root: run `sudo bin/test` to include this test"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(["bash", str(REPO / "containers" / script), *args],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        pytest.fail(f"containers/{script} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


@pytest.fixture(scope="session")
def slurm_partition() -> str | None:
    """A working SLURM controller; the partition to submit to ($SPICA_SLURM_PARTITION, else the
    cluster's default partition)."""
    if not _succeeds("scontrol", "ping"):
        _run_service_script("slurm.sh")
    return os.environ.get("SPICA_SLURM_PARTITION") or None


@pytest.fixture(scope="session")
def docker_host() -> str:
    """Podman configured and its Docker API served; DOCKER_HOST points at it. Outside CI, every
    podman of the session (the service podman.sh starts, image builds, jobs' `podman run`) reads
    containers/containers.conf instead of the host's config, which on a fresh machine of this
    kind cannot start a container; CI tests the host's config, which containers/podman.sh wrote."""
    if os.geteuid() != 0 and os.environ.get("DOCKER_HOST"):
        return os.environ["DOCKER_HOST"]  # a developer's own engine, already running
    if os.environ.get("CI") != "true":
        os.environ.setdefault("CONTAINERS_CONF", str(REPO / "containers" / "containers.conf"))
    exports = _run_service_script("podman.sh")  # idempotent, ~1 s when already up
    os.environ["DOCKER_HOST"] = exports.split("DOCKER_HOST=", 1)[1].split()[0]
    return os.environ["DOCKER_HOST"]


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium, for tests that open a results page in a real browser (installed by
    containers/chromium.sh when missing)."""
    import shutil

    return shutil.which("chromium") or _run_service_script("chromium.sh").strip().splitlines()[-1]


@pytest.fixture(scope="session")
def runtime_image(docker_host: str) -> str:
    """Spica's self-contained image ($SPICA_CONTAINER_IMAGE, else built or found in podman's
    cache by containers/build-image.sh)."""
    return os.environ.get("SPICA_CONTAINER_IMAGE") or _run_service_script(
        "build-image.sh", sys.executable).strip().splitlines()[-1]


@pytest.fixture(scope="session")
def planner_image(docker_host: str) -> str:
    """Spica's image with the AI Configurator of Dynamo's dynamo-planner container (no memory model)."""
    return _run_service_script("build-image.sh", "--planner", sys.executable).strip().splitlines()[-1]


@pytest.fixture(scope="session")
def interpreter_image(docker_host: str) -> str:
    """The interpreter-only image of the shared-fs mode (built or found by containers/build-image.sh)."""
    return _run_service_script("build-image.sh", "--shared-fs", sys.executable).strip().splitlines()[-1]


@pytest.fixture
def config_warnings(caplog):
    """The config layer's warnings, even after a Hydra run in this process disabled its logger."""
    import logging

    logger = logging.getLogger("spica.config")
    was_disabled, logger.disabled = logger.disabled, False
    caplog.set_level(logging.WARNING, logger="spica.config")
    yield caplog
    logger.disabled = was_disabled
