file(REMOVE_RECURSE
  "CMakeFiles/test_fashion.dir/data/test_fashion.c.o"
  "CMakeFiles/test_fashion.dir/data/test_fashion.c.o.d"
  "test_fashion"
  "test_fashion.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/test_fashion.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
