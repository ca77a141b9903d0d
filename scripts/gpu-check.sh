#!/bin/sh
# gpu-check.sh - validate mgc's CUDA backend on a machine with GPUs, in one
# command (issue 15; docs/gpu.md "Validating a GPU machine"):
#
#   1. counts the GPUs (a cudaGetDeviceCount probe, else nvidia-smi); none:
#      prints "gpu-check: no GPU here (...)" and exits 0;
#   2. configures and builds with CUDA in $MGC_GPU_BUILD (default build-gpu);
#   3. runs every GPU test (ctest -R 'cuda|nccl'; a skipped one fails here),
#      and compute-sanitizer memcheck and racecheck on test_cuda_ops when
#      compute-sanitizer is installed;
#   4. trains the seed CNN (examples/mnist_cnn.mg, Fashion-MNIST) on gpu:0 and
#      on every GPU, and the same plans on as many CPU devices with the same
#      seed, and compares them (scripts/gpu-compare.py; tolerances and why:
#      docs/gpu.md): params after 1 step within 1e-3 and after 10 steps within
#      1e-2 (relative L2 per tensor), with CUDA graphs and --no-cuda-graphs,
#      and graphs against --no-cuda-graphs; over $GPU_CHECK_EPOCHS epochs
#      (default 2) the loss curve within 2e-2 (val_loss 5e-2); and
#      tests/cuda/graph_step.mg (dropout, AdamW on a warmup+cosine schedule)
#      6 steps with CUDA graphs against --no-cuda-graphs within 1e-4: the
#      replayed graphs must read the current step;
#   5. prints images/s for 1..N GPUs (with and without CUDA graphs) and the
#      NCCL all-reduce bus bandwidth (bench/nccl_allreduce.c).
# Exit status: 0 when every check passed (or no GPU), 1 otherwise.
# Environment: MGC_GPU_BUILD, GPU_CHECK_EPOCHS, GPU_CHECK_STEPS (set: the loss
# curve run is that many steps instead of epochs), GPU_CHECK_PERF_STEPS (steps of
# each images/s run, default 500), GPU_CHECK_DIR (work files), CUDA_HOME
# (default /usr/local/cuda), CMAKE_CUDA_ARCHITECTURES (passed on).
# GPU_CHECK_CPU_STANDIN=N tests this script without a GPU: N CPU devices play the GPUs
# (no GPU tests, sanitizer or NCCL bench; the comparisons then run CPU
# against CPU and must pass bit for bit).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
B=${MGC_GPU_BUILD:-$ROOT/build-gpu}
EPOCHS=${GPU_CHECK_EPOCHS:-2}
say() { printf 'gpu-check: %s\n' "$*"; }
FAILED=""
fail() { say "FAIL: $*"; FAILED="$FAILED
  $*"; }

# ---- 1. GPUs -------------------------------------------------------------
# "N reason": a cudaGetDeviceCount probe built with the host compiler when the
# toolkit is here (it sees what mgc will see, CUDA_VISIBLE_DEVICES included),
# else nvidia-smi.
count_gpus() {
    if [ -f "$CUDA_HOME/include/cuda_runtime_api.h" ] && command -v cc >/dev/null 2>&1; then
        probe_dir=$(mktemp -d) || return 1
        cat >"$probe_dir/probe.c" <<'EOF'
#include <stdio.h>
#include <cuda_runtime_api.h>
int main(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) printf("0 cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
    else printf("%d cudaGetDeviceCount: %d device(s)\n", n, n);
    return 0;
}
EOF
        for lib in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"; do
            if cc -o "$probe_dir/probe" "$probe_dir/probe.c" -I"$CUDA_HOME/include" -L"$lib" -lcudart \
                2>/dev/null; then
                LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$probe_dir/probe"
                rm -rf "$probe_dir"
                return 0
            fi
        done
        rm -rf "$probe_dir"
    fi
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "0 no CUDA toolkit at $CUDA_HOME and no nvidia-smi"
        return 0
    fi
    list=$(nvidia-smi -L 2>&1)
    n=$(printf '%s\n' "$list" | grep -c '^GPU ')
    if [ "$n" -gt 0 ]; then echo "$n nvidia-smi: $n GPU(s)"; else echo "0 nvidia-smi: $(printf '%s' "$list" | head -n 1)"; fi
}

KIND=gpu
if [ -n "${GPU_CHECK_CPU_STANDIN:-}" ]; then
    KIND=cpu probe="$GPU_CHECK_CPU_STANDIN stand-in: $GPU_CHECK_CPU_STANDIN cpu devices play the GPUs (GPU_CHECK_CPU_STANDIN)"
else
    probe=$(count_gpus)
fi
N=${probe%% *}
REASON=${probe#* }
case "$N" in '' | *[!0-9]*) N=0 ;; esac
if [ "$N" -lt 1 ]; then
    say "no GPU here ($REASON): nothing to check"
    exit 0
fi
say "$N GPU(s) ($REASON)"
[ "$KIND" = gpu ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L

# ---- 2. build ------------------------------------------------------------
say "building in $B"
mkdir -p "$B" || exit 1
arch=""
[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && arch="-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES"
if ! cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release $arch >"$B/gpu-check.configure.log" 2>&1; then
    cat "$B/gpu-check.configure.log"; say "FAIL: cmake configure"; exit 1
fi
grep 'CUDA backend:' "$B/gpu-check.configure.log"
if [ "$KIND" = gpu ] && ! grep -q 'CUDA backend: built' "$B/gpu-check.configure.log"; then
    say "FAIL: the CUDA backend was not configured (toolkit, cuDNN and NCCL with headers are needed)"; exit 1
fi
if ! cmake --build "$B" -j "$(nproc 2>/dev/null || echo 4)" >"$B/gpu-check.build.log" 2>&1; then
    tail -n 40 "$B/gpu-check.build.log"; say "FAIL: build (log: $B/gpu-check.build.log)"; exit 1
fi
MGC=$B/mgc
WORK=${GPU_CHECK_DIR:-$B/gpu-check}
mkdir -p "$WORK"

# ---- 3. GPU tests --------------------------------------------------------
gpu_tests() {
say "GPU tests: ctest -R 'cuda|nccl'"
ctest --test-dir "$B" -R 'cuda|nccl' --output-on-failure >"$WORK/ctest.log" 2>&1
rc=$?
grep -E 'Test +#|tests passed|Skipped' "$WORK/ctest.log"
[ $rc -eq 0 ] || fail "GPU tests (log: $WORK/ctest.log)"
grep -q 'Skipped' "$WORK/ctest.log" && fail "a GPU test reported itself skipped on a GPU machine"
SAN=$(command -v compute-sanitizer || { [ -x "$CUDA_HOME/bin/compute-sanitizer" ] && echo "$CUDA_HOME/bin/compute-sanitizer"; })
OPS=$(find "$B" -name test_cuda_ops -type f -perm -u+x | head -n 1)
if [ -n "$SAN" ] && [ -n "$OPS" ]; then
    for tool in memcheck racecheck; do
        if "$SAN" --tool "$tool" --error-exitcode 1 "$OPS" >"$WORK/sanitizer-$tool.log" 2>&1; then
            say "compute-sanitizer $tool test_cuda_ops: clean"
        else
            tail -n 20 "$WORK/sanitizer-$tool.log"; fail "compute-sanitizer $tool on test_cuda_ops ($WORK/sanitizer-$tool.log)"
        fi
    done
else
    say "compute-sanitizer not installed: memcheck/racecheck not run"
fi
}
if [ "$KIND" = gpu ]; then gpu_tests; else say "stand-in run: GPU tests and compute-sanitizer not run"; fi

# ---- 4. seed CNN: GPU against CPU ---------------------------------------
devices() { # kind count -> kind:0,kind:1,...
    i=0 out=""
    while [ $i -lt "$2" ]; do out="$out${out:+,}$1:$i"; i=$((i + 1)); done
    echo "$out"
}
compile() { # kind count -> plan path
    plan="$WORK/$1$2.mgx"
    [ -f "$plan" ] || (cd "$ROOT" && "$MGC" compile examples/mnist_cnn.mg --devices "$(devices "$1" "$2")" -o "$plan") \
        >"$plan.log" 2>&1 || { cat "$plan.log" >&2; return 1; }
    echo "$plan"
}
train() { # name plan args... : --strict-devices, so a GPU plan never falls back to the CPU
    name=$1 plan=$2
    shift 2
    if ! "$MGC" run "$plan" --seed 1 --strict-devices "$@" >"$WORK/$name.log" 2>&1; then
        tail -n 5 "$WORK/$name.log"; fail "training $name ($WORK/$name.log)"; return 1
    fi
}
counts=1
[ "$N" -gt 1 ] && counts="1 $N"
cmp() { python3 "$ROOT/scripts/gpu-compare.py" "$@"; }
if [ -n "${GPU_CHECK_STEPS:-}" ]; then
    LONG="$GPU_CHECK_STEPS steps" LONG_ARGS="--steps $GPU_CHECK_STEPS"
else
    LONG="$EPOCHS epoch(s)" LONG_ARGS="--epochs $EPOCHS"
fi
for k in $counts; do
    gp=$(compile "$KIND" "$k") && cp=$(compile cpu "$k") || { fail "compiling the seed CNN for $k device(s)"; continue; }
    say "seed CNN on $(devices "$KIND" "$k") vs $(devices cpu "$k"): 1 and 10 steps, then $LONG"
    for n in 1 10; do
        tol=1e-3
        [ "$n" -gt 1 ] && tol=1e-2
        for run in "gpu$k-s$n:$gp:" "gpu$k-eager-s$n:$gp:--no-cuda-graphs" "cpu$k-s$n:$cp:"; do
            name=${run%%:*} rest=${run#*:}
            train "$name" "${rest%%:*}" --steps "$n" --save "$WORK/$name.safetensors" ${rest#*:}
        done
        for a in "gpu$k-s$n" "gpu$k-eager-s$n"; do
            [ -f "$WORK/$a.safetensors" ] && [ -f "$WORK/cpu$k-s$n.safetensors" ] &&
                { cmp "$a vs cpu$k after $n step(s)" "$WORK/$a.safetensors" "$WORK/cpu$k-s$n.safetensors" "$tol" ||
                      fail "$a vs cpu$k after $n step(s)"; }
        done
        [ -f "$WORK/gpu$k-s$n.safetensors" ] && [ -f "$WORK/gpu$k-eager-s$n.safetensors" ] &&
            { cmp "gpu$k-s$n (CUDA graphs) vs --no-cuda-graphs" "$WORK/gpu$k-s$n.safetensors" \
                  "$WORK/gpu$k-eager-s$n.safetensors" "$tol" || fail "CUDA graphs vs eager, $k GPU(s), $n step(s)"; }
    done
    for run in "gpu$k:$gp:" "cpu$k:$cp:"; do
        name=${run%%:*} rest=${run#*:}
        rm -f "$WORK/$name.jsonl"
        train "$name" "${rest%%:*}" $LONG_ARGS --history "$WORK/$name.jsonl" --save "$WORK/$name.safetensors"
    done
    [ -f "$WORK/gpu$k.jsonl" ] && [ -f "$WORK/cpu$k.jsonl" ] &&
        { cmp "gpu$k vs cpu$k after $LONG" "$WORK/gpu$k.safetensors" "$WORK/cpu$k.safetensors" - \
              "$WORK/gpu$k.jsonl" "$WORK/cpu$k.jsonl" 2e-2 5e-2 || fail "gpu$k vs cpu$k loss curve"; }
done

# ---- 4b. CUDA graphs replay the step ------------------------------------
# tests/cuda/graph_step.mg: dropout, AdamW and a cosine schedule with warmup, so
# the mask, the rate and the bias correction change every step. A train step is
# captured once and replayed (docs/gpu.md "CUDA graphs"): the replays must read
# the current step (device words), so the graph run must match the eager one.
for k in $counts; do
    plan="$WORK/graphstep-$KIND$k.mgx"
    if ! (cd "$ROOT" && "$MGC" compile tests/cuda/graph_step.mg --devices "$(devices "$KIND" "$k")" -o "$plan") \
        >"$plan.log" 2>&1; then
        cat "$plan.log" >&2; fail "compiling tests/cuda/graph_step.mg for $k device(s)"; continue
    fi
    say "graph replay: tests/cuda/graph_step.mg on $(devices "$KIND" "$k"), 6 steps, CUDA graphs vs --no-cuda-graphs"
    train "graphstep$k" "$plan" --steps 6 --save "$WORK/graphstep$k.safetensors"
    train "graphstep$k-eager" "$plan" --steps 6 --save "$WORK/graphstep$k-eager.safetensors" --no-cuda-graphs
    [ -f "$WORK/graphstep$k.safetensors" ] && [ -f "$WORK/graphstep$k-eager.safetensors" ] &&
        { cmp "graph_step.mg, $k device(s): CUDA graphs vs --no-cuda-graphs after 6 steps" \
              "$WORK/graphstep$k.safetensors" "$WORK/graphstep$k-eager.safetensors" 1e-4 ||
              fail "CUDA graph replays vs eager (graph_step.mg, $k device(s))"; }
done

# ---- 5. throughput and NCCL bandwidth -----------------------------------
ips() { # history file -> images/s of its last epoch
    [ -f "$1" ] && tail -n 1 "$1" | sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p'
}
PERF_STEPS=${GPU_CHECK_PERF_STEPS:-500}
say "images/s, seed CNN, batch 64 per replica, $PERF_STEPS steps (CUDA graphs / --no-cuda-graphs)"
printf '%-6s %12s %12s %10s\n' GPUs graphs eager scaling
base=""
k=1
while [ "$k" -le "$N" ]; do
    gp=$(compile "$KIND" "$k") || { fail "compiling for $k GPUs"; k=$((k + 1)); continue; }
    rm -f "$WORK/perf$k.jsonl" "$WORK/perf$k-eager.jsonl"
    train "perf$k" "$gp" --steps "$PERF_STEPS" --history "$WORK/perf$k.jsonl"
    train "perf$k-eager" "$gp" --steps "$PERF_STEPS" --history "$WORK/perf$k-eager.jsonl" --no-cuda-graphs
    g=$(ips "$WORK/perf$k.jsonl") e=$(ips "$WORK/perf$k-eager.jsonl")
    [ -z "$base" ] && base=$g
    scale=$(awk -v g="${g:-0}" -v b="${base:-0}" -v k="$k" 'BEGIN { if (b > 0) printf "%.2f", g / (k * b); else print "-" }')
    printf '%-6s %12s %12s %10s\n' "$k" "${g:--}" "${e:--}" "$scale"
    k=$((k + 1))
done
[ -f "$WORK/cpu1.jsonl" ] && printf '%-6s %12s\n' "cpu:0" "$(ips "$WORK/cpu1.jsonl")"

BENCH=$(find "$B" -name bench_nccl_allreduce -type f -perm -u+x | head -n 1)
if [ "$KIND" != gpu ]; then
    say "stand-in run: NCCL all-reduce bench not run"
elif [ "$N" -lt 2 ]; then
    say "NCCL all-reduce busbw: needs 2 or more GPUs (busbw = algbw * 2(n-1)/n is 0 for one)"
elif [ -z "$BENCH" ]; then
    fail "bench_nccl_allreduce was not built"
else
    say "NCCL all-reduce, f32 sum in place, $N GPUs: busbw = algbw * 2(n-1)/n (nccl-tests)"
    printf '%12s %12s %12s %12s\n' bytes time_us algbw_GB/s busbw_GB/s
    if "$BENCH" "$N" 256 >"$WORK/nccl.log" 2>&1; then
        sed -n 's/.*bytes=\([0-9]*\) time_us=\([0-9.]*\) algbw_GBps=\([0-9.]*\) busbw_GBps=\([0-9.]*\)/\1 \2 \3 \4/p' \
            "$WORK/nccl.log" | while read -r by t a u; do printf '%12s %12s %12s %12s\n' "$by" "$t" "$a" "$u"; done
    else
        cat "$WORK/nccl.log"; fail "bench_nccl_allreduce"
    fi
fi

if [ -n "$FAILED" ]; then
    say "FAILED:$FAILED"
    exit 1
fi
say "all checks passed ($N GPU(s)); work files in $WORK"
exit 0
