"""containers/podman.sh changes the host's container config only in CI or when asked, and then
in a drop-in of its own, never in /etc/containers/containers.conf."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MAIN = Path("/etc/containers/containers.conf")
DROP_IN = Path("/etc/containers/containers.conf.d/50-spica-ci.conf")
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(os.geteuid() != 0, reason="podman.sh needs root")]


def _podman_sh(*args: str, ci: bool) -> None:
    env = {key: value for key, value in os.environ.items() if key != "CI"} | ({"CI": "true"} if ci else {})
    done = subprocess.run(["bash", str(REPO / "containers" / "podman.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def _state() -> tuple[bytes | None, bytes | None]:
    return tuple(path.read_bytes() if path.exists() else None for path in (MAIN, DROP_IN))  # type: ignore[return-value]


@pytest.fixture
def without_drop_in():
    """The host as a fresh machine has it, without the drop-in (CI wrote it before the tests),
    so a test sees whether podman.sh writes it; the host's own state is put back after."""
    saved = DROP_IN.read_bytes() if DROP_IN.exists() else None
    DROP_IN.unlink(missing_ok=True)
    try:
        yield
    finally:
        if saved is None:
            DROP_IN.unlink(missing_ok=True)
        else:
            DROP_IN.write_bytes(saved)


def test_outside_ci_nothing_of_the_hosts_config_changes(docker_host, without_drop_in):
    before = _state()
    _podman_sh(ci=False)
    assert _state() == before and before[1] is None


@pytest.mark.parametrize("how", ["CI=true", "--configure"])
def test_in_ci_or_when_asked_the_settings_go_to_a_drop_in(docker_host, without_drop_in, how):
    main_before = _state()[0]
    _podman_sh(*(["--configure"] if how == "--configure" else []), ci=how == "CI=true")
    assert _state()[0] == main_before
    assert DROP_IN.read_bytes() == (REPO / "containers" / "containers.conf").read_bytes()
    assert 'default_ulimits = []' in DROP_IN.read_text() and DROP_IN.stat().st_mode & 0o777 == 0o644


def test_a_caller_reading_its_output_gets_the_end_of_it_when_it_starts_the_service(docker_host, tmp_path):
    """.ci/run reads start-services.sh's stdout to its end (`services=$(...)`): the service
    podman.sh starts (here on a socket of its own) must not hold that pipe open, or CI waits
    forever right after "podman ... up" on a machine where no service ran yet."""
    socket = tmp_path / "api.sock"
    env = os.environ | {"SPICA_PODMAN_SOCKET": str(socket)}
    try:
        done = subprocess.run(["bash", str(REPO / "containers" / "podman.sh")], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == f"export DOCKER_HOST=unix://{socket}"
    finally:
        subprocess.run(["pkill", "-f", f"podman system service --time=0 unix://{socket}"], check=False)
