# CMake generated Testfile for 
# Source directory: /work/wt/kern/tests
# Build directory: /work/wt/kern/build/tests
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
