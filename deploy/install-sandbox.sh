#!/usr/bin/env bash
# bubblewrap for the run box (runner_core/sandbox.py), unpacked from Debian's package into
# .sandbox/ of the checkout, where the service looks first. Not installed on PATH: codex prefers
# a bwrap on PATH over its own, and Debian 12's (0.8) cannot start codex's sandbox helper when the
# run directory is under /tmp (as in the tests). Set SKILL_RUNNER_BWRAP to use another bwrap.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.sandbox"
[ -x "$DEST/usr/bin/bwrap" ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "no apt-get: install bubblewrap and set SKILL_RUNNER_BWRAP to its bwrap" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download bubblewrap >/dev/null 2>&1) || {
  [ "$(id -u)" = 0 ] && apt-get update -qq
  (cd "$work" && apt-get download bubblewrap >/dev/null)
}
dpkg-deb -x "$work"/bubblewrap_*.deb "$DEST"
"$DEST/usr/bin/bwrap" --version
