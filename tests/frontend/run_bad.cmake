# run_bad.cmake - runs the elaboration driver on one bad program and requires
# exit status 1, no stdout and exactly the expected stderr (bad/NAME.err).
#   cmake -DELAB=... -DDIR=tests/frontend -DNAME=... -P run_bad.cmake
# A first line "# args: N [B]" passes the device count and global batch.
file(STRINGS ${DIR}/bad/${NAME}.mg first LIMIT_COUNT 1)
set(extra "")
if(first MATCHES "^# args: (.*)$")
  separate_arguments(extra UNIX_COMMAND "${CMAKE_MATCH_1}")
endif()
execute_process(COMMAND ${ELAB} bad/${NAME}.mg ../../stdlib ${extra}
                WORKING_DIRECTORY ${DIR}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
file(READ ${DIR}/bad/${NAME}.err expected)
if(NOT status EQUAL 1)
  message(FATAL_ERROR "${NAME}: exit status ${status}, expected 1\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out STREQUAL "")
  message(FATAL_ERROR "${NAME}: unexpected stdout:\n${out}")
endif()
if(NOT err STREQUAL expected)
  message(FATAL_ERROR "${NAME}: stderr differs.\n--- expected\n${expected}--- got\n${err}")
endif()
