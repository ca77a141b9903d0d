# libmgc (issue 16): the C API trained, evaluated and predicted through mgc.h
# alone, equal to the CLI; every error path; in a sanitized build too. Each
# test keeps a kernel cache of its own (tests/CMakeLists.txt): another process
# measuring the same shape at once could choose another kernel (other
# rounding) for the CLI's run.
add_executable(test_api ${CMAKE_CURRENT_SOURCE_DIR}/api/test_api.c)
target_link_libraries(test_api PRIVATE mgc_shared Threads::Threads)
add_test(NAME api_c COMMAND test_api ${MGC_BIN} ${MGC_SRC}/tests/api/tiny.mg)
set_tests_properties(api_c PROPERTIES TIMEOUT 300)
# cmake --install into a temporary prefix and a program built with pkg-config
# (not in a sanitized build: a plain cc program cannot load an ASan library)
if(NOT MGC_SANITIZE)
  add_test(NAME api_install COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/api/install.sh ${CMAKE_BINARY_DIR} ${MGC_SRC})
  set_tests_properties(api_install PROPERTIES TIMEOUT 300)
endif()
# the calls mgc compile, dump and inspect are made of (the CLI is a client of
# libmgc): their text and plans equal the CLI's
add_executable(test_api_tools ${CMAKE_CURRENT_SOURCE_DIR}/api/test_api_tools.c)
target_link_libraries(test_api_tools PRIVATE mgc_shared)
add_test(NAME api_tools COMMAND test_api_tools ${MGC_BIN} ${MGC_SRC}/tests/api/tiny.mg ${MGC_SRC})
set_tests_properties(api_tools PROPERTIES TIMEOUT 300)
# the calls mgc run, eval, predict and generate are made of: a job of one
# process, datasets from files, fit/evaluate/predict over them (equal to the
# CLI's files and figures), NPY outputs, mgc run's counting, traces
add_executable(test_api_jobs ${CMAKE_CURRENT_SOURCE_DIR}/api/test_api_jobs.c)
target_link_libraries(test_api_jobs PRIVATE mgc_shared)
add_test(NAME api_jobs COMMAND test_api_jobs ${MGC_BIN} ${MGC_SRC}/tests/api/tiny.mg ${MGC_SRC})
set_tests_properties(api_jobs PROPERTIES TIMEOUT 300)
