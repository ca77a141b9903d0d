# CPU kernels: every op against a double-precision reference; kernel bench.
add_executable(test_kernels ${MGC_SRC}/tests/kern/test_kernels.c)
target_link_libraries(test_kernels PRIVATE mgc_runtime)
add_test(NAME kern_kernels COMMAND test_kernels)
# test_kernels_random.c: the thin GEMM and conv2d_relu_pool2 (and its filter gradient) on a few hundred
# random shapes (fixed seed) against a double reference, exactly on exact inputs; twice, bit for bit
add_executable(test_kernels_random ${MGC_SRC}/tests/kern/test_kernels_random.c)
target_link_libraries(test_kernels_random PRIVATE mgc_runtime)
add_test(NAME kern_random COMMAND test_kernels_random)

# bench/kernels.c: ms per kernel of the mnist CNN step (run by hand, not a test)
add_executable(bench_kernels ${MGC_SRC}/bench/kernels.c)
target_link_libraries(bench_kernels PRIVATE mgc_runtime)
# bench/sgemm_peak.c: OpenBLAS sgemm GFLOP/s on one thread (bench/train.sh)
add_executable(sgemm_peak ${MGC_SRC}/bench/sgemm_peak.c)
target_link_libraries(sgemm_peak PRIVATE mgc_runtime)

# initializers (issue 12): statistics against Keras' formulas
add_executable(test_init ${MGC_SRC}/tests/kern/test_init.c)
target_link_libraries(test_init PRIVATE mgc_runtime)
add_test(NAME kern_init COMMAND test_init)
# every optimizer for several steps against Keras 3's formulas (schedule, weight decay, clipnorm)
add_executable(test_optim ${MGC_SRC}/tests/kern/test_optim.c)
target_link_libraries(test_optim PRIVATE mgc_runtime)
add_test(NAME kern_optim COMMAND test_optim)
# issue 14: kernel choice by measurement (cache, corrupt cache, MGC_KERNELS) and the default threads
add_executable(test_tune ${MGC_SRC}/tests/kern/test_tune.c)
target_link_libraries(test_tune PRIVATE mgc_runtime)
add_test(NAME kern_tune COMMAND test_tune)

# issue 14: the fused kernel against the unfused kernels, bit for bit (random programs)
add_executable(test_fused ${MGC_SRC}/tests/kern/test_fused.c)
target_link_libraries(test_fused PRIVATE mgc_runtime)
add_test(NAME kern_fused COMMAND test_fused)

# CPU_CLONES loops without FMA contraction in any clone (AVX-512 and AVX2 give the same bits)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  add_test(NAME kern_clones_no_fma COMMAND ${MGC_SRC}/tests/kern/clones_no_fma.sh $<TARGET_FILE:mgc_runtime>)
endif()

# issue 14 (speed): mg_expf, mg_erf_v, gelu against libm in double; the hoisted dropout key, bit for bit
add_executable(test_vecmath ${MGC_SRC}/tests/kern/test_vecmath.c)
target_link_libraries(test_vecmath PRIVATE mgc_runtime)
add_test(NAME kern_vecmath COMMAND test_vecmath)
# bench/gpt_kernels.c: ms (thread CPU time) per kernel of the char_gpt step (run by hand, not a test)
add_executable(bench_gpt_kernels ${MGC_SRC}/bench/gpt_kernels.c)
target_link_libraries(bench_gpt_kernels PRIVATE mgc_runtime)
