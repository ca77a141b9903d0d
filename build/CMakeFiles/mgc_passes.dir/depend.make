# Empty dependencies file for mgc_passes.
# This may be replaced when dependencies are built.
