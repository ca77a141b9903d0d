#!/usr/bin/env bash
# test.sh - set up, build and run every test (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir "${MGC_BUILD_DIR:-build}" --output-on-failure -j2
