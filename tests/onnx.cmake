# The ONNX round trip (issue 16): mgc export and plan.export_onnx against mgc
# predict on the seed CNN, ResNet-20 and char_gpt, onnxruntime's outputs within
# 1e-5; export's errors. Python with onnx and onnxruntime (BUILD/venv, as
# scripts/setup.sh makes it, else python3); skipped (77) with a message where
# onnxruntime is not importable. Not in a sanitized build: python cannot
# dlopen an ASan-instrumented libmgc.so.
if(NOT MGC_SANITIZE)
  add_test(NAME onnx_export COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/onnx/run.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(onnx_export PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "MGC_SRC=${MGC_SRC};MGC_BIN=$<TARGET_FILE:mgc>;MGC_LIBRARY=$<TARGET_FILE:mgc_shared>;MGC_STDLIB=${MGC_SRC}/stdlib")
endif()
# export's command-line errors (no onnxruntime needed)
add_test(NAME onnx_errors COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/onnx/errors.sh)
set_tests_properties(onnx_errors PROPERTIES TIMEOUT 120
                     ENVIRONMENT "MGC=$<TARGET_FILE:mgc>;SRC=${MGC_SRC};MGC_STDLIB=${MGC_SRC}/stdlib")
