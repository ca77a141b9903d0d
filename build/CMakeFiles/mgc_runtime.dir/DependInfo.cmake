
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/wt/kern/runtime/cpu/dnnl.c" "CMakeFiles/mgc_runtime.dir/runtime/cpu/dnnl.c.o" "gcc" "CMakeFiles/mgc_runtime.dir/runtime/cpu/dnnl.c.o.d"
  "/work/wt/kern/runtime/cpu/elementwise.c" "CMakeFiles/mgc_runtime.dir/runtime/cpu/elementwise.c.o" "gcc" "CMakeFiles/mgc_runtime.dir/runtime/cpu/elementwise.c.o.d"
  "/work/wt/kern/runtime/cpu/kernels.c" "CMakeFiles/mgc_runtime.dir/runtime/cpu/kernels.c.o" "gcc" "CMakeFiles/mgc_runtime.dir/runtime/cpu/kernels.c.o.d"
  "/work/wt/kern/runtime/cpu/optim.c" "CMakeFiles/mgc_runtime.dir/runtime/cpu/optim.c.o" "gcc" "CMakeFiles/mgc_runtime.dir/runtime/cpu/optim.c.o.d"
  "/work/wt/kern/runtime/cpu/reduce.c" "CMakeFiles/mgc_runtime.dir/runtime/cpu/reduce.c.o" "gcc" "CMakeFiles/mgc_runtime.dir/runtime/cpu/reduce.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/wt/kern/build/CMakeFiles/mgc_ir.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
