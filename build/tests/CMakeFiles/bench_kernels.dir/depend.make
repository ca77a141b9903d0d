# Empty dependencies file for bench_kernels.
# This may be replaced when dependencies are built.
