# Preemption-safe training (issue 11): periodic checkpoints in --checkpoint-dir
# (the newest --keep kept), SIGTERM finishes the step, writes a checkpoint and
# exits 75, and the same command resumes from the newest checkpoint to the
# same bytes as an uninterrupted run: 2 devices, mid-epoch and at an epoch
# boundary, and under mpirun -np 2. A killed writer's temporary file is not a
# checkpoint; a run with nothing left to do says so.
source "$SRC/tests/cli/lib.sh"

"$PY" - "$tmp" <<'PY'
import sys, numpy as np
r = np.random.default_rng(3)
np.save(sys.argv[1] + "/x.npy", r.random((512, 28, 28, 1), dtype=np.float32))
np.save(sys.argv[1] + "/y.npy", r.integers(0, 10, 512).astype(np.int32))
PY
data=(--input "image=$tmp/x.npy" --input "label=$tmp/y.npy")
"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0,cpu:1 --global-batch 64 -o "$tmp/m2.mgx" 2>/dev/null
run() { "$MGC" run "$tmp/m2.mgx" "${data[@]}" "$@"; }  # 8 steps an epoch

# uninterrupted: 40 epochs, a checkpoint every 7 steps and at the end, the newest 3 kept
run --epochs 40 --checkpoint-dir "$tmp/a" --save-every 7steps > /dev/null
[ "$(ls "$tmp/a")" = "$(printf 'step-308.safetensors\nstep-315.safetensors\nstep-320.safetensors')" ] ||
  fail "--keep 3 --save-every 7steps kept: $(ls "$tmp/a")"

# SIGTERM once a checkpoint exists: the step finishes, a checkpoint is written, status 75
"$MGC" run "$tmp/m2.mgx" "${data[@]}" --epochs 40 --checkpoint-dir "$tmp/b" --save-every 7steps > "$tmp/log" 2>&1 &
pid=$!  # mgc itself, not a subshell
wait_for "$tmp/b/step-14.safetensors"
kill -TERM "$pid"
status=0; wait "$pid" || status=$?
[ "$status" = 75 ] || fail "SIGTERM: exit status $status, expected 75: $(cat "$tmp/log")"
stopped=$(sed -n 's/^mgc: stopped after step \([0-9]*\) (SIGTERM); checkpoint in .*, run again to resume$/\1/p' "$tmp/log")
[ -n "$stopped" ] || fail "no stop message: $(cat "$tmp/log")"
[ -e "$tmp/b/step-$stopped.safetensors" ] || fail "no checkpoint of step $stopped: $(ls "$tmp/b")"
# a writer killed mid-write leaves a temporary file: it is not a checkpoint
printf 'half a checkpoint' > "$tmp/b/.mgc-tmp-Ab12Cd"
run --epochs 40 --checkpoint-dir "$tmp/b" --save-every 7steps > /dev/null 2> "$tmp/log2"
expect_line "$tmp/log2" "^mgc: resuming from $tmp/b/step-$stopped.safetensors \\(step $stopped\\)$"
cmp "$tmp/a/step-320.safetensors" "$tmp/b/step-320.safetensors" || fail "the resumed run ends with other bytes"
[ ! -e "$tmp/b/.mgc-tmp-Ab12Cd" ] || fail "the stray temporary file was left behind"

# a second signal, of either kind, ends the process at once (no checkpoint, no status 75)
"$MGC" run "$tmp/m2.mgx" "${data[@]}" --epochs 400 --checkpoint-dir "$tmp/s" > /dev/null 2>&1 &
pid=$!
wait_for "$tmp/s/step-8.safetensors"
kill -STOP "$pid"; kill -INT "$pid"; kill -TERM "$pid"; kill -CONT "$pid"
status=0; wait "$pid" || status=$?
[ "$status" = 130 ] || [ "$status" = 143 ] || fail "two signals: status $status, expected death by the signal"

# kill -9 while checkpointing every step: the newest complete checkpoint resumes to the same bytes
"$MGC" run "$tmp/m2.mgx" "${data[@]}" --epochs 40 --checkpoint-dir "$tmp/k" --save-every 1steps > /dev/null 2>&1 &
pid=$!
wait_for "$tmp/k/step-30.safetensors"
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
run --epochs 40 --checkpoint-dir "$tmp/k" --save-every 7steps > /dev/null 2>&1 || fail "resuming after kill -9"
cmp "$tmp/a/step-320.safetensors" "$tmp/k/step-320.safetensors" || fail "resumed after kill -9, other bytes"
[ -z "$(ls -A "$tmp/k" | grep '^\.mgc-tmp-')" ] || fail "a temporary file survived the next run"

# at an epoch boundary: 2 epochs, then resume to 40
run --epochs 2 --checkpoint-dir "$tmp/c" > /dev/null
[ "$(ls "$tmp/c")" = "$(printf 'step-8.safetensors\nstep-16.safetensors' | sort)" ] || fail "epoch checkpoints: $(ls "$tmp/c")"
run --epochs 40 --checkpoint-dir "$tmp/c" --save-every 7steps > /dev/null 2>&1
cmp "$tmp/a/step-320.safetensors" "$tmp/c/step-320.safetensors" || fail "resumed at an epoch boundary, other bytes"

# nothing left to do
run --epochs 40 --checkpoint-dir "$tmp/c" > "$tmp/out" 2>/dev/null || fail "a finished run failed"
expect_line "$tmp/out" "^nothing to train: the checkpoint is already at step 320 of 320$"

# bad --save-every
expect_fail "mgc: --save-every: '3hours' is not N, Nsteps or Nepochs with N >= 1" run --save-every 3hours

# under mpirun: SIGTERM to rank 1 stops both workers after the same step; rank 0 writes
if [ -n "${MGC_MPI:-}" ]; then
  mpi="mpirun --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x MGC_STDLIB"
  "$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0 --global-batch 64 -o "$tmp/m1.mgx" 2>/dev/null
  mrun() { $mpi -np 2 "$MGC" run "$tmp/m1.mgx" "${data[@]}" --epochs 40 --save-every 7steps "$@"; }
  # one process measures the kernels first: two workers measuring at once may
  # each choose another GEMM, and the runs compared below would differ
  "$MGC" run "$tmp/m1.mgx" "${data[@]}" --steps 1 > /dev/null
  mrun --checkpoint-dir "$tmp/d" > /dev/null 2>&1 || fail "mpirun, uninterrupted"
  mrun --checkpoint-dir "$tmp/e" > "$tmp/log3" 2>&1 &
  job=$!
  wait_for "$tmp/e/step-14.safetensors"
  for p in $(pgrep -f "mgc run $tmp/m1.mgx"); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && kill -TERM "$p"
  done
  status=0; wait "$job" || status=$?
  [ "$status" = 75 ] || fail "mpirun, SIGTERM to rank 1: status $status: $(cat "$tmp/log3")"
  mrun --checkpoint-dir "$tmp/e" > /dev/null 2>&1 || fail "mpirun, resumed"
  cmp "$tmp/d/step-320.safetensors" "$tmp/e/step-320.safetensors" || fail "mpirun: the resumed run ends with other bytes"
fi
echo ok
