# cuda.cmake - CUDA backend tests: built when the backend is (runtime/cuda/cuda.cmake).
# GPU tests exit 77 ("SKIP: no CUDA device") where there is no GPU.
if(TARGET mgc_cuda)
  add_executable(test_cuda_init ${MGC_SRC}/tests/cuda/test_cuda_init.c)
  target_link_libraries(test_cuda_init PRIVATE mgc_runtime)
  add_test(NAME cuda_init_fails_cleanly COMMAND test_cuda_init)

  # the backend must really be linked against cuBLAS, cuDNN and NCCL
  add_test(NAME cuda_links_cublas_cudnn_nccl
           COMMAND sh -c "ldd \"$1\" | grep -q libcublas && ldd \"$1\" | grep -q libcudnn && ldd \"$1\" | grep -q libnccl"
                   sh $<TARGET_FILE:test_cuda_init>)

  # each kernel against the CPU kernel, when the CPU kernels are in the tree
  file(GLOB MGC_CPU_KERNEL_SRC ${MGC_SRC}/runtime/cpu/*.c)
  if(MGC_CPU_KERNEL_SRC)
    add_executable(test_cuda_ops ${MGC_SRC}/tests/cuda/test_cuda_ops.c)
    target_link_libraries(test_cuda_ops PRIVATE mgc_runtime)
    add_test(NAME cuda_ops_match_cpu COMMAND test_cuda_ops)
    set_tests_properties(cuda_ops_match_cpu PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endif()
