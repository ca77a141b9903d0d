file(REMOVE_RECURSE
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/dnnl.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/dnnl.c.o.d"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/elementwise.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/elementwise.c.o.d"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/kernels.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/kernels.c.o.d"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/optim.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/optim.c.o.d"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/reduce.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/cpu/reduce.c.o.d"
  "libmgc_runtime.a"
  "libmgc_runtime.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/mgc_runtime.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
