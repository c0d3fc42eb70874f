#!/usr/bin/env bash
# Installs (Debian packages) and configures Podman as this machine's container engine, and
# serves its Docker-compatible API on a unix socket (for the `docker` SDK / CLI).
# Idempotent. Needs root. Prints `export DOCKER_HOST=unix://<socket>` on stdout (progress goes
# to stderr); the socket is ${SPICA_PODMAN_SOCKET:-/run/spica/podman.sock}.
#   bash containers/podman.sh [--configure]
# The host's own container config is left alone, except in CI (CI=true) or with --configure:
# then the settings that work on this kind of machine go into a drop-in of their own,
# /etc/containers/containers.conf.d/50-spica-ci.conf (delete it to undo): runc (crun fails on
# hybrid cgroups), cgroupfs manager (no systemd), no default ulimits / pids limit (not permitted).
set -euo pipefail

configure=false
[[ ${CI:-} == true ]] && configure=true
case ${1:-} in
  --configure) configure=true ;;
  "") ;;
  *) echo "podman.sh: unknown option $1 (allowed: --configure)" >&2; exit 2 ;;
esac

socket=${SPICA_PODMAN_SOCKET:-/run/spica/podman.sock}
packages=(podman runc catatonit debootstrap)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "podman.sh: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if $configure; then
  mkdir -p /etc/containers/containers.conf.d
  cat >/etc/containers/containers.conf.d/50-spica-ci.conf <<'CONF'
# Written by Spica's containers/podman.sh (CI, or --configure); delete it to undo.
[containers]
default_ulimits = []
pids_limit = 0

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
fi

api_up() { curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; }
if ! api_up; then
  mkdir -p "$(dirname "$socket")"
  rm -f "$socket"
  # from /: a service started inside a checkout breaks (conmon: "Failed to get working directory")
  # once that checkout is removed, as CI does with its clones
  (cd / && setsid podman system service --time=0 "unix://$socket" >/var/log/spica-podman-api.log 2>&1 &)
  for _ in $(seq 60); do api_up && break; sleep 0.5; done
  api_up || { echo "podman.sh: Docker API did not come up on $socket" >&2; exit 1; }
fi
echo "podman.sh: podman $(podman --version | awk '{print $3}') up, Docker API on $socket" >&2
echo "export DOCKER_HOST=unix://$socket"
