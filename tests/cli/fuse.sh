# issue 14: fusion through the command line: the fuse pass as --dump-after
# shows it (after the epilogue pass), --no-fuse, the dot picture, and a
# re-planned plan (its GPUs missing) keeping --no-fuse.
. "$(dirname "$0")/lib.sh"
cnn=$SRC/examples/mnist_cnn.mg

"$MGC" compile --help | grep -q -- "--no-fuse" || fail "compile --help does not list --no-fuse"
# the seed CNN: the epilogue pass (runs first, tests/cli/epilogue.sh) takes
# its conv/dense + bias + relu and the pool/relu gradient, leaving no relu
"$MGC" compile "$cnn" --devices cpu:0 --dump-after fuse -o "$tmp/f.mgx" >"$tmp/f.txt"
grep -qE '^%[0-9]+ = relu\(' "$tmp/f.txt" && fail "a relu was left unfused"
"$MGC" compile "$cnn" --devices cpu:0 --no-fuse --dump-after fuse -o "$tmp/u.mgx" >"$tmp/u.txt"
grep -qE 'fused|epilogue' "$tmp/u.txt" && fail "--no-fuse still fused"
[ "$(grep -cE '^%[0-9]+ = relu_grad\(' "$tmp/u.txt")" = 2 ] || fail "expected 2 relu_grad nodes unfused"
# elementwise chains (activations, clipping, arithmetic): fused nodes with their programs
act=$SRC/tests/train/activations.mg
"$MGC" compile "$act" --devices cpu:0 --dump-after fuse -o "$tmp/a.mgx" >"$tmp/a.txt"
[ "$(grep -c '= fused(' "$tmp/a.txt")" = 4 ] || fail "expected 4 fused nodes in activations.mg: $(grep fused "$tmp/a.txt")"
expect_line "$tmp/a.txt" '^%[0-9]+ = fused\(%[0-9]+, %[0-9]+, %[0-9]+\) \[r3 = mul\(r0, r1\); r4 = sub\(r2, r3\)\] : f32\[64,16\] '

# (the same params after training, fused or not, on 1 and 2 devices: tests/cli/epilogue.sh)

# the picture names a fused node's ops
"$MGC" dump "$tmp/a.mgx" --format dot >"$tmp/a.dot"
grep -q 'fused\\nmul > sub\\n' "$tmp/a.dot" || fail "the dot picture lacks the fused node's ops"

# a plan re-planned for CPUs (its GPU missing) keeps the choice it was compiled with
"$PY" "$SRC/tests/cli/mgx_edit.py" "$tmp/u.mgx" "$tmp/ug.mgx" device-kind gpu
"$PY" "$SRC/tests/cli/mgx_edit.py" "$tmp/a.mgx" "$tmp/fg.mgx" device-kind gpu
"$MGC" run "$tmp/ug.mgx" --steps 2 --profile >"$tmp/ug.txt" 2>&1
"$PY" -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng(1).uniform(-1, 1, (256, 8)).astype(np.float32)); np.save('$tmp/y.npy', np.random.default_rng(2).integers(0, 10, 256).astype(np.int32))"
"$MGC" run "$tmp/fg.mgx" --steps 2 --profile --input x="$tmp/x.npy" --input label="$tmp/y.npy" >"$tmp/fg.txt" 2>&1
expect_line "$tmp/ug.txt" 're-planned for 1 CPU device'
grep -qE '^(fused|conv2d_epilogue|matmul_epilogue) ' "$tmp/ug.txt" && fail "the re-planned --no-fuse plan fused"
expect_line "$tmp/fg.txt" '^fused +compute +'
echo "fuse: ok"
