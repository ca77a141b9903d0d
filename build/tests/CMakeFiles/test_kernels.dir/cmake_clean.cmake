file(REMOVE_RECURSE
  "CMakeFiles/test_kernels.dir/kern/test_kernels.c.o"
  "CMakeFiles/test_kernels.dir/kern/test_kernels.c.o.d"
  "test_kernels"
  "test_kernels.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_kernels.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
