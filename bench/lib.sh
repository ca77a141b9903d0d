# lib.sh - what the throughput benchmarks share (sourced by train.sh,
# resnet20.sh and char_gpt.sh from the project root, with $tmp set): mgc's images/s from a
# run's history, a plan's flops per step, OpenBLAS's one-core sgemm rate, the
# kernel tuner's warm-up.

# mgc_ips MODEL DEVICES STEPS [COMMAND PREFIX...] -> images/s of the training
# steps (the history's, so evaluation time is left out); the plan keeps the
# model's batch per replica. MGC_COMPILE_FLAGS adds compile options (e.g. --no-fuse).
mgc_ips() {
  local model=$1 devices=$2 steps=$3 name
  shift 3
  name=$tmp/$(basename "$model" .mg)-${devices//[:,]/_}-$RANDOM
  build/mgc compile "$model" --devices "$devices" ${MGC_COMPILE_FLAGS:-} -o "$name.mgx" 2>/dev/null
  "$@" build/mgc run "$name.mgx" --steps "$steps" --history "$name.jsonl" >/dev/null
  /usr/bin/python3 -c "import json,sys; print(round(json.loads(open(sys.argv[1]).readlines()[-1])['images_per_sec']))" "$name.jsonl"
}

# gflop_per_image MODEL -> GFLOP of the train step per training example
# (mgc inspect's matmul and convolution count of one replica's step / its batch)
gflop_per_image() {
  build/mgc compile "$1" --devices cpu:0 -o "$tmp/flops.mgx" 2>/dev/null
  build/mgc inspect "$tmp/flops.mgx" | awk '
    /^inputs/ { for (k = 1; k <= NF; k++) if ($k == "per") batch = $(k - 1) }
    /^work per replica/ { for (k = 1; k <= NF; k++) if ($k == "GFLOP,") gflop = $(k - 1) }
    END { printf "%.6f\n", gflop / batch }'
}

# warm_kernels MODEL [RUN ARGS...] -> nothing: a 3-step one-core run, so that
# the kernel tuner's first-use measurements (docs/cpu-kernels.md, cached per
# machine in ~/.cache/mgc) are made before the timed runs and not counted in
# them: a one-time cost per machine and shape, as cudnnFind's. Prints its
# seconds on stderr. Every plan the benches time (1 and 2 devices, one thread
# a device) uses the same keys.
warm_kernels() {
  local model=$1 t0=$SECONDS; shift
  build/mgc compile "$model" --devices cpu:0 -o "$tmp/warm.mgx" 2>/dev/null
  taskset -c 0 build/mgc run "$tmp/warm.mgx" --steps 3 "$@" >/dev/null
  echo "bench: kernel choices measured or read from the cache in $((SECONDS - t0)) s, before the timed runs" >&2
  echo "bench: load average $(load_average) at the start" >&2
}

# load_average -> the 1, 5 and 15-minute load averages: the benches print them
# at the start and the end, since another job on this 2-core machine moves
# every figure (a run at load 2 is not a quiet run)
load_average() { cut -d' ' -f1-3 /proc/loadavg; }

# sgemm_gflops -> OpenBLAS sgemm GFLOP/s on core 0 (bench/sgemm_peak.c)
sgemm_gflops() { OPENBLAS_NUM_THREADS=1 taskset -c 0 build/tests/sgemm_peak; }

# mgc_rounds MODEL STEPS ROUNDS -> ROUNDS lines "sgemm one two ceiling [peers...]":
# OpenBLAS's one-core rate, mgc on one core, on 2 devices and the 2-core
# ceiling, then the peers' figures (images/s) that the caller's hooks print,
# if it defines them: round_peer_one runs right after mgc's one-core run,
# round_peer_two right after its 2-device run (e.g. PyTorch on one thread,
# then DDP). This VM's speed moves by up to 30% within minutes, so a ratio of
# runs taken minutes apart measures the host; the benches report the median
# over the rounds of each ratio taken within a round, of runs taken one
# right after the other.
mgc_rounds() {
  local model=$1 steps=$2 rounds=$3 r one two peer_one peer_two
  for ((r = 0; r < rounds; r++)); do
    one=$(mgc_ips "$model" cpu:0 "$steps" taskset -c 0)
    peer_one=$(! declare -F round_peer_one >/dev/null || round_peer_one)
    two=$(mgc_ips "$model" cpu:0,cpu:1 "$steps")
    peer_two=$(! declare -F round_peer_two >/dev/null || round_peer_two)
    echo "$(sgemm_gflops) $one $two $(ceiling "$model" "$steps") $peer_one $peer_two"
  done
}

# median_columns FILE -> the median of each column of FILE's lines, over the
# rows where it is a number (a peer's run reads "skipped" or "failed"; with no
# number in a column, its first row's word)
median_columns() { /usr/bin/python3 bench/rounds.py medians "$1"; }

# ceiling MODEL STEPS -> images/s of two independent one-device runs at once,
# one per core, with no communication: what two cores allow
ceiling() {
  mgc_ips "$1" cpu:0 "$2" taskset -c 0 > "$tmp/ceiling0" & mgc_ips "$1" cpu:0 "$2" taskset -c 1 > "$tmp/ceiling1"
  wait
  echo $(( $(cat "$tmp/ceiling0") + $(cat "$tmp/ceiling1") ))
}
