#!/usr/bin/env bash
# Installs (Debian packages) and configures Podman as this machine's container engine, and
# serves its Docker-compatible API on a unix socket (for the `docker` SDK / CLI).
# Idempotent. Needs root. Prints `export DOCKER_HOST=unix://<socket>` on stdout (progress goes
# to stderr); the socket is ${SPICA_PODMAN_SOCKET:-/run/spica/podman.sock}.
#   bash containers/podman.sh [--configure]
# The host's own container config is left alone, except in CI (CI=true) or with --configure:
# then the settings that work on this kind of machine (containers/containers.conf) go into a
# drop-in of their own, /etc/containers/containers.conf.d/50-spica-ci.conf (delete it to undo).
# Otherwise podman reads the host's config, or the file CONTAINERS_CONF names (as bin/test's
# container tests do); a Docker API service started here keeps that setting for its lifetime.
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
  install -D -m 644 "$(dirname "${BASH_SOURCE[0]}")/containers.conf" /etc/containers/containers.conf.d/50-spica-ci.conf
fi

# The store, probed with a bound before anything uses it: podman waits without end on a store
# whose locks or runtime state another boot left (a machine image made from a used machine).
store_conf=${CONTAINERS_STORAGE_CONF:-/etc/containers/storage.conf}
store() { timeout 60 podman info --format '{{.Store.GraphDriverName}} {{.Store.GraphRoot}}' 2>&1; }
if ! pgrep -f 'podman system service' >/dev/null && ! facts=$(store); then
  $configure || { echo "podman.sh: podman did not answer in 60 s ($facts); try 'podman system reset'" >&2; exit 1; }
  echo "podman.sh: podman did not answer in 60 s ($facts); resetting its store (CI)" >&2
  timeout 300 podman system reset --force >/dev/null 2>&1 || rm -rf /var/lib/containers/storage /run/containers/storage /run/libpod
fi
facts=$(store) || { echo "podman.sh: podman did not answer in 60 s: $facts" >&2; exit 1; }
# vfs (what podman falls back to where the kernel refuses overlay on the store's file system)
# copies a whole image per layer and per container: Spica's 2.2 GB image then takes 25 GB and
# 8.5 min to build and ~60 s to start (measured). Where podman picked it by itself, CI switches
# the store to overlay through fuse-overlayfs, and back when that does not work either.
if $configure && [[ ${facts%% *} == vfs && ! -e $store_conf && -e /dev/fuse ]] && ! pgrep -f 'podman system service' >/dev/null; then
  command -v fuse-overlayfs >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse-overlayfs >/dev/null
  printf '[storage]\ndriver = "overlay"\n\n[storage.options.overlay]\nmount_program = "%s"\n' \
    "$(command -v fuse-overlayfs)" >"$store_conf"
  timeout 300 podman system reset --force >/dev/null 2>&1 || true
  if ! facts=$(store) || [[ ${facts%% *} != overlay ]]; then
    rm -f "$store_conf"
    timeout 300 podman system reset --force >/dev/null 2>&1 || true
    facts=$(store) || { echo "podman.sh: podman did not answer in 60 s: $facts" >&2; exit 1; }
  fi
fi
echo "podman.sh: store ${facts%% *} on ${facts#* } ($(df -h --output=avail "${facts#* }" 2>/dev/null | tail -n1 | tr -d ' ') free)" >&2

api_up() { curl -sf --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; }
if ! api_up; then
  mkdir -p "$(dirname "$socket")"
  rm -f "$socket"
  # From /: a service started inside a checkout breaks (conmon: "Failed to get working directory")
  # once that checkout is removed, as CI does with its clones. The redirections are the
  # subshell's and it execs the service: nothing left running holds this script's stdout, so a
  # caller reading it (`$(podman.sh)`, as start-services.sh's caller does) gets its end.
  (cd / && exec setsid podman system service --time=0 "unix://$socket") </dev/null >/var/log/spica-podman-api.log 2>&1 &
  for _ in $(seq 60); do api_up && break; sleep 0.5; done
  api_up || { echo "podman.sh: Docker API did not come up on $socket" >&2; exit 1; }
fi
echo "podman.sh: podman $(podman --version | awk '{print $3}') up, Docker API on $socket" >&2
echo "export DOCKER_HOST=unix://$socket"
