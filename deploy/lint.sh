#!/usr/bin/env bash
# The linters CI runs: ruff (lint and format check) on the whole tree, mypy on runner_core, worker,
# api, launcher and the client package, hadolint on the Dockerfile.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/hadolint Dockerfile
