#!/usr/bin/env bash
# Install the pinned agent CLIs (deploy/engines/package.json + package-lock.json) into a
# project-local npm prefix: <repo>/.engines
#
# Idempotent: a stamp file records the hash of the manifest and lock of the last good install; when it matches
# and every binary is present the script does nothing. Binaries end up in
# .engines/node_modules/.bin; a ripgrep `rg` (opencode's skill tool needs one) is linked into
# the same folder when the system has none.
#
# Usage: deploy/install-engines.sh [--force]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/.engines"
BIN="$PREFIX/node_modules/.bin"
STAMP="$PREFIX/.installed"

# The pinned versions live in deploy/engines/package.json and its lock file.
MANIFEST_DIR="$ROOT/deploy/engines"
BINARIES=(codex gemini opencode qwen claude qodercli)
# kilo: only where its platform binary package exists (linux x64); linked into .bin below
WANT="$(cat "$MANIFEST_DIR/package.json" "$MANIFEST_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)"

all_present() {
  local b
  for b in "${BINARIES[@]}" rg; do
    [ -x "$BIN/$b" ] || return 1
  done
}

if [ "${1:-}" != "--force" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && all_present; then
  echo "engines already installed: $WANT"
  exit 0
fi

command -v npm >/dev/null || { echo "npm not found: install Node.js 20 and npm first" >&2; exit 1; }

mkdir -p "$PREFIX"
rm -f "$STAMP"
cp "$MANIFEST_DIR/package.json" "$MANIFEST_DIR/package-lock.json" "$MANIFEST_DIR/.npmrc" "$PREFIX/"
# `npm install` with the lock present installs the locked versions and checks their integrity
# hashes. (`npm ci` would be stricter but rejects this lock: npm records the other platforms'
# optional binaries of codex/opencode without versions, and ci's sync check trips on them.)
(cd "$PREFIX" && npm install --no-audit --no-fund --loglevel=error)

# ripgrep: prefer a system rg, else one shipped inside an installed package (no download).
link_rg() {
  local found
  [ -x "$BIN/rg" ] && "$BIN/rg" --version >/dev/null 2>&1 && return 0
  if found="$(command -v rg)"; then
    ln -sfr "$found" "$BIN/rg"
    return 0
  fi
  found="$(find "$PREFIX/node_modules" -type f -name rg -path "*$(uname -m | sed 's/x86_64/x64/;s/aarch64/arm64/')*linux*" 2>/dev/null | head -n 1)"
  [ -n "$found" ] || found="$(find "$PREFIX/node_modules" -type f -name rg 2>/dev/null | head -n 1)"
  if [ -n "$found" ]; then
    chmod +x "$found"
    ln -sfr "$found" "$BIN/rg"
    "$BIN/rg" --version >/dev/null 2>&1 && return 0
  fi
  echo "warning: no working ripgrep found; opencode's skill tool needs 'rg' on PATH" >&2
  return 1
}
link_rg || true

# kilo ships one binary per platform and no bin link of its own when installed directly
KILO="$PREFIX/node_modules/@kilocode/cli-linux-x64/bin/kilo"
if [ -x "$KILO" ]; then
  ln -sfr "$KILO" "$BIN/kilo"
else
  echo "note: no kilo binary for $(uname -sm); the kilo engine is unavailable here" >&2
fi

for b in "${BINARIES[@]}"; do
  [ -x "$BIN/$b" ] || { echo "missing binary after install: $b" >&2; exit 1; }
done
echo "$WANT" >"$STAMP"
echo "engines installed in $BIN"
