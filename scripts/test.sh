#!/usr/bin/env bash
# test.sh - set up, build and run every test (CTest) in build/; with --sanitize
# (or MGC_SANITIZE_RUN=1) run the whole suite a second time built with ASan and
# UBSan in build-asan/, where any sanitizer finding (leaks included) fails it.
#   scripts/test.sh [--sanitize]
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=${MGC_SANITIZE_RUN:-0}
for arg in "$@"; do
  case $arg in
    --sanitize) sanitize=1 ;;
    *) echo "usage: scripts/test.sh [--sanitize]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
ctest --test-dir "${MGC_BUILD_DIR:-build}" --output-on-failure -j2

if [ "$sanitize" = 1 ]; then
  echo "test: the suite again under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
  MGC_BUILD_DIR=build-asan MGC_CMAKE_ARGS="-DMGC_SANITIZE=ON ${MGC_CMAKE_ARGS:-}" scripts/setup.sh
  export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  export LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp:print_suppressions=0
  ctest --test-dir build-asan --output-on-failure -j2
fi
