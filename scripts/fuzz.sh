#!/usr/bin/env bash
# fuzz.sh - build the libFuzzer targets (clang, ASan+UBSan) in build-fuzz/ and run
# each for SECONDS on a scratch copy of its corpus; findings are copied to
# tests/fuzz/crashes/<target>/ (replayed by CTest from then on) and fail the run.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     (default 30 s, every tests/fuzz/fuzz_*.c)
#   MGC_FUZZ_BUILD_DIR: build directory (default build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
build=${MGC_FUZZ_BUILD_DIR:-build-fuzz}
fuzz_dir=tests/fuzz

if (($#)); then
  targets=("$@")
else
  targets=()
  for src in "$fuzz_dir"/fuzz_*.c; do
    name=$(basename "$src" .c)
    targets+=("${name#fuzz_}")
  done
fi

CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMGC_FUZZ=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null

# Targets whose stage is not in the tree yet have no executable (tests/fuzz.cmake).
known=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. //p')
runnable=()
for t in "${targets[@]}"; do
  if grep -qx "fuzz_$t" <<<"$known"; then runnable+=("$t"); else echo "fuzz: skipping $t (not built: its stage is not in the tree)"; fi
done
((${#runnable[@]})) || { echo "fuzz: no targets"; exit 0; }
cmake --build "$build" -j2 --target "${runnable[@]/#/fuzz_}"

# Inputs up to 4 KiB, or the largest seed of the target's corpus.
max_len_for() {
  local largest
  largest=$(find "$fuzz_dir/corpus_$1" "$fuzz_dir/crashes/$1" -type f -printf '%s\n' 2>/dev/null | sort -n | tail -1)
  echo $(( ${largest:-0} > 4096 ? ${largest:-0} : 4096 ))
}

export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failed=0
report=()
for t in "${runnable[@]}"; do
  work="$scratch/$t"
  mkdir -p "$work/corpus" "$work/artifacts"
  for d in "$fuzz_dir/corpus_$t" "$fuzz_dir/crashes/$t"; do
    [ -d "$d" ] && find "$d" -maxdepth 1 -type f ! -name '.*' -exec cp {} "$work/corpus/" \;
  done
  echo "fuzz: $t for ${seconds}s"
  rc=0
  "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len="$(max_len_for "$t")" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
    >"$work/log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
  found=$(find "$work/artifacts" -type f | wc -l)
  status=ok
  if ((found)); then
    mkdir -p "$fuzz_dir/crashes/$t"
    cp "$work/artifacts"/* "$fuzz_dir/crashes/$t/"
    status="FOUND $found input(s), saved in $fuzz_dir/crashes/$t/"
    failed=1
  elif ((rc)); then
    status="FAILED (exit $rc)"
    failed=1
  fi
  if [ "$status" != ok ]; then
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==" "$work/log" | head -20 || true
    cp "$work/log" "$build/fuzz/$t.log"
    echo "fuzz: full log in $build/fuzz/$t.log"
  fi
  report+=("$(printf '%-12s %12s executions in %ss  %s' "$t" "${execs:-?}" "$seconds" "$status")")
done

echo "fuzz: summary"
printf '  %s\n' "${report[@]}"
exit $failed
