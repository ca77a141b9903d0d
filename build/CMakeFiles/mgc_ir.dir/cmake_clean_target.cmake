file(REMOVE_RECURSE
  "libmgc_ir.a"
)
