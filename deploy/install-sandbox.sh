#!/usr/bin/env bash
# bubblewrap for the run box (runner_core/sandbox.py) in .sandbox/ of the checkout, where the
# service looks first. Built from Debian's source package (Debian's patches) without SELinux and
# linked statically: Debian's binary loads libselinux and PCRE at every start, about 1.2 ms of
# each boxed process (bench/RESULTS.md, "The run box"). Where it cannot be built (no compiler,
# no source package), Debian's binary package is unpacked instead. Not installed on PATH: codex
# prefers a bwrap on PATH over its own, and bubblewrap 0.8 (Debian 12's) cannot start codex's
# sandbox helper when the run directory is under /tmp (as in the tests). SKILL_RUNNER_BWRAP
# sets another bwrap. SANDBOX_BUILD=package skips the build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.sandbox"
STAMP="$DEST/origin"  # "source <version>" or "package"
[ -x "$DEST/usr/bin/bwrap" ] && [ -f "$STAMP" ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "no apt-get: install bubblewrap and set SKILL_RUNNER_BWRAP to its bwrap" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# apt with its own lists (binary and source indexes) in $work: the host's apt state is untouched.
apt_private() {
  mkdir -p "$work/apt/parts" "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -f "$file" ] && sed -E 's/^Types:[[:space:]]*deb[[:space:]]*$/Types: deb deb-src/' \
      "$file" >"$work/apt/parts/$(basename "$file")"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | sed -nE 's/^deb[[:space:]]+(.*)$/deb \1\ndeb-src \1/p' >"$work/apt/sources.list" || true
  APT=(apt-get -qq -o "Dir::Etc::SourceList=$work/apt/sources.list"
    -o "Dir::Etc::SourceParts=$work/apt/parts" -o "Dir::State::Lists=$work/apt/lists"
    -o "Dir::Cache=$work/apt/cache" -o "APT::Sandbox::User=root")
  "${APT[@]}" update
}

build_from_source() {
  local tool
  for tool in gcc tar xz patch dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "no $tool" >&2; return 1; }
  done
  apt_private >/dev/null
  mkdir -p "$work/src" && cd "$work/src"
  "${APT[@]}" source --download-only bubblewrap >/dev/null  # checked against the signed index
  "${APT[@]}" download libcap-dev >/dev/null
  dpkg-deb -x libcap-dev_*.deb "$work/cap"
  local dsc version tree
  dsc="$(ls bubblewrap_*.dsc)"
  version="$(sed -nE 's/^Version:[[:space:]]*(.*)$/\1/p' "$dsc")"
  tar -xf bubblewrap_*.orig.tar.* && tree="$(ls -d bubblewrap-*/)"
  tar -xf bubblewrap_*.debian.tar.* -C "$tree"
  cd "$tree"
  local patch
  while read -r patch _; do
    case "$patch" in "" | "#"*) continue ;; esac
    patch -s -p1 <"debian/patches/$patch"
  done <debian/patches/series
  printf '#define _GNU_SOURCE 1\n#define PACKAGE_STRING "bubblewrap %s"\n' "${version%%-*}" >config.h
  # Debian's hardening flags; static-pie keeps ASLR for the one binary
  gcc -O2 -fstack-protector-strong -fstack-clash-protection -fcf-protection \
    -D_FORTIFY_SOURCE=2 -Wformat -Werror=format-security -fPIE -static-pie \
    -Wl,-z,relro,-z,now -s -include config.h -I"$work/cap/usr/include" \
    -o "$work/bwrap" bubblewrap.c bind-mount.c network.c utils.c \
    "$work/cap/usr/lib/$(gcc -print-multiarch)/libcap.a"
  # it must build the box the service asks for (runner_core.sandbox.find_bwrap probes the same)
  "$work/bwrap" --die-with-parent --unshare-pid --unshare-net --cap-drop ALL --ro-bind / / \
    --dev /dev --proc /proc -- true
  mkdir -p "$DEST/usr/bin"
  install -m 0755 "$work/bwrap" "$DEST/usr/bin/bwrap"
  echo "source $version" >"$STAMP"
}

unpack_package() {
  (cd "$work" && apt-get download bubblewrap >/dev/null 2>&1) || {
    [ "$(id -u)" = 0 ] && apt-get update -qq
    (cd "$work" && apt-get download bubblewrap >/dev/null)
  }
  dpkg-deb -x "$work"/bubblewrap_*.deb "$DEST"
  echo "package" >"$STAMP"
}

built=no
if [ "${SANDBOX_BUILD:-source}" != package ]; then
  (build_from_source) 2>"$work/build.log" &  # a job of its own: errexit holds inside it
  if wait $!; then
    built=yes
  else
    why="$(tail -n 1 "$work/build.log")"
    echo "bwrap not built from source (${why:-a step failed}); Debian's binary instead" >&2
  fi
fi
[ "$built" = yes ] || unpack_package
"$DEST/usr/bin/bwrap" --version
