#!/usr/bin/env bash
# compile.sh - how long `mgc compile` takes on deep ResNets written with `for`
# (examples/resnet20.mg with N blocks per stage: 6N+2 layers), for 1 and 2
# devices: the compiler's own time (`--time-passes`' total: elaborate, passes,
# the race check, writing the plan) and the whole command's wall time, beside
# the time `mgc help` takes (process start and loading the shared libraries,
# CUDA's among them: the floor of every mgc command).
# Issue 12's target: a 50-layer ResNet (N = 8) compiles in under 0.2 s.
# Then stdlib's lstm unrolled over 128, 256 and 512 steps (about 5,000,
# 10,000 and 20,000 nodes on one device): issue 14's target is a
# 10,000-node graph in under 0.5 s. Doubling the depth or the steps should
# about double the compiler's own time (linear; tests/irplan/test_scale.c
# checks the ratio).
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
for steps in 128 256 512; do
  cat >"$tmp/lstm$steps.mg" <<EOF
use nn
model long {
  input x: f32[batch, $steps, 8]
  input label: i32[batch]
  logits = dense(lstm(x, 16), 5)
  loss = sparse_softmax_cross_entropy(logits, label)
}
train long {
  optimizer = adam(learning_rate: 0.01)
  batch = 8 per replica
}
EOF
  for devices in cpu:0 cpu:0,cpu:1; do
    cmd=(build/mgc compile "$tmp/lstm$steps.mg" --devices "$devices" -o "$tmp/l.mgx")
    nodes=$("${cmd[@]}" --time-passes 2>&1 >/dev/null | awk '$1 == "total" {print $4}')
    printf "%-36s %12s %10s %10s\n" "lstm, $steps steps ($nodes nodes)" "$devices" \
      "$(compiler_median "${cmd[@]}")" "$(median "${cmd[@]}")"
  done
done
