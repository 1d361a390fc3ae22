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
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
fi

bash deploy/lint.sh
# The whole suite as two pytest sessions side by side (about 12 min instead of 21 on 2 cores): the
# tiers mostly wait on workers, CLIs and a browser. Sessions share Redis safely (each claims its own
# database numbers) and each makes its own databases. The second one's output follows the first's.
SECOND=(tests/engines tests/chaos tests/browser tests/api)
second_log="$(mktemp)"
trap 'rm -f "$second_log"' EXIT
started=$SECONDS
.venv/bin/python -m pytest -q -p no:cacheprovider "${SECOND[@]}" >"$second_log" 2>&1 &
second_pid=$!
first_rc=0
.venv/bin/python -m pytest -q -p no:cacheprovider tests/integration tests/component tests/unit || first_rc=$?
second_rc=0
wait "$second_pid" || second_rc=$?
echo
echo "=== second session: ${SECOND[*]}"
cat "$second_log"
echo "=== whole suite: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s wall;" \
  "first session exit $first_rc, second session exit $second_rc"
[ "$first_rc" = 0 ] && [ "$second_rc" = 0 ]
