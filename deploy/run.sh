#!/usr/bin/env bash
# Quick start: install, migrate and serve API + worker on the embedded default
# (SQLite + an embedded Redis on a unix socket under ./data). Ctrl-C stops everything.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/deploy/bootstrap.sh"
# the run box (bubblewrap built from Debian's source into .sandbox/), as the tests set it up
if ! why="$(bash "$ROOT/deploy/install-sandbox.sh" 2>&1 >/dev/null)"; then
  echo "note: no run box here (${why##*$'\n'}); runs get resource limits only and agents" \
    "keep the whole network: docs/operating.md, 'The box runs run in'" >&2
fi
cd "$ROOT"
exec "$ROOT/.venv/bin/skill-runner" serve "$@"
