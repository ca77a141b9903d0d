file(REMOVE_RECURSE
  "libmgc_passes.a"
  "libmgc_passes.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang )
  include(CMakeFiles/mgc_passes.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
