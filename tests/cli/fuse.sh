# issue 14: elementwise fusion through the command line: the fuse pass as
# --dump-after shows it, --no-fuse, the same bytes trained either way, the
# dot picture, and a re-planned plan (its GPUs missing) keeping --no-fuse.
. "$(dirname "$0")/lib.sh"
cnn=$SRC/examples/mnist_cnn.mg

"$MGC" compile --help | grep -q -- "--no-fuse" || fail "compile --help does not list --no-fuse"
"$MGC" compile "$cnn" --devices cpu:0 --dump-after fuse -o "$tmp/f.mgx" >"$tmp/f.txt"
[ "$(grep -c '= fused(' "$tmp/f.txt")" = 4 ] || fail "expected 4 fused nodes in the seed CNN: $(grep fused "$tmp/f.txt")"
expect_line "$tmp/f.txt" '^%[0-9]+ = fused\(%[0-9]+, %[0-9]+\) \[r2 = add\(r0, r1\); r3 = relu\(r2\)\] : f32\[64,26,26,32\] '
expect_line "$tmp/f.txt" '^%[0-9]+ = fused\(%[0-9]+, %[0-9]+, %[0-9]+\) \[r3 = add\(r0, r1\); r4 = relu_grad\(r3, r2\)\] : f32\[64,26,26,32\] '
grep -qE '^%[0-9]+ = (relu|relu_grad)\(' "$tmp/f.txt" && fail "a relu or relu_grad was left unfused"
"$MGC" compile "$cnn" --devices cpu:0 --no-fuse --dump-after fuse -o "$tmp/u.mgx" >"$tmp/u.txt"
grep -q 'fused' "$tmp/u.txt" && fail "--no-fuse still fused"
[ "$(grep -cE '^%[0-9]+ = relu_grad\(' "$tmp/u.txt")" = 2 ] || fail "expected 2 relu_grad nodes unfused"

# the same bytes after training, fused or not (2 devices)
"$MGC" compile "$cnn" --devices cpu:0,cpu:1 -o "$tmp/f2.mgx"
"$MGC" compile "$cnn" --devices cpu:0,cpu:1 --no-fuse -o "$tmp/u2.mgx"
"$MGC" run "$tmp/f2.mgx" --steps 30 --seed 3 --save "$tmp/f.safetensors" >/dev/null
"$MGC" run "$tmp/u2.mgx" --steps 30 --seed 3 --save "$tmp/u.safetensors" >/dev/null
cmp "$tmp/f.safetensors" "$tmp/u.safetensors" || fail "fused and unfused plans trained to different bytes"

# the picture names a fused node's ops
"$MGC" dump "$tmp/f.mgx" --format dot >"$tmp/f.dot"
grep -q 'fused\\nadd > relu_grad' "$tmp/f.dot" || fail "the dot picture lacks the fused node's ops"

# a plan re-planned for CPUs (its GPU missing) keeps the choice it was compiled with
"$PY" "$SRC/tests/cli/mgx_edit.py" "$tmp/u.mgx" "$tmp/ug.mgx" device-kind gpu
"$PY" "$SRC/tests/cli/mgx_edit.py" "$tmp/f.mgx" "$tmp/fg.mgx" device-kind gpu
"$MGC" run "$tmp/ug.mgx" --steps 2 --profile >"$tmp/ug.txt" 2>&1
"$MGC" run "$tmp/fg.mgx" --steps 2 --profile >"$tmp/fg.txt" 2>&1
expect_line "$tmp/ug.txt" 're-planned for 1 CPU device'
grep -q '^fused ' "$tmp/ug.txt" && fail "the re-planned --no-fuse plan fused"
expect_line "$tmp/fg.txt" '^fused +compute +'
echo "fuse: ok"
