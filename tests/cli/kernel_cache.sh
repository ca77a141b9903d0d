# The kernel-choice cache belongs to one build of mgc (runtime/cpu/tune.c,
# docs/cpu-kernels.md): a run measures and writes kernels-H.json, a second run
# of the same binary reads it (no new file, the file unchanged), and the same
# binary with another GNU build ID, as a rebuild with other kernels has,
# measures into a file of its own instead of obeying those choices; so does
# a build without an ID. A build writing its file removes the other builds'
# files (and locks) beyond the 7 most recently used; a run that only reads
# its file marks it used.
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
flip_id() { # copy of $MGC with byte $1 of its build ID flipped -> $2
  cp "$MGC" "$2"
  "$PY" - "$2" "$id" "$1" <<'PY'
import sys
path, build, k = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3])
b = bytearray(open(path, "rb").read())
at = b.find(build)
assert at > 0 and b.find(build, at + 1) < 0, "the build ID is not in the binary once"
b[at + k] ^= 0xFF
open(path, "wb").write(b)
PY
}
flip_id 0 "$tmp/other-mgc"
run "$tmp/other-mgc"
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 2 ] || fail "another build used this build's cache: $(ls "$MGC_CACHE_DIR")"
cmp -s "${files[0]}" "$tmp/first.json" || fail "another build rewrote this build's cache"
# a build without an ID (linked with --build-id=none) runs and keeps a cache of its own too
objcopy --remove-section .note.gnu.build-id "$MGC" "$tmp/no-id-mgc"
! readelf -n "$tmp/no-id-mgc" | grep -q "Build ID" || fail "objcopy left the build ID"
run "$tmp/no-id-mgc"
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 3 ] || fail "a build without an ID shared a cache: $(ls "$MGC_CACHE_DIR")"
# pruning: eight old builds' files, 1 .. 8 days unused; this build's file 20
# days old, then read by a run, which marks it used
for d in 1 2 3 4 5 6 7 8; do
  f="$MGC_CACHE_DIR/kernels-00000000000000$(printf %02d $d).json"
  echo '{"mgc_kernels": 1, "choices": {}}' > "$f" && : > "$f.lock" && touch -d "$d days ago" "$f"
done
touch -d "20 days ago" "${files[0]}"
run "$MGC"
[ "$(find "${files[0]}" -mmin -10)" ] || fail "a run that read its cache did not mark it used"
flip_id 1 "$tmp/fourth-mgc"
run "$tmp/fourth-mgc" # writes a fourth build's file: keeps it and the 7 most recently used others
[ "$(ls "$MGC_CACHE_DIR"/kernels-*.json | wc -l)" = 8 ] || fail "8 cache files expected after pruning: $(ls "$MGC_CACHE_DIR")"
for d in 1 2 3 4; do
  [ -e "$MGC_CACHE_DIR/kernels-00000000000000$(printf %02d $d).json" ] || fail "pruning removed a file $d days unused"
done
for d in 5 6 7 8; do
  f="$MGC_CACHE_DIR/kernels-00000000000000$(printf %02d $d).json"
  [ ! -e "$f" ] && [ ! -e "$f.lock" ] || fail "pruning left a file $d days unused (or its lock)"
done
cmp -s "${files[0]}" "$tmp/first.json" || fail "pruning removed or changed this build's recently used cache"
echo ok
