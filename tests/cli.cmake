# The command line end to end (shell scripts under tests/cli/).
if(TARGET mgc)
  set(scripts compile_inspect errors train faults bad_inputs races scopes resume outputs batchnorm schedule predict_outputs examples text sparse fuse cse epilogue kernel_cache)
  # bn_epilogue drives the plans through the Python package (libmgc.so), which
  # python cannot load from a sanitized build
  if(NOT MGC_SANITIZE)
    list(APPEND scripts bn_epilogue)
  endif()
  if(MPI_C_FOUND)
    list(APPEND scripts mpi)
  endif()
  foreach(script ${scripts})
    add_test(NAME cli_${script} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/${script}.sh)
    set_tests_properties(cli_${script} PROPERTIES
      ENVIRONMENT "MGC=$<TARGET_FILE:mgc>;SRC=${MGC_SRC};MGC_STDLIB=${MGC_SRC}/stdlib;MGC_MPI=${MPI_C_FOUND}" TIMEOUT 300)
  endforeach()
endif()
