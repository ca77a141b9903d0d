# Empty dependencies file for test_kernels.
# This may be replaced when dependencies are built.
