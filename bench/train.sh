#!/usr/bin/env bash
# train.sh - images/s training the seed CNN (examples/mnist_cnn.mg, batch 64
# per replica) with mgc and, in the same run, with PyTorch (python3-torch) on
# one thread; then mgc on 2 logical CPU devices (global batch 128).
#   bench/train.sh [STEPS]     (default 300; needs build/mgc)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

mgc_ips() { # devices -> images/s of the training steps (history, no evaluation time)
  build/mgc compile examples/mnist_cnn.mg --devices "$1" -o "$tmp/p.mgx" 2>/dev/null
  build/mgc run "$tmp/p.mgx" --steps "$steps" --history "$tmp/h.jsonl" >/dev/null
  /usr/bin/python3 -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readlines()[-1])['images_per_sec']))" "$tmp/h.jsonl"
}

one=$(taskset -c 0 bash -c "$(declare -f mgc_ips); tmp=$tmp steps=$steps mgc_ips cpu:0")
torch=$(taskset -c 0 /usr/bin/python3 bench/torch_cnn.py "$steps" 64 1)
two=$(mgc_ips cpu:0,cpu:1)
printf "%-40s %10s\n" "run (seed CNN, Adam, batch 64/replica)" "images/s"
printf "%-40s %10s\n" "pytorch $(/usr/bin/python3 -c 'import torch;print(torch.__version__)'), 1 thread, 1 core" "$torch"
printf "%-40s %10s\n" "mgc, cpu:0, 1 core" "$one"
printf "%-40s %10s\n" "mgc, cpu:0,cpu:1, 2 cores" "$two"
/usr/bin/python3 - "$torch" "$one" "$two" <<'PY'
import sys
t, one, two = map(float, sys.argv[1:])
print(f"mgc / pytorch (1 core):        {one / t:.2f}x   (target >= 3x)")
print(f"mgc 2 devices / 1 device:      {two / one:.2f}x   (target >= 1.8x)")
PY
