# Empty dependencies file for mgc_runtime.
# This may be replaced when dependencies are built.
