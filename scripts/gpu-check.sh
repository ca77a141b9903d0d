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
#      seed, and compares them (scripts/gpu-compare.py): one step, params within
#      1e-3; $GPU_CHECK_EPOCHS epochs (default 2), the loss curve within 1e-2
#      and params within 5e-2 (relative; why: docs/gpu.md); the same with
#      --no-cuda-graphs against the graph run;
#   5. prints images/s for 1..N GPUs (with and without CUDA graphs) and the
#      NCCL all-reduce bus bandwidth (bench/nccl_allreduce.c).
# Exit status: 0 when every check passed (or no GPU), 1 otherwise.
# Environment: MGC_GPU_BUILD, GPU_CHECK_EPOCHS, GPU_CHECK_DIR (work files),
# CUDA_HOME (default /usr/local/cuda), CMAKE_CUDA_ARCHITECTURES (passed on).
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

probe=$(count_gpus)
N=${probe%% *}
REASON=${probe#* }
case "$N" in '' | *[!0-9]*) N=0 ;; esac
if [ "$N" -lt 1 ]; then
    say "no GPU here ($REASON): nothing to check"
    exit 0
fi
say "$N GPU(s) ($REASON)"
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L

# ---- 2. build ------------------------------------------------------------
say "building in $B"
arch=""
[ -n "${CMAKE_CUDA_ARCHITECTURES:-}" ] && arch="-DCMAKE_CUDA_ARCHITECTURES=$CMAKE_CUDA_ARCHITECTURES"
if ! cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release $arch >"$B.configure.log" 2>&1; then
    cat "$B.configure.log"; say "FAIL: cmake configure"; exit 1
fi
grep 'CUDA backend:' "$B.configure.log"
if ! grep -q 'CUDA backend: built' "$B.configure.log"; then
    say "FAIL: the CUDA backend was not configured (toolkit, cuDNN and NCCL with headers are needed)"; exit 1
fi
if ! cmake --build "$B" -j "$(nproc 2>/dev/null || echo 4)" >"$B.build.log" 2>&1; then
    tail -n 40 "$B.build.log"; say "FAIL: build (log: $B.build.log)"; exit 1
fi
MGC=$B/mgc
WORK=${GPU_CHECK_DIR:-$B/gpu-check}
mkdir -p "$WORK"

# ---- 3. GPU tests --------------------------------------------------------
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

# ---- 4. seed CNN: GPU against CPU ---------------------------------------
devices() { # kind count -> kind:0,kind:1,...
    i=0 out=""
    while [ $i -lt "$2" ]; do out="$out${out:+,}$1:$i"; i=$((i + 1)); done
    echo "$out"
}
compile() { # kind count -> plan path
    plan="$WORK/$1-$2.mgx"
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
for k in $counts; do
    gp=$(compile gpu "$k") && cp=$(compile cpu "$k") || { fail "compiling the seed CNN for $k device(s)"; continue; }
    say "seed CNN on $(devices gpu "$k") vs $(devices cpu "$k"): 1 step, then $EPOCHS epoch(s)"
    train "gpu$k-step" "$gp" --steps 1 --save "$WORK/gpu$k-step.safetensors" &&
        train "cpu$k-step" "$cp" --steps 1 --save "$WORK/cpu$k-step.safetensors" &&
        { python3 "$ROOT/scripts/gpu-compare.py" "gpu$k vs cpu$k after 1 step" "$WORK/gpu$k-step.safetensors" \
              "$WORK/cpu$k-step.safetensors" 1e-3 || fail "gpu$k vs cpu$k after 1 step"; }
    for run in "gpu$k:$gp:" "gpu$k-eager:$gp:--no-cuda-graphs" "cpu$k:$cp:"; do
        name=${run%%:*} rest=${run#*:}
        rm -f "$WORK/$name.jsonl"
        train "$name" "${rest%%:*}" --epochs "$EPOCHS" --history "$WORK/$name.jsonl" --save "$WORK/$name.safetensors" \
            ${rest#*:}
    done
    for a in "gpu$k" "gpu$k-eager"; do
        [ -f "$WORK/$a.safetensors" ] && [ -f "$WORK/cpu$k.safetensors" ] || continue
        python3 "$ROOT/scripts/gpu-compare.py" "$a vs cpu$k after $EPOCHS epoch(s)" "$WORK/$a.safetensors" \
            "$WORK/cpu$k.safetensors" 5e-2 "$WORK/$a.jsonl" "$WORK/cpu$k.jsonl" 1e-2 || fail "$a vs cpu$k"
    done
    [ -f "$WORK/gpu$k.safetensors" ] && [ -f "$WORK/gpu$k-eager.safetensors" ] &&
        { python3 "$ROOT/scripts/gpu-compare.py" "gpu$k (CUDA graphs) vs gpu$k-eager" "$WORK/gpu$k.safetensors" \
              "$WORK/gpu$k-eager.safetensors" 5e-2 "$WORK/gpu$k.jsonl" "$WORK/gpu$k-eager.jsonl" 1e-2 ||
              fail "CUDA graphs vs eager on $k GPU(s)"; }
done

# ---- 5. throughput and NCCL bandwidth -----------------------------------
ips() { # history file -> images/s of its last epoch
    [ -f "$1" ] && tail -n 1 "$1" | sed -n 's/.*"images_per_sec": \([0-9.]*\).*/\1/p'
}
say "images/s, seed CNN, batch 64 per replica, last of 1 epoch (CUDA graphs / --no-cuda-graphs)"
printf '%-6s %12s %12s %10s\n' GPUs graphs eager scaling
base=""
k=1
while [ "$k" -le "$N" ]; do
    gp=$(compile gpu "$k") || { fail "compiling for $k GPUs"; k=$((k + 1)); continue; }
    rm -f "$WORK/perf$k.jsonl" "$WORK/perf$k-eager.jsonl"
    train "perf$k" "$gp" --epochs 1 --history "$WORK/perf$k.jsonl"
    train "perf$k-eager" "$gp" --epochs 1 --history "$WORK/perf$k-eager.jsonl" --no-cuda-graphs
    g=$(ips "$WORK/perf$k.jsonl") e=$(ips "$WORK/perf$k-eager.jsonl")
    [ -z "$base" ] && base=$g
    scale=$(awk -v g="${g:-0}" -v b="${base:-0}" -v k="$k" 'BEGIN { if (b > 0) printf "%.2f", g / (k * b); else print "-" }')
    printf '%-6s %12s %12s %10s\n' "$k" "${g:--}" "${e:--}" "$scale"
    k=$((k + 1))
done
[ -f "$WORK/cpu1.jsonl" ] && printf '%-6s %12s\n' "cpu:0" "$(ips "$WORK/cpu1.jsonl")"

BENCH=$(find "$B" -name bench_nccl_allreduce -type f -perm -u+x | head -n 1)
if [ "$N" -lt 2 ]; then
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
