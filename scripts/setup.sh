#!/usr/bin/env bash
# Installs what the build needs (Debian/Ubuntu packages) when missing, then configures and
# builds into ./build (or $BUILD_DIR). Extra arguments go to `meson setup`.
# The CUDA toolkit is expected at /usr/local/cuda (-Dcudadir=... for another root).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(meson ninja-build pkg-config g++ libunwind-dev libspdlog-dev libfmt-dev libsimdjson-dev catch2 python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build=${BUILD_DIR:-build}
if [ -f "$build/build.ninja" ]; then
  [ $# -eq 0 ] || meson configure "$build" "$@"
else
  meson setup "$build" "$@"
fi
ninja -C "$build"
