# lib.sh - helpers for the command-line tests: each test script sources this
# with MGC (the binary) and SRC (the source tree) set, and fails loudly.
set -euo pipefail
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# a kernel-choice cache of the test's own (runtime/cpu/tune.c): its first run of a
# shape measures and later runs read that choice, so runs a test compares bit for
# bit choose alike whatever the tests running beside it measure
export MGC_CACHE_DIR=$tmp/kernels

PY=/usr/bin/python3  # Debian's, with numpy and torch (not a pyenv one)
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_fail EXPECTED_STDERR_LINE cmd... : exit status 1 and that exact first line on stderr
expect_fail() {
  local want=$1; shift
  local status=0
  "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = 1 ] || fail "'$*' exited $status, expected 1; stderr: $(cat "$tmp/err")"
  grep -qxF -- "$want" "$tmp/err" || fail "'$*' stderr lacks the line [$want]; got: $(cat "$tmp/err")"
}

# expect_line FILE LINE-REGEX
expect_line() { grep -qE -- "$2" "$1" || fail "$1 lacks /$2/; it holds: $(head -c 2000 "$1")"; }

# wait_for FILE: polls until FILE exists (a run's checkpoint, say), up to 120 s,
# so a loaded machine slows the test instead of failing it
wait_for() {
  for _ in $(seq 12000); do [ -e "$1" ] && return; sleep 0.01; done
  fail "$1 did not appear within 120 s"
}
