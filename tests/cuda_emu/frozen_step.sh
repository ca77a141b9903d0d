#!/bin/sh
# frozen_step.sh EXE DIR - issue 15: with the step word frozen at 1 (what a CUDA
# graph replaying a by-value step would train with), every step-dependent kernel
# case of the emulation must fail its per-step comparison, and the others pass.
out=$(MGC_EMU_FREEZE_STEP=1 "$1" "$2" 2>&1)
rc=$?
echo "$out" | grep -E '^cuda_k_|FAIL: cuda_k_(dropout|adam) step 2'
if [ $rc -eq 0 ]; then echo "frozen step: the emulation test passed"; exit 1; fi
for k in dropout sgd adam rmsprop adagrad nadam lamb; do
  echo "$out" | grep -Eq "^cuda_k_$k +FAILED" || { echo "frozen step: cuda_k_$k did not fail"; exit 1; }
done
for k in binary check_finite set_step sq_norm; do
  echo "$out" | grep -Eq "^cuda_k_$k +ok" || { echo "frozen step: cuda_k_$k did not pass"; exit 1; }
done
echo "frozen step: each step-dependent kernel failed, as it must"
