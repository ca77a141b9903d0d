#!/usr/bin/env bash
# resnet20.sh - ResNet-20 on Fashion-MNIST, mgc against PyTorch in the same
# run (issue 12): examples/resnet20.mg on 2 logical CPU devices (global batch
# 128, SGD momentum 0.9, cosine decay, EPOCHS epochs) and bench/torch_resnet20.py
# (the same architecture, initialisation and schedule, 2 threads), for each
# seed; prints test accuracy and images/s side by side and the means.
# First, speed alone (issue 14), SPEED_STEPS steps (default 30) at global batch
# 128: mgc on one core vs PyTorch on one thread, mgc on 2 logical devices vs
# DDP on 2 processes (64 a replica) and the 2-core ceiling, and the step's flop
# rate beside OpenBLAS's one-core sgemm rate; mgc's runs, PyTorch's and DDP's
# (each right after mgc's run it is set against) in SPEED_ROUNDS rounds
# (default 3; bench/lib.sh, mgc_rounds), the figures the medians, mgc's ratios
# the medians of each round's. EPOCHS 0 stops after it.
#   bench/resnet20.sh [EPOCHS] [SEEDS...]     (default 3 epochs, seeds 1 2; needs build/mgc)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-3}; shift || true
seeds=("${@:-1}"); [ $# -gt 0 ] || seeds=(1 2)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
. bench/lib.sh
model=examples/resnet20.mg
steps=${SPEED_STEPS:-30}

export OMP_NUM_THREADS=1
# PyTorch on one thread right after mgc on one core, DDP right after mgc on 2
# devices, in each round (bench/lib.sh)
round_peer_one() { taskset -c 0 /usr/bin/python3 bench/torch_resnet20.py --speed "$steps" 128 1 2>/dev/null; }
round_peer_two() { /usr/bin/python3 bench/torch_resnet20.py --speed "$steps" 64 1 2 2>/dev/null; }
warm_kernels $model
mgc_rounds $model "$steps" "${SPEED_ROUNDS:-3}" > "$tmp/rounds"
read -r sgemm one two both torch ddp < <(median_columns "$tmp/rounds")
gflop=$(gflop_per_image $model)
printf "%-44s %10s\n" "speed (ResNet-20, SGD, global batch 128)" "images/s"
printf "%-44s %10s\n" "(mgc, pytorch, DDP: medians of ${SPEED_ROUNDS:-3} rounds)" ""
printf "%-44s %10s\n" "pytorch, 1 thread, 1 core" "$torch"
printf "%-44s %10s\n" "mgc, cpu:0, 1 core" "$one"
printf "%-44s %10s\n" "pytorch DDP, 2 processes, 64 each" "$ddp"
printf "%-44s %10s\n" "mgc, cpu:0,cpu:1, 2 cores, 64 each" "$two"
printf "%-44s %10s\n" "2 x mgc cpu:0 at once, 1 core each" "$both"
PYTHONPATH=bench /usr/bin/python3 - "$one" "$gflop" "$sgemm" "$tmp/rounds" <<'PY'
import sys
from rounds import each, read, times
one, gflop, sgemm = map(float, sys.argv[1:4])
rounds = read(sys.argv[4])  # sgemm one two ceiling torch ddp
print(f"mgc / pytorch (1 core):        {times(rounds, lambda r: r[1] / r[4])}   (target >= 2x)")
print(f"mgc / pytorch DDP (2 cores):   {times(rounds, lambda r: r[2] / r[5])}   (target >= 2x)")
print(f"mgc 2 devices / ceiling:       {each(rounds, lambda r: r[2] / r[3])}")
print(f"mgc step flop rate (1 core):   {one * gflop:.1f} GFLOP/s ({1000 * gflop:.1f} MFLOP an image); "
      f"sgemm {sgemm:.1f} GFLOP/s: {each(rounds, lambda r: r[1] * gflop / r[0])}")
PY
[ "$epochs" != 0 ] || { echo "load average at the end: $(load_average)"; exit 0; }

echo
export OMP_NUM_THREADS=2

build/mgc compile examples/resnet20.mg --devices cpu:0,cpu:1 -o "$tmp/r.mgx" 2>/dev/null
printf "%-28s %6s %14s %10s\n" "run" "seed" "test accuracy" "images/s"
for seed in "${seeds[@]}"; do
  build/mgc run "$tmp/r.mgx" --epochs "$epochs" --seed "$seed" --history "$tmp/h$seed.jsonl" > /dev/null
  /usr/bin/python3 - "$tmp/h$seed.jsonl" "$seed" <<'PY' | tee -a "$tmp/mgc"
import json, sys
h = [json.loads(l) for l in open(sys.argv[1])]
ips = sum(e["images_per_sec"] * e["seconds"] for e in h) / sum(e["seconds"] for e in h)
print(f"{'mgc, cpu:0,cpu:1':28s} {sys.argv[2]:>6s} {h[-1]['val_accuracy']:14.4f} {ips:10.0f}")
PY
  /usr/bin/python3 bench/torch_resnet20.py "$seed" "$epochs" 2 2>/dev/null | /usr/bin/python3 -c "
import json, sys
r = json.loads(sys.stdin.read())
print(f\"{r['framework'] + ', 2 threads':28s} {r['seed']:>6d} {r['test_accuracy']:14.4f} {r['images_per_sec']:10.0f}\")" | tee -a "$tmp/torch"
done
/usr/bin/python3 - "$tmp/mgc" "$tmp/torch" <<'PY'
import sys
def cols(path):
    rows = [l.split() for l in open(path)]
    return [float(r[-2]) for r in rows], [float(r[-1]) for r in rows]
(ma, mi), (ta, ti) = cols(sys.argv[1]), cols(sys.argv[2])
mean = lambda v: sum(v) / len(v)
print(f"mean test accuracy: mgc {mean(ma):.4f}, pytorch {mean(ta):.4f}, difference {100 * (mean(ma) - mean(ta)):+.2f} points (target: mgc >= 0.90, within 0.5)")
print(f"mean images/s: mgc {mean(mi):.0f}, pytorch {mean(ti):.0f}, ratio {mean(mi) / mean(ti):.2f}x")
PY
echo "load average at the end: $(load_average)"
