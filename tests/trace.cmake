# issue 14 item 5: `mgc run --trace` / `--profile` (runtime/trace.c, the backends' trace hook).
add_executable(test_trace ${CMAKE_CURRENT_SOURCE_DIR}/trace/test_trace.c)
target_link_libraries(test_trace PRIVATE mgc_passes mgc_runtime ${CJSON_LIB})
add_test(NAME trace_events COMMAND test_trace ${MGC_SRC}/examples/mnist_cnn.mg ${MGC_SRC}/stdlib ${CMAKE_CURRENT_BINARY_DIR}/trace_events.json)
set_tests_properties(trace_events PROPERTIES TIMEOUT 120)
if(TARGET mgc)
  add_test(NAME cli_trace COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cli/trace.sh)
  set_tests_properties(cli_trace PROPERTIES
    ENVIRONMENT "MGC=$<TARGET_FILE:mgc>;SRC=${MGC_SRC};MGC_STDLIB=${MGC_SRC}/stdlib" TIMEOUT 300)
endif()
