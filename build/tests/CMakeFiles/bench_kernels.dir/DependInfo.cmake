
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/wt/kern/bench/kernels.c" "tests/CMakeFiles/bench_kernels.dir/__/bench/kernels.c.o" "gcc" "tests/CMakeFiles/bench_kernels.dir/__/bench/kernels.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/wt/kern/build/CMakeFiles/mgc_runtime.dir/DependInfo.cmake"
  "/work/wt/kern/build/CMakeFiles/mgc_ir.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
