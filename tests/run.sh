#!/usr/bin/env bash
# The whole test suite: installs the project, the pinned agent CLIs and Chromium, makes sure Redis and
# PostgreSQL answer, runs the linters (ruff, mypy), then every tier. Extra arguments go to pytest
# (e.g. tests/unit); when they name only tests/unit and tests/component, which need no service, no CLI
# is installed and no service started.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash deploy/bootstrap.sh test,lint

no_services=1
[ $# -eq 0 ] && no_services=0
for arg in "$@"; do
  case "$arg" in
    tests/unit|tests/unit/*|tests/component|tests/component/*) ;;
    -*) ;;                      # pytest options (-x, -q, --lf ...)
    *) no_services=0 ;;
  esac
done

if [ "$no_services" = 0 ]; then
  bash deploy/install-engines.sh
  bash deploy/install-node-runners.sh
  bash deploy/install-sandbox.sh   # bubblewrap for the run box (tests/integration/test_sandbox.py)
  bash deploy/install-browser.sh   # Chromium for tests/browser (the `browser` marker)
  bash deploy/services.sh
fi
if [ $# -eq 0 ]; then
  bash deploy/lint.sh
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${@:-tests}"
