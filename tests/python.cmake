# The Python package (python/, issue 16): pytest against the CLI, and
# `pip install ./python` in a fresh venv. Debian's python3 (numpy, pytest);
# skipped (77) with a message when they are absent. Not in a sanitized build:
# python cannot dlopen an ASan-instrumented libmgc.so.
if(NOT MGC_SANITIZE)
  set(MGC_PY /usr/bin/python3)
  add_test(NAME python_api
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python/run_pytest.sh ${MGC_PY} ${MGC_SRC})
  set_tests_properties(python_api PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "MGC_BIN=$<TARGET_FILE:mgc>;MGC_LIBRARY=$<TARGET_FILE:mgc_shared>")
  add_test(NAME python_pip_install
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python/pip_install.sh ${MGC_PY} ${MGC_SRC} ${CMAKE_BINARY_DIR})
  set_tests_properties(python_pip_install PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
