# gpucheck.cmake - scripts/gpu-check.sh and the NCCL all-reduce bench (issue 15).

# Without a GPU the script says so and exits 0 (on a GPU machine this test is
# skipped: the script itself is the GPU check there, and builds and trains).
add_test(NAME gpu_check_without_gpu
         COMMAND sh -c "if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then exit 77; fi
out=$(\"$1\" 2>&1); rc=$?; printf '%s\\n' \"$out\"
[ $rc -eq 0 ] && printf '%s\\n' \"$out\" | grep -q '^gpu-check: no GPU here (.*): nothing to check$'"
                 sh ${MGC_SRC}/scripts/gpu-check.sh)
set_tests_properties(gpu_check_without_gpu PROPERTIES SKIP_RETURN_CODE 77)

if(TARGET mgc_cuda)
  add_executable(bench_nccl_allreduce ${MGC_SRC}/bench/nccl_allreduce.c)
  target_link_libraries(bench_nccl_allreduce PRIVATE mgc_cuda)
  # one small size on a GPU machine; exits 77 (skipped) without a GPU
  add_test(NAME nccl_allreduce_bench_runs COMMAND bench_nccl_allreduce 1 1)
  set_tests_properties(nccl_allreduce_bench_runs PROPERTIES SKIP_RETURN_CODE 77)
endif()
