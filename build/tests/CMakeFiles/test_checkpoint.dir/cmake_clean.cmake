file(REMOVE_RECURSE
  "CMakeFiles/test_checkpoint.dir/data/test_checkpoint.c.o"
  "CMakeFiles/test_checkpoint.dir/data/test_checkpoint.c.o.d"
  "test_checkpoint"
  "test_checkpoint.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_checkpoint.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
