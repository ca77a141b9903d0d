# libmgc (issue 16): the C API trained, evaluated and predicted through mgc.h
# alone, equal to the CLI; every error path; in a sanitized build too.
add_executable(test_api ${CMAKE_CURRENT_SOURCE_DIR}/api/test_api.c)
target_link_libraries(test_api PRIVATE mgc_shared)
add_test(NAME api_c COMMAND test_api ${MGC_BIN} ${MGC_SRC}/tests/api/tiny.mg)
set_tests_properties(api_c PROPERTIES TIMEOUT 300)
