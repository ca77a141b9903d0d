file(REMOVE_RECURSE
  "CMakeFiles/mgc_runtime.dir/runtime/checkpoint.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/checkpoint.c.o.d"
  "CMakeFiles/mgc_runtime.dir/runtime/data.c.o"
  "CMakeFiles/mgc_runtime.dir/runtime/data.c.o.d"
  "libmgc_runtime.a"
  "libmgc_runtime.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/mgc_runtime.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
