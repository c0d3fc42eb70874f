#!/usr/bin/env bash
# Builds Spica's runtime image with podman (see the Dockerfile header) and prints its name.
#   bash containers/build-image.sh [PYTHON]   (PYTHON: the venv's python; default <repo>/.venv/bin/python)
# Two cached steps, both skipped when their image already exists in podman's store:
#   1. base  localhost/spica-base:<codename>-<hash>  debootstrap --variant=minbase of this host's
#      Debian release + the Debian packages holding the libraries the interpreter links to (~3 min)
#   2. image localhost/spica-runtime:<hash>  the Dockerfile on top, with a copy of the
#      interpreter (~20 s). Also tagged localhost/spica-runtime:latest.
# Needs root, podman and debootstrap (containers/podman.sh installs them). Progress on stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(dirname "$here")
python=${1:-$repo/.venv/bin/python}
prefix=$("$python" -c 'import sys; print(sys.base_prefix)')
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
hash_of() { sha256sum | cut -c1-12; }

base=localhost/spica-base:$codename-$( (cat "$0"; echo "$prefix") | hash_of)
image=localhost/spica-runtime:$( (cat "$0" "$repo/Dockerfile"; echo "$base $prefix"; "$python" -VV) | hash_of)
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi

work=$(mktemp -d /var/tmp/spica-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

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

if ! podman image exists "$base"; then
  mirror=$(apt-get indextargets --format '$(CODENAME) $(REPO_URI)' 2>/dev/null |
    awk -v c="$codename" '$1 == c {print $2; exit}' || true)
  [[ -n $mirror ]] || { echo "build-image.sh: no Debian mirror found in apt's sources" >&2; exit 1; }
  packages="ca-certificates,libstdc++6,libgcc-s1,$(interpreter_packages)"
  echo "build-image.sh: debootstrap $codename ($packages)" >&2
  debootstrap --variant=minbase --include="$packages" "$codename" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/lib/apt/lists/*
  tar -C "$work/rootfs" -c . | podman import --quiet - "$base" >/dev/null
fi

echo "build-image.sh: building $image from $base with the interpreter at $prefix" >&2
mkdir -p "$work/context/python"
tar -C "$prefix" --exclude="./lib/python$pyver/site-packages/*" --exclude="./lib/python$pyver/test" \
  --exclude='__pycache__' -c . | tar -C "$work/context/python" -x
podman build --quiet --network=host -f "$repo/Dockerfile" --build-arg BASE_IMAGE="$base" \
  --build-arg PYTHON_PREFIX="$prefix" -t "$image" -t localhost/spica-runtime:latest "$work/context" >/dev/null
echo "$image"
