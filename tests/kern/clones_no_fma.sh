#!/usr/bin/env bash
# clones_no_fma.sh LIBRARY - the CPU_CLONES loops (runtime/cpu/kernels_impl.h)
# hold no FMA instruction in any clone: their files are compiled with
# -ffp-contract=off, so an AVX-512 machine (the "avx512f" clone) gives the
# bits of an AVX2 one and an unfused a * b + c the bits of the fused kernels'
# separate multiply and add. The FMA loops are CPU_FMA_CLONES' (x86-64-v3
# clones), which this leaves alone; a gcc build must show avx512f clones.
set -euo pipefail
lib=$1
dis=$(objdump -d --no-show-raw-insn "$lib")
clones=$(grep -cE '^[0-9a-f]+ <[A-Za-z_0-9]+\.avx512f>:' <<< "$dis" || true)
[ "$clones" -gt 0 ] || { echo "no avx512f clone in $lib: CPU_CLONES not compiled as expected"; exit 1; }
bad=$(awk '/^[0-9a-f]+ <[A-Za-z_0-9]+\.(avx512f|avx2)>:/ { name = $2; next }
           /^[0-9a-f]+ </ { name = "" }
           name != "" && /\tv?f(n)?m(add|sub)[0-9]+[ps]s/ { print name; seen[name]++ }' <<< "$dis" | sort -u)
[ -z "$bad" ] || { echo "FMA instructions in CPU_CLONES clones (a * b + c contracted):"; echo "$bad"; exit 1; }
echo "ok: $clones avx512f clones, no FMA in any"
