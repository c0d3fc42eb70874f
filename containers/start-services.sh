#!/usr/bin/env bash
# Starts everything Spica's tests and runner need on this machine, each step idempotent:
# SLURM (slurm.sh), Podman and its Docker API (podman.sh), Chromium for the report tests
# (chromium.sh), Spica's self-contained image (build-image.sh: found by its hash when nothing
# changed, else rebuilt from its cached layers).
# Prints the environment to use them on stdout:
#   eval "$(sudo bash containers/start-services.sh)"
# exports DOCKER_HOST and SPICA_CONTAINER_IMAGE. Arg: the venv python whose interpreter the
# image carries (default <repo>/.venv/bin/python; run bin/setup first: it fills the wheel
# cache the image installs from). Progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${1:-$(dirname "$here")/.venv/bin/python}
[[ -x $python ]] || { echo "start-services.sh: $python not found; run bin/setup first" >&2; exit 1; }

step() {  # one script, timed on stderr
  local began=$SECONDS
  bash "$here/$@"
  echo "start-services.sh: $1 done in $((SECONDS - began)) s" >&2
}
step slurm.sh
step podman.sh
step chromium.sh >/dev/null
echo "export SPICA_CONTAINER_IMAGE=$(step build-image.sh "$python")"
