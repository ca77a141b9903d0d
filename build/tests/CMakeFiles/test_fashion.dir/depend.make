# Empty dependencies file for test_fashion.
# This may be replaced when dependencies are built.
