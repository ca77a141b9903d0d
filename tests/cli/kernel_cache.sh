# The kernel-choice cache belongs to one build of mgc (runtime/cpu/tune.c,
# docs/cpu-kernels.md): a run measures and writes kernels-H.json, a second run
# of the same binary reads it (no new file, the file unchanged), and the same
# binary with another GNU build ID, as a rebuild with other kernels has,
# measures into a file of its own instead of obeying those choices; so does
# a build without an ID.
. "$(dirname "$0")/lib.sh"
"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0 -o "$tmp/m.mgx"
run() { "$1" run "$tmp/m.mgx" --steps 2 --threads-per-device 1 > /dev/null; }
run "$MGC"
files=("$MGC_CACHE_DIR"/kernels-*.json)
[ ${#files[@]} = 1 ] && [ -s "${files[0]}" ] || fail "one cache file expected after the first run: ${files[*]}"
cp -p "${files[0]}" "$tmp/first.json"
run "$MGC"
cmp -s "${files[0]}" "$tmp/first.json" || fail "the second run of the same build rewrote its cache"
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 1 ] || fail "the same build wrote a second cache file"
# another build: a copy whose build ID differs in one byte
id=$(readelf -n "$MGC" | awk '/Build ID:/ {print $3}')
[ -n "$id" ] || fail "$MGC has no GNU build ID"
cp "$MGC" "$tmp/other-mgc"
"$PY" - "$tmp/other-mgc" "$id" <<'PY'
import sys
path, build = sys.argv[1], bytes.fromhex(sys.argv[2])
b = bytearray(open(path, "rb").read())
at = b.find(build)
assert at > 0 and b.find(build, at + 1) < 0, "the build ID is not in the binary once"
b[at] ^= 0xFF
open(path, "wb").write(b)
PY
run "$tmp/other-mgc"
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 2 ] || fail "another build used this build's cache: $(ls "$MGC_CACHE_DIR")"
cmp -s "${files[0]}" "$tmp/first.json" || fail "another build rewrote this build's cache"
# a build without an ID (linked with --build-id=none) runs and keeps a cache of its own too
objcopy --remove-section .note.gnu.build-id "$MGC" "$tmp/no-id-mgc"
! readelf -n "$tmp/no-id-mgc" | grep -q "Build ID" || fail "objcopy left the build ID"
run "$tmp/no-id-mgc"
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 3 ] || fail "a build without an ID shared a cache: $(ls "$MGC_CACHE_DIR")"
echo ok
