#!/usr/bin/env bash
# The whole test suite: installs the project and the pinned agent CLIs, makes sure Redis and
# PostgreSQL answer, then runs every tier. Extra arguments go to pytest (e.g. tests/unit).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash deploy/bootstrap.sh test
bash deploy/install-engines.sh
bash deploy/services.sh
exec .venv/bin/python -m pytest -q -p no:cacheprovider "${@:-tests}"
