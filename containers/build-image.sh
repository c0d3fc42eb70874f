#!/usr/bin/env bash
# Builds one of Spica's images with podman (see the Dockerfile header) and prints its name.
#   bash containers/build-image.sh [--shared-fs] [--export FILE] [PYTHON]
#   default      localhost/spica:<hash>              self-contained (Spica + locked deps inside)
#   --shared-fs  localhost/spica-interpreter:<hash>  the interpreter only (repo and venv mounted)
#   --planner    localhost/spica-planner:<hash>      self-contained, with the AI Configurator of
#                Dynamo's dynamo-planner container (no memory model); fetches its wheel first
#   --export F   also write the image to F as a docker-archive tar, which `podman load` /
#                `docker load` read; an enroot/pyxis site then runs `enroot import podman://IMAGE`
#                (or dockerd://) to get the .sqsh that `srun --container-image=` takes.
#   PYTHON       the venv python whose interpreter the image carries (default <repo>/.venv/bin/python)
# Cached: the base (debootstrap of this host's Debian release + the packages holding the
# interpreter's libraries, ~1.5 min) and each image are skipped when already in podman's store;
# the self-contained image's dependency layer is reused while the lock files are unchanged.
# The wheels come from ${SPICA_WHEELHOUSE:-~/.cache/spica/wheels} (bin/setup fills it); the
# build itself uses no network. Also tags <name>:latest, and removes the image that tag named
# before (unless a container or a child image still uses it), so podman's store does not grow
# build after build. Needs root, podman and debootstrap (containers/podman.sh installs them).
# Progress on stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
target=spica
export_to=
while (($#)); do
  case $1 in
    --shared-fs) target=interpreter; shift ;;
    --planner) target=planner; shift ;;
    --export) export_to=$(realpath -m "$2"); shift 2 ;;
    -*) echo "build-image.sh: unknown option $1 (allowed: --shared-fs, --planner, --export FILE)" >&2; exit 2 ;;
    *) break ;;
  esac
done
python=${1:-$repo/.venv/bin/python}
wheelhouse=${SPICA_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/spica/wheels}
prefix=$("$python" -c 'import sys; print(sys.base_prefix)')
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
hash_of() { sha256sum | cut -c1-12; }
locks=("$repo/requirements-nodeps.txt" "$repo/requirements.lock")
sources() { (cd "$repo" && find spica runner hydra_plugins conf pyproject.toml -type f ! -path '*__pycache__*' ! -name '*.pyc' | LC_ALL=C sort); }

