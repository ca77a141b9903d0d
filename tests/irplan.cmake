# ir/: verifier, text form, Graphviz, .mgx plans; passes/shapes.c.
# (tests/fuzz/fuzz_mgx.c and its corpus corpus_mgx/ are built and replayed by tests/fuzz.cmake.)
add_library(irplan_fixture STATIC ${MGC_SRC}/tests/irplan/fixture.c)
target_link_libraries(irplan_fixture PUBLIC mgc_ir)
foreach(t plan verify text races devices scale)
  add_executable(test_irplan_${t} ${MGC_SRC}/tests/irplan/test_${t}.c)
  target_link_libraries(test_irplan_${t} PRIVATE irplan_fixture mgc_passes mgc_ir)
endforeach()

# In the libFuzzer build the plan reader skips CRC checks so that mutations
# reach the section decoders and the verifier; the CRC tests do not apply there.
if(MGC_LIBFUZZER)
  target_compile_definitions(mgc_ir PRIVATE FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION=1)
else()
  add_test(NAME irplan_plan COMMAND test_irplan_plan)
endif()
add_test(NAME irplan_verify COMMAND test_irplan_verify)
add_test(NAME irplan_devices COMMAND test_irplan_devices)
# every example and test model, for 1, 2 and 4 devices and four bucket sizes
file(GLOB RACE_MODELS ${MGC_SRC}/examples/*.mg ${MGC_SRC}/tests/frontend/good/*.mg ${MGC_SRC}/tests/train/*.mg
     ${MGC_SRC}/tests/cli/*.mg)
add_test(NAME irplan_races COMMAND test_irplan_races ${MGC_SRC}/stdlib ${RACE_MODELS})
add_test(NAME irplan_text COMMAND test_irplan_text)
# compile time linear in the graph (issue 14): an unrolled lstm at two sizes
add_test(NAME irplan_scale COMMAND test_irplan_scale ${MGC_SRC}/stdlib ${CMAKE_CURRENT_BINARY_DIR}/scale.mgx)
# alone: a neighbour test on the other core slows the larger graph more than
# the smaller one (CI once measured 3.03 beside one)
set_tests_properties(irplan_scale PROPERTIES RUN_SERIAL TRUE)
