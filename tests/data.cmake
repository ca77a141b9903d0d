# data input (IDX, NPY, datasets, loader) and safetensors checkpoints
add_executable(test_data ${CMAKE_CURRENT_SOURCE_DIR}/data/test_data.c)
target_link_libraries(test_data PRIVATE mgc_runtime)
foreach(case idx_roundtrip idx_errors npy_roundtrip npy_errors dataset loader prefetch atomic)
  add_test(NAME data_${case} COMMAND test_data ${case})
endforeach()

add_executable(test_checkpoint ${CMAKE_CURRENT_SOURCE_DIR}/data/test_checkpoint.c)
target_link_libraries(test_checkpoint PRIVATE mgc_runtime)
foreach(case roundtrip deterministic atomic malformed)
  add_test(NAME checkpoint_${case} COMMAND test_checkpoint ${case})
endforeach()

# a file written by mgc read back by PyTorch (json + struct + torch.frombuffer)
# (Debian's python3-torch lives under /usr/bin's python3, which may be shadowed by another python3 on PATH)
find_program(MGC_DATA_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(MGC_DATA_PYTHON NAMES python3)
if(MGC_DATA_PYTHON)
  add_test(NAME checkpoint_torch_reads
           COMMAND sh -c "$<TARGET_FILE:test_checkpoint> write ck_torch.safetensors && ${MGC_DATA_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/data/check_safetensors.py ck_torch.safetensors")
  set_tests_properties(checkpoint_torch_reads PROPERTIES WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}
                       SKIP_RETURN_CODE 77)
endif()

add_executable(test_fashion ${CMAKE_CURRENT_SOURCE_DIR}/data/test_fashion.c)
target_link_libraries(test_fashion PRIVATE mgc_runtime)
add_test(NAME data_fashion_mnist COMMAND test_fashion)
set_tests_properties(data_fashion_mnist PROPERTIES SKIP_RETURN_CODE 77)

# issue 13: text data (--data text:PATH): windows, next-byte labels, the validation tail, directories, errors
add_executable(test_text ${CMAKE_CURRENT_SOURCE_DIR}/data/test_text.c)
target_link_libraries(test_text PRIVATE mgc_runtime)
foreach(case cut directory errors)
  add_test(NAME data_text_${case} COMMAND test_text ${case})
endforeach()