# Debian packages that hold the shared libraries of the interpreter and its C modules
# (tkinter excluded: no display in a job).
interpreter_packages() {
  { ldd "$prefix/bin/python$pyver"; find "$prefix/lib/python$pyver/lib-dynload" -name '*.so' ! -name '_tkinter*' -exec ldd {} \; ; } |
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
      real=$(readlink -f "$lib")
      [[ $real == "$prefix"/* ]] && continue
      { dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || true; } | head -n1 | cut -d: -f1
    done | sort -u | paste -sd, -
}

packages="ca-certificates,libstdc++6,libgcc-s1,passwd,$(interpreter_packages)"
base=localhost/spica-base:$codename-$(echo "$packages" | hash_of)
recipe=$( (cat "$repo/Dockerfile"; echo "$base $prefix"; "$python" -VV) | hash_of)
planner_aic=0.8.0
case $target in
  interpreter) name=localhost/spica-interpreter; image=$name:$recipe ;;
  spica) name=localhost/spica ;;
  planner) name=localhost/spica-planner ;;
esac
[[ $target == interpreter ]] ||
  image=$name:$( (echo "$recipe $target $planner_aic"; cat "${locks[@]}"; cd "$repo" && sources | xargs cat) | hash_of)

# Every podman and network step has a bound, so a stuck engine or mirror fails the build with
# its name instead of holding up whoever waits for it (CI has 90 minutes in all).
bounded() {
  local seconds=$1; shift
  timeout "$seconds" "$@" && return 0
  local code=$?
  ((code == 124)) && echo "build-image.sh: '$*' did not finish in $seconds s" >&2
  return $code
}
exists() {  # podman image exists, bounded: 0 yes, 1 no, anything else ends the build
  local code=0
  bounded 120 podman image exists "$1" || code=$?
  ((code <= 1)) || exit 1
  return $code
}

save() {
  [[ -n $export_to ]] || return 0
  echo "build-image.sh: exporting $image to $export_to" >&2
  mkdir -p "$(dirname "$export_to")"
  rm -f "$export_to"
  bounded 900 podman save --quiet --format docker-archive -o "$export_to" "$image"
}
if exists "$image"; then
  save
  echo "$image"
  exit 0
fi

work=$(mktemp -d /var/tmp/spica-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! exists "$base"; then
  mirror=$(apt-get indextargets --format '$(CODENAME) $(REPO_URI)' 2>/dev/null |
    awk -v c="$codename" '$1 == c {print $2; exit}' || true)
  [[ -n $mirror ]] || { echo "build-image.sh: no Debian mirror found in apt's sources" >&2; exit 1; }
  echo "build-image.sh: debootstrap $codename ($packages)" >&2
  bounded 900 debootstrap --variant=minbase --include="$packages" "$codename" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/*
  tar -C "$work/rootfs" -c . | bounded 600 podman import --quiet - "$base" >/dev/null
fi

echo "build-image.sh: building $image ($target stage) from $base with the interpreter at $prefix" >&2
mkdir -p "$work/context/python" "$work/context/locks" "$work/context/src"
tar -C "$prefix" --exclude="./lib/python$pyver/site-packages/*" --exclude="./lib/python$pyver/test" \
  --exclude='__pycache__' -c . | tar -C "$work/context/python" -x
cp "${locks[@]}" "$work/context/locks/"
sources | tar -C "$repo" -T - -c | tar -C "$work/context/src" -x
if [[ $target != interpreter ]] && ! ls "$wheelhouse"/*.whl >/dev/null 2>&1; then
  echo "build-image.sh: no wheels in $wheelhouse; run bin/setup first (it fills the wheel cache)" >&2
  exit 1
fi
if [[ $target == planner ]] && ! ls "$wheelhouse"/aiconfigurator-$planner_aic-*.whl >/dev/null 2>&1; then
  echo "build-image.sh: fetching aiconfigurator $planner_aic into $wheelhouse" >&2
  bounded 300 "$python" -m pip download --disable-pip-version-check --quiet --no-deps -d "$wheelhouse" "aiconfigurator==$planner_aic" >&2
fi
previous=$(bounded 120 podman image inspect --format '{{.Id}}' "$name:latest" 2>/dev/null || true)  # removed below
started=$SECONDS
bounded 2400 podman build --quiet --network=none --target "$target" -v "$wheelhouse:/wheels:ro" -f "$repo/Dockerfile" \
  --build-arg BASE_IMAGE="$base" --build-arg PYTHON_PREFIX="$prefix" --build-arg PLANNER_AIC_VERSION="$planner_aic" \
  -t "$image" -t "$name:latest" "$work/context" >/dev/null
echo "build-image.sh: built $image in $((SECONDS - started)) s ($(podman image inspect --format '{{.Size}}' "$image" | awk '{printf "%.2f GB", $1 / 1e9}'))" >&2
# The image <name>:latest named before goes: its <name>:<hash> tags are dropped (dropping an image's
# last tag removes it) and, left untagged, it is removed; podman refuses while a container or a
# child image uses it, and then it stays.
tags_of() { bounded 120 podman image inspect --format '{{range .RepoTags}}{{println .}}{{end}}' "$1" 2>/dev/null || true; }
current=$(bounded 120 podman image inspect --format '{{.Id}}' "$image")
if [[ -n $previous && $previous != "$current" ]]; then
  for tag in $(tags_of "$previous" | grep -E "^$name:[0-9a-f]{12}\$" || true); do  # this script's own tags
    bounded 120 podman rmi "$tag" >/dev/null 2>&1 || true
  done
  if exists "$previous" && [[ -z $(tags_of "$previous") ]]; then
    bounded 120 podman rmi "$previous" >/dev/null 2>&1 || true
  fi
  if exists "$previous"; then
    echo "build-image.sh: kept ${previous:0:12}, the image $name:latest named before (a container, a child image or another tag holds it)" >&2
  else
    echo "build-image.sh: removed ${previous:0:12}, the image $name:latest named before" >&2
  fi
fi
save
echo "$image"
