# fuzz.cmake - fuzz targets tests/fuzz/fuzz_X.c, their seed corpora corpus_X/
# and the inputs that once crashed them, crashes/X/ (see docs/hardening.md).
#  * Always: fuzz_replay_X = fuzz_X.c + replay.c, and a CTest test replaying
#    corpus_X/ and crashes/X/, so every crash ever found stays a regression test.
#  * MGC_FUZZ=ON with clang: also the libFuzzer executable fuzz_X, and the
#    project libraries compiled with coverage, ASan and UBSan (scripts/fuzz.sh
#    does this in build-fuzz/).
option(MGC_FUZZ "Build libFuzzer targets (clang only; use scripts/fuzz.sh)" OFF)
set(FUZZ_DIR ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
set(FUZZ_LIBS mgc_passes mgc_runtime)

set(MGC_LIBFUZZER OFF)
if(MGC_FUZZ)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(MGC_LIBFUZZER ON)
  else()
    message(WARNING "MGC_FUZZ needs clang (CC=clang); building only the replay tests")
  endif()
endif()

# Coverage for the fuzzer and sanitizers on everything the targets link.
if(MGC_LIBFUZZER)
  set(FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=all)
  foreach(lib mgc_ir mgc_frontend mgc_passes mgc_runtime mgc_cuda)
    if(NOT TARGET ${lib})
      continue()
    endif()
    get_target_property(type ${lib} TYPE)
    if(type STREQUAL "INTERFACE_LIBRARY")
      continue()
    endif()
    target_compile_options(${lib} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link;${FUZZ_SAN};-fno-omit-frame-pointer>")
    target_link_options(${lib} INTERFACE -fsanitize=address,undefined)
  endforeach()
endif()

# Harnesses keep a checksum in a volatile sink so the reads are not optimized
# away; clang (not gcc) calls that "set but not used".
set(FUZZ_HARNESS_OPTS "")
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  set(FUZZ_HARNESS_OPTS -Wno-unused-but-set-variable)
endif()

file(GLOB FUZZ_TARGETS CONFIGURE_DEPENDS ${FUZZ_DIR}/fuzz_*.c)
foreach(src ${FUZZ_TARGETS})
  get_filename_component(name ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" target ${name})
  add_executable(fuzz_replay_${target} ${src} ${FUZZ_DIR}/replay.c)
  target_link_libraries(fuzz_replay_${target} PRIVATE ${FUZZ_LIBS})
  target_compile_definitions(fuzz_replay_${target} PRIVATE MGC_FUZZ_STDLIB="${MGC_SRC}/stdlib")
  target_compile_options(fuzz_replay_${target} PRIVATE ${FUZZ_HARNESS_OPTS})
  add_test(NAME fuzz_replay_${target}
           COMMAND fuzz_replay_${target} ${FUZZ_DIR}/corpus_${target} ${FUZZ_DIR}/crashes/${target})
  set_tests_properties(fuzz_replay_${target} PROPERTIES TIMEOUT 120)

  if(MGC_LIBFUZZER)
    add_executable(fuzz_${target} ${src})
    target_link_libraries(fuzz_${target} PRIVATE ${FUZZ_LIBS})
    target_compile_definitions(fuzz_${target} PRIVATE MGC_FUZZ_STDLIB="${MGC_SRC}/stdlib")
    target_compile_options(fuzz_${target} PRIVATE -fsanitize=fuzzer ${FUZZ_SAN} -fno-omit-frame-pointer ${FUZZ_HARNESS_OPTS})
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer ${FUZZ_SAN})
    set_target_properties(fuzz_${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  endif()
endforeach()
