
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/wt/data/tests/data/test_data.c" "tests/CMakeFiles/test_data.dir/data/test_data.c.o" "gcc" "tests/CMakeFiles/test_data.dir/data/test_data.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/wt/data/build/CMakeFiles/mgc_runtime.dir/DependInfo.cmake"
  "/work/wt/data/build/CMakeFiles/mgc_ir.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
