#!/usr/bin/env bash
# setup.sh - install the Debian packages mgc needs (only those missing), build it in build/
# and install the Python package (python/) into the venv BUILD/venv (docs/python.md), with
# onnx and onnxruntime from PyPI for the ONNX round-trip test (docs/onnx.md).
#   MGC_BUILD_DIR, MGC_CMAKE_ARGS: where and how to build (defaults: build/, Release).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(build-essential cmake flex bison zlib1g-dev libopenblas-dev libdnnl-dev libcjson-dev
          libopenmpi-dev openmpi-bin graphviz dataset-fashion-mnist python3 python3-torch
          clang libclang-rt-14-dev fortunes python3-numpy python3-pytest python3-venv python3-setuptools
          protobuf-c-compiler libprotobuf-c-dev libonnx-dev)
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

# the Python package, into a venv that sees Debian's numpy (offline: no index needed)
[ -x "$build/venv/bin/pip" ] || /usr/bin/python3 -m venv --system-site-packages "$build/venv"
MGC_BUILD_DIR=$(cd "$build" && pwd) "$build/venv/bin/pip" install -q --no-index --no-build-isolation ./python
# onnx + onnxruntime for tests/onnx (onnx_export skips without them)
"$build/venv/bin/python" -c "import onnx, onnxruntime" 2>/dev/null ||
  "$build/venv/bin/pip" install -q onnx onnxruntime ||
  echo "setup: warning: could not install onnx and onnxruntime from PyPI; the onnx_export test will skip" >&2
echo "setup: the Python package is in $build/venv (source $build/venv/bin/activate; import mgc)"
