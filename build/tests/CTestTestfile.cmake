# CMake generated Testfile for 
# Source directory: /work/wt/data/tests
# Build directory: /work/wt/data/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[data_idx_roundtrip]=] "/work/wt/data/build/tests/test_data" "idx_roundtrip")
set_tests_properties([=[data_idx_roundtrip]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_idx_errors]=] "/work/wt/data/build/tests/test_data" "idx_errors")
set_tests_properties([=[data_idx_errors]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_npy_roundtrip]=] "/work/wt/data/build/tests/test_data" "npy_roundtrip")
set_tests_properties([=[data_npy_roundtrip]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_npy_errors]=] "/work/wt/data/build/tests/test_data" "npy_errors")
set_tests_properties([=[data_npy_errors]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_dataset]=] "/work/wt/data/build/tests/test_data" "dataset")
set_tests_properties([=[data_dataset]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_loader]=] "/work/wt/data/build/tests/test_data" "loader")
set_tests_properties([=[data_loader]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_prefetch]=] "/work/wt/data/build/tests/test_data" "prefetch")
set_tests_properties([=[data_prefetch]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_atomic]=] "/work/wt/data/build/tests/test_data" "atomic")
set_tests_properties([=[data_atomic]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;5;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[checkpoint_roundtrip]=] "/work/wt/data/build/tests/test_checkpoint" "roundtrip")
set_tests_properties([=[checkpoint_roundtrip]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;11;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[checkpoint_deterministic]=] "/work/wt/data/build/tests/test_checkpoint" "deterministic")
set_tests_properties([=[checkpoint_deterministic]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;11;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[checkpoint_atomic]=] "/work/wt/data/build/tests/test_checkpoint" "atomic")
set_tests_properties([=[checkpoint_atomic]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;11;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[checkpoint_malformed]=] "/work/wt/data/build/tests/test_checkpoint" "malformed")
set_tests_properties([=[checkpoint_malformed]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;11;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[checkpoint_torch_reads]=] "sh" "-c" "/work/wt/data/build/tests/test_checkpoint write ck_torch.safetensors && /usr/bin/python3 /work/wt/data/tests/data/check_safetensors.py ck_torch.safetensors")
set_tests_properties([=[checkpoint_torch_reads]=] PROPERTIES  SKIP_RETURN_CODE "77" WORKING_DIRECTORY "/work/wt/data/build/tests" _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;19;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
add_test([=[data_fashion_mnist]=] "/work/wt/data/build/tests/test_fashion")
set_tests_properties([=[data_fashion_mnist]=] PROPERTIES  SKIP_RETURN_CODE "77" _BACKTRACE_TRIPLES "/work/wt/data/tests/data.cmake;27;add_test;/work/wt/data/tests/data.cmake;0;;/work/wt/data/tests/CMakeLists.txt;7;include;/work/wt/data/tests/CMakeLists.txt;0;")
