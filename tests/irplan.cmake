# ir/: verifier, text form, Graphviz, .mgx plans; passes/shapes.c
add_library(irplan_fixture STATIC ${MGC_SRC}/tests/irplan/fixture.c)
target_link_libraries(irplan_fixture PUBLIC mgc_ir)
foreach(t plan verify text)
  add_executable(test_irplan_${t} ${MGC_SRC}/tests/irplan/test_${t}.c)
  target_link_libraries(test_irplan_${t} PRIVATE irplan_fixture mgc_passes mgc_ir)
  add_test(NAME irplan_${t} COMMAND test_irplan_${t})
endforeach()

# libFuzzer target for the plan reader (clang): cmake -DMGC_FUZZ=ON -DCMAKE_C_COMPILER=clang
option(MGC_FUZZ "Build libFuzzer targets (needs clang)" OFF)
if(MGC_FUZZ AND NOT TARGET fuzz_mgx)
  # the ir sources are compiled into the target so that they carry coverage and sanitizers
  file(GLOB FUZZ_IR_SRC ${MGC_SRC}/ir/*.c)
  add_executable(fuzz_mgx ${MGC_SRC}/tests/fuzz/fuzz_mgx.c ${FUZZ_IR_SRC})
  target_compile_options(fuzz_mgx PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
  target_link_options(fuzz_mgx PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_mgx PRIVATE ZLIB::ZLIB m)
endif()
# Every seed plan (and every crash ever found, kept in the corpus) is replayed by a normal test.
file(GLOB MGX_SEEDS ${MGC_SRC}/tests/fuzz/corpus_mgx/*)
add_executable(test_irplan_replay ${MGC_SRC}/tests/irplan/replay_mgx.c)
target_link_libraries(test_irplan_replay PRIVATE mgc_ir)
add_test(NAME irplan_replay_corpus COMMAND test_irplan_replay ${MGX_SEEDS})
