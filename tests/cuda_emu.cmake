# cuda_emu.cmake - issue 15: every CUDA kernel of runtime/cuda run on the CPU.
# The .cu files are built by the host C++ compiler with runtime/cuda/cuda_emu.h
# (MGC_CUDA_EMU), so this runs with or without the CUDA toolkit. Twice: with
# the real grid cap (65,535 blocks) and with a cap of 3 blocks, under which
# every grid-stride loop of every kernel strides on these small inputs.
enable_language(CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)

# one .cc per .cu that includes it: the .cu files stay CUDA sources of mgc_cuda
file(GLOB MGC_CU_SRC CONFIGURE_DEPENDS ${MGC_SRC}/runtime/cuda/*.cu)
set(MGC_EMU_SRC ${MGC_SRC}/runtime/cuda/cuda_emu.cc)
foreach(cu ${MGC_CU_SRC})
  get_filename_component(stem ${cu} NAME_WE)
  set(cc ${CMAKE_CURRENT_BINARY_DIR}/cuda_emu_src/${stem}.cc)
  file(CONFIGURE OUTPUT ${cc} CONTENT "#include \"${cu}\"\n")
  list(APPEND MGC_EMU_SRC ${cc})
endforeach()

set(MGC_EMU_TEST ${MGC_SRC}/tests/cuda_emu/test_cuda_emu.cc ${MGC_SRC}/tests/cuda_emu/emu_math.cc
    ${MGC_SRC}/tests/cuda_emu/emu_train.cc ${MGC_SRC}/tests/cuda_emu/emu_step.cc)
foreach(cap 65535 3)
  set(exe test_cuda_emu_grid${cap})
  add_executable(${exe} ${MGC_EMU_TEST} ${MGC_EMU_SRC})
  target_compile_definitions(${exe} PRIVATE MGC_CUDA_EMU=1 MGC_CUDA_MAX_BLOCKS=${cap})
  target_link_libraries(${exe} PRIVATE mgc_ir)
  add_test(NAME cuda_emu_kernels_grid${cap} COMMAND ${exe} ${MGC_SRC}/runtime/cuda)
endforeach()
# issue 15: with the step word frozen at 1 (as a graph replaying a by-value step
# would train) each step-dependent kernel must fail its per-step comparison
add_test(NAME cuda_emu_frozen_step_fails
         COMMAND sh ${MGC_SRC}/tests/cuda_emu/frozen_step.sh $<TARGET_FILE:test_cuda_emu_grid3> ${MGC_SRC}/runtime/cuda)
