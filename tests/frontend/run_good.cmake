# run_good.cmake - elaborates a good program and requires exit 0 and that the
# summary contains every expected line (EXPECT, '|'-separated; no CMake lists,
# whose splitting is confused by the brackets in tensor types).
execute_process(COMMAND ${ELAB} ${FILE} ${STDLIB} ${ARGS}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${FILE}: exit status ${status}\n${err}${out}")
endif()
set(rest "${EXPECT}|")
while(NOT rest STREQUAL "")
  string(FIND "${rest}" "|" bar)
  string(SUBSTRING "${rest}" 0 ${bar} line)
  math(EXPR bar "${bar} + 1")
  string(SUBSTRING "${rest}" ${bar} -1 rest)
  string(FIND "${out}" "${line}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${FILE}: missing line '${line}' in:\n${out}")
  endif()
endwhile()
