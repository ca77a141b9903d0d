# data input (IDX, NPY, datasets, loader) and safetensors checkpoints
add_executable(test_data ${CMAKE_CURRENT_SOURCE_DIR}/data/test_data.c)
target_link_libraries(test_data PRIVATE mgc_runtime)
foreach(case idx_roundtrip idx_errors npy_roundtrip npy_errors dataset loader prefetch atomic)
  add_test(NAME data_${case} COMMAND test_data ${case})
endforeach()
