#!/usr/bin/env bash
# ab.sh - two builds of mgc (or one against itself) on one plan, alternated:
# the images/s of each pair of runs and the median ratio B / A. For a change
# whose effect is smaller than this VM's drift (issue 14: the same plan moved
# by 30% within minutes), runs taken one right after the other, the order
# flipped each pair, and the median of the ratios; `bench/ab.sh N S A A PLAN`
# (a build against itself) gives the noise floor to read it against.
#
# Both builds use the same kernel choices: the tuner's cache file is named by
# the build (docs/cpu-kernels.md, "Cache"), so two builds would otherwise each
# measure their own and may choose differently for a shape whose candidates
# run within noise of each other (seen 2026-11-29: the seed CNN's dx GEMM,
# onednn in one build's cache and thin in the next's). A's choices are made
# once (a warm-up run) and copied under B's name in a scratch MGC_CACHE_DIR.
#   bench/ab.sh PAIRS STEPS BIN_A BIN_B PLAN [CORES]
# CORES (e.g. 0) runs both under taskset -c CORES. Extra `mgc run` options
# (e.g. --data text:) in MGC_RUN_FLAGS. PLAN may be a model (.mg) instead:
# each build then compiles its own plan (--devices MGC_DEVICES, default
# cpu:0), for a change to the compiler, whose plans the other build may not read.
set -euo pipefail
[ $# -ge 5 ] || { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
pairs=$1 steps=$2 a=$3 b=$4 plan=$5 cores=${6:-}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/a" "$tmp/b"
pin=(); [ -n "$cores" ] && pin=(taskset -c "$cores")
planned=("$plan" "$plan") # A's, B's
if [[ $plan == *.mg ]]; then
  for side in a b; do
    bin=$a; [ $side = b ] && bin=$b
    "$bin" compile "$plan" --devices "${MGC_DEVICES:-cpu:0}" -o "$tmp/$side.mgx" >/dev/null ||
      { echo "ab: $bin compile $plan failed" >&2; exit 1; }
  done
  planned=("$tmp/a.mgx" "$tmp/b.mgx")
fi
plan_of() { if [ "$1" = "$a" ]; then echo "${planned[0]}"; else echo "${planned[1]}"; fi; } # binary -> its plan
# shellcheck disable=SC2086 # MGC_RUN_FLAGS is a list of options
run() { # cache-dir binary history
  MGC_CACHE_DIR=$1 "${pin[@]}" "$2" run "$(plan_of "$2")" --steps "$steps" ${MGC_RUN_FLAGS:-} --history "$3" >/dev/null 2>&1
}
ips() { /usr/bin/python3 -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readlines()[-1])['images_per_sec']))" "$1"; }
# shellcheck disable=SC2086
for side in a b; do # each build's cache file made, then A's choices under both names
  bin=$a; [ $side = b ] && bin=$b
  MGC_CACHE_DIR=$tmp/$side "${pin[@]}" "$bin" run "$(plan_of "$bin")" --steps 3 ${MGC_RUN_FLAGS:-} >/dev/null 2>&1 ||
    { echo "ab: $bin run $(plan_of "$bin") failed" >&2; exit 1; }
done
cache_a=$(ls "$tmp"/a/kernels-*.json) cache_b=$(ls "$tmp"/b/kernels-*.json)
cp "$cache_a" "$cache_b"
ratios=()
for i in $(seq "$pairs"); do
  if [ $((i % 2)) = 1 ]; then run "$tmp/a" "$a" "$tmp/ha"; run "$tmp/b" "$b" "$tmp/hb"
  else run "$tmp/b" "$b" "$tmp/hb"; run "$tmp/a" "$a" "$tmp/ha"; fi
  ia=$(ips "$tmp/ha") ib=$(ips "$tmp/hb")
  ratios+=("$(/usr/bin/python3 -c "print('%.3f' % ($ib / $ia))")")
  printf "pair %2d: A %7d  B %7d  B/A %s\n" "$i" "$ia" "$ib" "${ratios[-1]}"
done
/usr/bin/python3 -c "
import statistics, sys
v = sorted(map(float, sys.argv[1:]))
print('B/A median %.3f (%.3f-%.3f) over %d pairs' % (statistics.median(v), v[0], v[-1], len(v)))" "${ratios[@]}"
