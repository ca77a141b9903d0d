#!/usr/bin/env bash
# install.sh - `cmake --install` into a temporary prefix, then build
# tests/api/installed.c against it with pkg-config alone (libmgc.so and
# libmgc.a), run both, and check the stdlib is found beside the library.
#   usage: install.sh BUILD_DIR SRC_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log"
pc=$(find "$tmp/prefix" -name mgc.pc)
[ -n "$pc" ] || { echo "FAIL: no mgc.pc installed"; exit 1; }
for f in include/mgc.h share/mgc/stdlib/nn.mg bin/mgc; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
export PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(realpath "$(pkg-config --variable=libdir mgc)")
[ -e "$libdir/libmgc.so" ] && [ -e "$libdir/libmgc.a" ] || { echo "FAIL: libmgc.so/.a not in $libdir"; exit 1; }
cc -Wall -Werror "$src/tests/api/installed.c" -o "$tmp/shared" $(pkg-config --cflags --libs mgc) -Wl,-rpath,"$libdir"
cc -Wall -Werror "$src/tests/api/installed.c" -o "$tmp/static" $(pkg-config --cflags mgc) "$libdir/libmgc.a" \
   $(pkg-config --static --libs mgc | sed 's/-lmgc\b//')
# (ldd's output taken whole: under pipefail, grep -q quitting at the match
# could fail the pipeline with ldd's SIGPIPE)
libs=$(ldd "$tmp/shared")
grep -q "libmgc.so.0 => $libdir/libmgc.so.0 " <<< "$libs" || { echo "FAIL: the program does not use the installed libmgc.so"; exit 1; }
# the stdlib: beside the installed library (libdir/../share/mgc/stdlib)
unset MGC_STDLIB
out=$("$tmp/shared") && echo "shared: $out"
case "$out" in "step 1 loss "*) ;; *) echo "FAIL: shared: $out"; exit 1;; esac
# only mgc_* leave the shared library
others=$(nm -D --defined-only "$libdir/libmgc.so" | awk '{print $3}' | grep -v '^mgc_' || true)
[ -z "$others" ] || { echo "FAIL: libmgc.so exports $others"; exit 1; }
( cd "$tmp" && out=$(./static) && echo "static: $out" ) || { echo "FAIL: static"; exit 1; }
echo "installed libmgc: pkg-config builds, shared and static programs run"
# docs/api.md's complete program, built against the installed tree, runs and learns
awk '/^```c$/{on=1; next} /^```$/{on=0} on' "$src/docs/api.md" > "$tmp/app.c"
cc -Wall -Werror "$tmp/app.c" -o "$tmp/app" $(pkg-config --cflags --libs mgc) -Wl,-rpath,"$libdir"
( cd "$tmp" && ./app > app.out ) || { cat "$tmp/app.out"; echo "FAIL: docs/api.md's program"; exit 1; }
grep -q '^Epoch 3/3$' "$tmp/app.out" && [ -s "$tmp/clf.safetensors" ] || { cat "$tmp/app.out"; echo "FAIL: docs/api.md's program output"; exit 1; }
tail -3 "$tmp/app.out"
echo "docs/api.md's program: built and run"
