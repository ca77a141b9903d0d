#!/usr/bin/env bash
# threads.sh (issue 14) - the seed CNN on one device (cpu:0, batch 64) with
# --threads-per-device 1, 2 and the default (cores / devices), interleaved
# ROUNDS times so the machine's other load falls on each alike; prints each
# run's images/s with the load average before it, then each setting's median.
#   bench/threads.sh [STEPS] [ROUNDS]     (default 300 steps, 3 rounds; needs build/mgc)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300} rounds=${2:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1
. bench/lib.sh
model=examples/mnist_cnn.mg
build/mgc compile "$model" --devices cpu:0 ${MGC_COMPILE_FLAGS:-} -o "$tmp/one.mgx" 2>/dev/null
run() { # threads flag (empty: the default) -> images/s
  build/mgc run "$tmp/one.mgx" --steps "$steps" $1 --history "$tmp/h.jsonl" >/dev/null
  /usr/bin/python3 -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readlines()[-1])['images_per_sec']))" "$tmp/h.jsonl"
}
printf "%-6s %-28s %10s   %s\n" round setting images/s "load average before"
for r in $(seq 1 "$rounds"); do
  for t in 1 2 default; do
    flag=""; [ "$t" = default ] || flag="--threads-per-device $t"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    ips=$(run "$flag")
    echo "$t $ips" >> "$tmp/all"
    printf "%-6s %-28s %10s   %s\n" "$r" "threads-per-device $t" "$ips" "$load"
  done
done
/usr/bin/python3 - "$tmp/all" <<'PY'
import sys, statistics
runs = {}
for line in open(sys.argv[1]):
    t, ips = line.split()
    runs.setdefault(t, []).append(int(ips))
for t, v in runs.items():
    print(f"median, threads-per-device {t}: {statistics.median(v):.0f} images/s over {len(v)} runs {v}")
PY
