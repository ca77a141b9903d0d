# cuda.cmake - the CUDA backend (runtime/cuda), built whenever the CUDA toolkit,
# cuDNN and NCCL are found; linked into mgc_runtime so every consumer gets it.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  find_library(MGC_CUDNN_LIB cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_library(MGC_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  find_path(MGC_CUDNN_INCLUDE cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_path(MGC_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
endif()

if(NOT CUDAToolkit_FOUND OR NOT MGC_CUDNN_LIB OR NOT MGC_NCCL_LIB
   OR NOT MGC_CUDNN_INCLUDE OR NOT MGC_NCCL_INCLUDE)
  message(STATUS "CUDA backend: not built (toolkit: ${CUDAToolkit_FOUND}, cudnn: ${MGC_CUDNN_LIB}, nccl: ${MGC_NCCL_LIB})")
  return()
endif()

if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
# Issue 15: -DCMAKE_CUDA_ARCHITECTURES=... is honoured (the target takes it,
# nothing below overrides it); without it, SASS for sm_80 and sm_90 plus the
# PTX of compute_90, which the driver JIT-compiles on newer GPUs.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "80-real;90" CACHE STRING "CUDA architectures of the mgc_cuda kernels" FORCE)
endif()
enable_language(CUDA)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
# One CUDA runtime on the link line: the shared libcudart of CUDA::cudart
# (CMake's default for CUDA targets would add cudart_static beside it).
set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
# Consumers of mgc_runtime keep linking with the C compiler: without separable
# compilation no device link step is needed, and gcc-only link flags
# (-fsanitize with MGC_SANITIZE) keep working.
set(CMAKE_CUDA_LINKER_PREFERENCE_PROPAGATES OFF)

file(GLOB CUDA_SRC CONFIGURE_DEPENDS runtime/cuda/*.cu runtime/cuda/*.c)
add_library(mgc_cuda STATIC ${CUDA_SRC})
set_target_properties(mgc_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON CUDA_RUNTIME_LIBRARY Shared)
# The directory's -Wall -Wextra -Werror are gcc flags nvcc does not take:
# keep them for the C files, hand them to the host compiler for .cu files;
# nvcc's own warnings (front end, device code) are errors too.
set_property(TARGET mgc_cuda PROPERTY COMPILE_OPTIONS
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Werror>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Werror --Werror=all-warnings -lineinfo>)
target_include_directories(mgc_cuda PUBLIC ${CUDAToolkit_INCLUDE_DIRS} ${MGC_CUDNN_INCLUDE} ${MGC_NCCL_INCLUDE})
target_link_libraries(mgc_cuda PUBLIC mgc_ir CUDA::cudart CUDA::cublas CUDA::cublasLt ${MGC_CUDNN_LIB} ${MGC_NCCL_LIB} Threads::Threads m)

# mgc_cuda depends only on mgc_ir, so linking it below mgc_runtime makes no cycle.
target_link_libraries(mgc_runtime PUBLIC mgc_cuda)
target_compile_definitions(mgc_runtime PUBLIC MGC_HAVE_CUDA=1)
message(STATUS "CUDA backend: built (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, sm ${CMAKE_CUDA_ARCHITECTURES}, ${MGC_CUDNN_LIB}, ${MGC_NCCL_LIB})")
