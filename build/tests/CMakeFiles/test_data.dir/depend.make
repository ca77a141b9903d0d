# Empty dependencies file for test_data.
# This may be replaced when dependencies are built.
