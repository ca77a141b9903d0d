file(REMOVE_RECURSE
  "CMakeFiles/bench_kernels.dir/__/bench/kernels.c.o"
  "CMakeFiles/bench_kernels.dir/__/bench/kernels.c.o.d"
  "bench_kernels"
  "bench_kernels.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/bench_kernels.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
