# Empty dependencies file for mgc_ir.
# This may be replaced when dependencies are built.
