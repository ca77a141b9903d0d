file(REMOVE_RECURSE
  "libmgc_passes.a"
)
