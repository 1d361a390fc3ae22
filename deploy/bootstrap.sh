#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install the project and its client package into it. Sourced by run.sh and tests/run.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/pip" install -q --upgrade pip
fi
STAMP="$ROOT/.venv/.installed"
WANT="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" "$ROOT/client/pyproject.toml" | sha256sum | cut -d' ' -f1)${1:-}-compat"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  # the service, and its SDK + command line client (client/, a package of its own). "compat"
  # editables are a path in a .pth, no import hook: every Python process (each script run)
  # starts ~25 ms sooner. setuptools calls that mode transitional: without it, the default.
  LOG="$ROOT/.venv/install.log"
  if ! "$ROOT/.venv/bin/pip" install -q --config-settings editable_mode=compat \
      -e "$ROOT${1:+[$1]}" -e "$ROOT/client" 2>"$LOG"; then
    "$ROOT/.venv/bin/pip" install -q -e "$ROOT${1:+[$1]}" -e "$ROOT/client"
  fi
  echo "$WANT" > "$STAMP"
fi
