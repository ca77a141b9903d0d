file(REMOVE_RECURSE
  "CMakeFiles/mgc_ir.dir/ir/diag.c.o"
  "CMakeFiles/mgc_ir.dir/ir/diag.c.o.d"
  "CMakeFiles/mgc_ir.dir/ir/ir.c.o"
  "CMakeFiles/mgc_ir.dir/ir/ir.c.o.d"
  "libmgc_ir.a"
  "libmgc_ir.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/mgc_ir.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
