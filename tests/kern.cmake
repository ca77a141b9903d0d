# CPU kernels: every op against a double-precision reference; kernel bench.
add_executable(test_kernels ${MGC_SRC}/tests/kern/test_kernels.c)
target_link_libraries(test_kernels PRIVATE mgc_runtime)
add_test(NAME kern_kernels COMMAND test_kernels)
