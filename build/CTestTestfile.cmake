# CMake generated Testfile for 
# Source directory: /work/wt/kern
# Build directory: /work/wt/kern/build
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("tests")
