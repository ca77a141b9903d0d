# CMake generated Testfile for 
# Source directory: /work/wt/data
# Build directory: /work/wt/data/build
# 
# This file includes the relevant testing commands required for 
# testing this directory and lists subdirectories to be tested as well.
subdirs("tests")
