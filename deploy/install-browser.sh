#!/usr/bin/env bash
# The browser tests' Chromium: Debian's package (Playwright drives it; it downloads no browser).
# Installed when missing and this runs as root (CI, the dev machines); otherwise says how.
set -euo pipefail
for bin in chromium chromium-browser; do
  command -v "$bin" >/dev/null && exit 0
done
if [ "$(id -u)" = 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
else
  echo "the browser tests need Chromium: sudo apt-get install chromium" >&2
  exit 1
fi
