#!/usr/bin/env bash
# compile.sh - how long `mgc compile` takes on deep ResNets written with `for`
# (examples/resnet20.mg with N blocks per stage: 6N+2 layers), for 1 and 2
# devices: the compiler's own time (`--time-passes`' total: elaborate, passes,
# the race check, writing the plan) and the whole command's wall time, beside
# the time `mgc help` takes (process start and loading the shared libraries,
# CUDA's among them: the floor of every mgc command).
# Issue 12's target: a 50-layer ResNet (N = 8) compiles in under 0.2 s.
# Doubling the depth should about double the compiler's own time (linear).
#   bench/compile.sh [RUNS]     (default 7 runs each, the median is shown; needs build/mgc)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-7}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# median wall seconds of `runs` runs of the command
median() {
  for _ in $(seq "$runs"); do
    /usr/bin/time -f %e "$@" 2>&1 >/dev/null | tail -1
  done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

# median of `runs` runs of the compiler's own total, in seconds
compiler_median() {
  for _ in $(seq "$runs"); do
    "$@" --time-passes 2>&1 >/dev/null | awk '$1 == "total" {print $2 / 1000}'
  done | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'
}

floor=$(median build/mgc help)
printf "%-36s %12s %10s %10s\n" "model" "devices" "compiler s" "wall s"
printf "%-36s %12s %10s %10s\n" "(mgc help: start-up only)" "-" "-" "$floor"
for n in 3 8 16; do
  layers=$((6 * n + 2))
  awk -v n="$n" '/for i in range\(3\)/ { sub(/range\(3\)/, "range(" n ")") } { print }' examples/resnet20.mg >"$tmp/resnet$layers.mg"
  for devices in cpu:0 cpu:0,cpu:1; do
    cmd=(build/mgc compile "$tmp/resnet$layers.mg" --devices "$devices" -o "$tmp/r.mgx")
    printf "%-36s %12s %10s %10s\n" "resnet, $layers layers ($n blocks/stage)" "$devices" \
      "$(compiler_median "${cmd[@]}")" "$(median "${cmd[@]}")"
  done
done
