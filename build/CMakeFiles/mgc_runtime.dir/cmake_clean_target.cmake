file(REMOVE_RECURSE
  "libmgc_runtime.a"
)
