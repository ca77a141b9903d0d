#!/usr/bin/env bash
# train.sh - images/s training the seed CNN (examples/mnist_cnn.mg, batch 64
# per replica) with mgc and, in the same run, with PyTorch (python3-torch) on
# one thread; then mgc on 2 logical CPU devices (global batch 128) and PyTorch
# DistributedDataParallel on 2 processes (gloo, one core each), beside the
# machine's 2-core ceiling: two independent one-device runs at once, one per
# core, with no communication at all (shared caches and memory bandwidth).
# TensorFlow (the seed's MirroredStrategy code, bench/tf_cnn.py) and JAX
# (bench/jax_cnn.py) run on 1 and 2 logical devices in a venv this script makes
# (build/bench-venv, tensorflow-cpu and jax from PyPI); without PyPI they are
# reported as skipped. The step's flop rate (mgc inspect's count) is set beside
# OpenBLAS's sgemm rate on one core measured in the same run. mgc's runs,
# sgemm, PyTorch on one thread, TF on 1 device (each right after mgc on one
# core), DDP and TF on 2 devices (right after mgc on 2 devices) are taken in
# ROUNDS rounds (bench/lib.sh, mgc_rounds): their figures are the medians,
# mgc's ratios to PyTorch, TF, DDP, the ceiling and sgemm the medians of each
# round's ratio (PyTorch's single runs moved by 20% from one invocation to the
# next, 2026-11-28; this VM's speed moves within minutes). JAX runs once.
#   bench/train.sh [STEPS] [ROUNDS]     (defaults 300 and 3; needs build/mgc, build/tests/sgemm_peak)
# MGC_COMPILE_FLAGS adds compile options to every mgc plan (e.g. --no-fuse, issue 14; bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-300}
rounds=${2:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=1

. bench/lib.sh
model=examples/mnist_cnn.mg

venv=build/bench-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import tensorflow, jax" 2>/dev/null; then
  echo "bench: installing tensorflow-cpu and jax into $venv (once)" >&2
  { /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q tensorflow-cpu "jax[cpu]"; } >&2 ||
    echo "bench: could not install them; TensorFlow and JAX are skipped" >&2
fi
peer() { # script devices [command prefix, e.g. taskset -c 0] -> images/s, "skipped" or "failed"
  local script=$1 devices=$2; shift 2
  [ -x "$venv/bin/python" ] || { echo skipped; return; }
  # (JAX 0.10 on 2 host devices: XLA's all-reduce rendezvous sometimes waits
  # forever and aborts after 40 s; that run reads "failed")
  PYTHONPATH=bench "$@" "$venv/bin/python" "bench/$script" "$steps" 64 "$devices" 2>/dev/null || echo failed
}

# PyTorch on one thread and TF on one device right after mgc on one core,
# DDP and TF on 2 devices right after mgc on 2 devices, in each round (bench/lib.sh)
round_peer_one() {
  echo "$(taskset -c 0 /usr/bin/python3 bench/torch_cnn.py "$steps" 64 1) $(peer tf_cnn.py 1 taskset -c 0)"
}
round_peer_two() { echo "$(/usr/bin/python3 bench/torch_cnn.py "$steps" 64 1 2) $(peer tf_cnn.py 2)"; }
warm_kernels $model
mgc_rounds $model "$steps" "$rounds" > "$tmp/rounds"
read -r sgemm one two ceiling torch tf1 ddp tf2 < <(median_columns "$tmp/rounds")
gflop=$(gflop_per_image $model)
jax1=$(peer jax_cnn.py 1 taskset -c 0)
jax2=$(peer jax_cnn.py 2)
printf "%-40s %10s\n" "run (seed CNN, Adam, batch 64/replica)" "images/s"
printf "%-40s %10s\n" "(mgc, pytorch, DDP, TF: medians of $rounds rounds)" ""
printf "%-40s %10s\n" "pytorch $(/usr/bin/python3 -c 'import torch;print(torch.__version__)'), 1 thread, 1 core" "$torch"
printf "%-40s %10s\n" "tensorflow MirroredStrategy, 1 device" "$tf1"
printf "%-40s %10s\n" "jax, 1 device" "$jax1"
printf "%-40s %10s\n" "mgc, cpu:0, 1 core" "$one"
printf "%-40s %10s\n" "mgc, cpu:0,cpu:1, 2 cores" "$two"
printf "%-40s %10s\n" "pytorch DDP, 2 processes, 2 cores" "$ddp"
printf "%-40s %10s\n" "tensorflow MirroredStrategy, 2 devices" "$tf2"
printf "%-40s %10s\n" "jax, 2 devices (sharded jit)" "$jax2"
printf "%-40s %10s\n" "2 x mgc cpu:0 at once, 1 core each" "$ceiling"
PYTHONPATH=bench /usr/bin/python3 - "$one" "$two" "$ceiling" "$jax1" "$jax2" "$gflop" "$sgemm" "$tmp/rounds" <<'PY'
import sys
from rounds import each, number, read, times
one, two, ceiling = map(float, sys.argv[1:4])
jax1, jax2 = map(number, sys.argv[4:6])
gflop, sgemm = map(float, sys.argv[6:8])
rounds = read(sys.argv[8])  # sgemm one two ceiling torch tf1 ddp tf2
ratio = lambda a, b: f"{a / b:.2f}x" if b else "n/a"
print(f"mgc / pytorch (1 core):        {times(rounds, lambda r: r[1] / r[4])}   (target >= 4x)")
print(f"mgc / tensorflow (1 device):   {times(rounds, lambda r: r[1] / r[5], (5,))}   (target >= 2x)")
print(f"mgc / tensorflow (2 devices):  {times(rounds, lambda r: r[2] / r[7], (7,))}   (target >= 2x)")
print(f"mgc / jax (1 device):          {ratio(one, jax1)}")
print(f"mgc / jax (2 devices):         {ratio(two, jax2)}")
print(f"mgc / pytorch DDP (2 cores):   {times(rounds, lambda r: r[2] / r[6])}")
print(f"mgc 2 devices / 1 device:      {two / one:.2f}x")
print(f"2-core ceiling / 1 device:     {ceiling / one:.2f}x   (no communication: what the machine allows)")
print(f"mgc 2 devices / ceiling:       {each(rounds, lambda r: r[2] / r[3])}   (target >= 90%)")
print(f"mgc step flop rate (1 core):   {one * gflop:.1f} GFLOP/s ({1000 * gflop:.2f} MFLOP an image); "
      f"sgemm {sgemm:.1f} GFLOP/s: {each(rounds, lambda r: r[1] * gflop / r[0])}   (target >= 60%)")
PY
echo "load average at the end: $(load_average)"
