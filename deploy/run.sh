#!/usr/bin/env bash
# Quick start: install, migrate and serve API + worker on the embedded default
# (SQLite + an embedded Redis on a unix socket under ./data). Ctrl-C stops everything.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/deploy/bootstrap.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/skill-runner" serve "$@"
