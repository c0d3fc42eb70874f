#!/usr/bin/env bash
# Installs Debian's Chromium, the real browser the report tests open results pages in
# (headless, driven over its DevTools pipe: tests/results/headless.py). Idempotent. Needs root.
# Prints the browser's path on stdout (progress goes to stderr).
#   bash containers/chromium.sh
set -euo pipefail
if ! command -v chromium >/dev/null; then
  echo "chromium.sh: installing chromium" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
command -v chromium
