#!/usr/bin/env bash
# Install the pinned TypeScript runner (deploy/node-runners/package.json + package-lock.json)
# into a project-local npm prefix, <repo>/.node-runners; skill.json code skills written in
# TypeScript (index.ts) run under it. Idempotent: a stamp records the last good install.
#
# Usage: deploy/install-node-runners.sh [--force]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.node-runners"
STAMP="$PREFIX/.installed"
MANIFEST_DIR="$ROOT/deploy/node-runners"
WANT="$(cat "$MANIFEST_DIR/package.json" "$MANIFEST_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"

if [ "${1:-}" != "--force" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] \
  && [ -x "$PREFIX/node_modules/.bin/tsx" ]; then
  echo "node runners already installed: $WANT"
  exit 0
fi
command -v npm >/dev/null || { echo "npm not found: install Node.js 20 and npm first" >&2; exit 1; }
mkdir -p "$PREFIX"
rm -f "$STAMP"
cp "$MANIFEST_DIR/package.json" "$MANIFEST_DIR/package-lock.json" "$MANIFEST_DIR/.npmrc" "$PREFIX/"
(cd "$PREFIX" && npm install --no-audit --no-fund --loglevel=error)
"$PREFIX/node_modules/.bin/tsx" --version
echo "$WANT" > "$STAMP"
