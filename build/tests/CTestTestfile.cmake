# CMake generated Testfile for 
# Source directory: /work/wt/kern/tests
# Build directory: /work/wt/kern/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
add_test([=[kern_kernels]=] "/work/wt/kern/build/tests/test_kernels")
set_tests_properties([=[kern_kernels]=] PROPERTIES  _BACKTRACE_TRIPLES "/work/wt/kern/tests/kern.cmake;4;add_test;/work/wt/kern/tests/kern.cmake;0;;/work/wt/kern/tests/CMakeLists.txt;7;include;/work/wt/kern/tests/CMakeLists.txt;0;")
