#!/usr/bin/env bash
# train.sh - images/s training the seed CNN (examples/mnist_cnn.mg, batch 64
# per replica) with mgc and, in the same run, with PyTorch (python3-torch) on
# one thread; then mgc on 2 logical CPU devices (global batch 128) and PyTorch
# DistributedDataParallel on 2 processes (gloo, one core each), beside the
# machine's 2-core ceiling: two independent one-device runs at once, one per
# core, with no communication at all (shared caches and memory bandwidth).
#   bench/train.sh [STEPS]     (default 300; needs build/mgc)
# MGC_COMPILE_FLAGS adds compile options to every mgc plan (e.g. --no-fuse, issue 14).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

mgc_ips() { # devices [name] -> images/s of the training steps (history, no evaluation time)
  build/mgc compile examples/mnist_cnn.mg --devices "$1" ${MGC_COMPILE_FLAGS:-} -o "$tmp/p${2:-}.mgx" 2>/dev/null
  build/mgc run "$tmp/p${2:-}.mgx" --steps "$steps" --history "$tmp/h${2:-}.jsonl" >/dev/null
  /usr/bin/python3 -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readlines()[-1])['images_per_sec']))" "$tmp/h${2:-}.jsonl"
}
export -f mgc_ips; export tmp steps MGC_COMPILE_FLAGS

one=$(taskset -c 0 bash -c "mgc_ips cpu:0")
torch=$(taskset -c 0 /usr/bin/python3 bench/torch_cnn.py "$steps" 64 1)
two=$(mgc_ips cpu:0,cpu:1)
ddp=$(/usr/bin/python3 bench/torch_cnn.py "$steps" 64 1 2)
taskset -c 0 bash -c "mgc_ips cpu:0 a" > "$tmp/a" & taskset -c 1 bash -c "mgc_ips cpu:0 b" > "$tmp/b"; wait
ceiling=$(( $(cat "$tmp/a") + $(cat "$tmp/b") ))
printf "%-40s %10s\n" "run (seed CNN, Adam, batch 64/replica)" "images/s"
printf "%-40s %10s\n" "pytorch $(/usr/bin/python3 -c 'import torch;print(torch.__version__)'), 1 thread, 1 core" "$torch"
printf "%-40s %10s\n" "mgc, cpu:0, 1 core" "$one"
printf "%-40s %10s\n" "mgc, cpu:0,cpu:1, 2 cores" "$two"
printf "%-40s %10s\n" "pytorch DDP, 2 processes, 2 cores" "$ddp"
printf "%-40s %10s\n" "2 x mgc cpu:0 at once, 1 core each" "$ceiling"
/usr/bin/python3 - "$torch" "$one" "$two" "$ceiling" "$ddp" <<'PY'
import sys
t, one, two, ceiling, ddp = map(float, sys.argv[1:])
print(f"mgc / pytorch (1 core):        {one / t:.2f}x   (target >= 3x)")
print(f"mgc / pytorch DDP (2 cores):   {two / ddp:.2f}x")
print(f"mgc 2 devices / 1 device:      {two / one:.2f}x   (target >= 1.8x)")
print(f"2-core ceiling / 1 device:     {ceiling / one:.2f}x   (no communication: what the machine allows)")
print(f"mgc 2 devices / ceiling:       {two / ceiling:.0%}")
PY
