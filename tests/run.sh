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
# The whole suite as four pytest sessions side by side: the integration tier mostly waits on
# workers and the clock (about half a core), the engine tier keeps one core busy starting agent
# CLIs; split, they share the two cores instead of queueing on one. Sessions share Redis safely
# (each claims its own database numbers) and each makes its own databases. Every test file is in
# exactly one session (tests/unit/test_test_layout.py); the first runs in the foreground, the
# others' output follows it.
SESSIONS=(
  "tests/integration/test_[a-l]*.py tests/component tests/unit"
  "tests/integration/test_[m-z]*.py"
  "tests/engines/test_[a-i]*.py tests/browser tests/api"
  "tests/engines/test_[j-z]*.py tests/chaos"
)
logs=()
pids=()
trap 'rm -f "${logs[@]}"' EXIT
started=$SECONDS
for session in "${SESSIONS[@]:1}"; do
  log="$(mktemp)"
  logs+=("$log")
  # shellcheck disable=SC2086  # the session is a list of paths and globs
  .venv/bin/python -m pytest -q -p no:cacheprovider $session >"$log" 2>&1 &
  pids+=($!)
done
codes=()
rc=0
# shellcheck disable=SC2086
.venv/bin/python -m pytest -q -p no:cacheprovider ${SESSIONS[0]} || rc=$?
codes+=("$rc")
for i in "${!pids[@]}"; do
  rc=0
  wait "${pids[$i]}" || rc=$?
  codes+=("$rc")
  echo
  echo "=== session $((i + 2)): ${SESSIONS[$((i + 1))]}"
  cat "${logs[$i]}"
done
echo "=== whole suite: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s wall;" \
  "session exit codes: ${codes[*]}"
for rc in "${codes[@]}"; do
  [ "$rc" = 0 ] || exit 1
done
