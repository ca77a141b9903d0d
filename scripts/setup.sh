#!/usr/bin/env bash
# setup.sh - install the Debian packages mgc needs (only those missing) and build it in build/.
#   MGC_BUILD_DIR, MGC_CMAKE_ARGS: where and how to build (defaults: build/, Release).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake flex bison zlib1g-dev libopenblas-dev libdnnl-dev libcjson-dev
          libopenmpi-dev openmpi-bin graphviz dataset-fashion-mnist python3 python3-torch
          clang libclang-rt-14-dev fortunes)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build=${MGC_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${MGC_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
