# frontend: lexer, parser and elaboration (examples, stdlib, bad programs)
add_executable(test_elab ${CMAKE_CURRENT_SOURCE_DIR}/frontend/elab_main.c)
target_link_libraries(test_elab PRIVATE mgc_passes)
