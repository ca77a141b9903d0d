# failures on purpose: a replica that never joins a collective, NaN in the
# forward pass, an unwritable checkpoint path (the old file survives).
. "$(dirname "$0")/lib.sh"
"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0,cpu:1,cpu:2 -o "$tmp/m.mgx"
start=$(date +%s.%N)
MGC_FAULT_ABSENT_REPLICA=2 expect_fail \
  "mgc: collective timeout after 1.0 s: broadcast of 'dense/kernel' is missing cpu:2" \
  "$MGC" run "$tmp/m.mgx" --steps 5 --collective-timeout 1
"$PY" -c "import sys; t = float(sys.argv[2]) - float(sys.argv[1]); assert t < 10, t" "$start" "$(date +%s.%N)"
# the same in the middle of training: a gradient bucket; loading works, so use --load
"$MGC" run "$tmp/m.mgx" --steps 2 --save "$tmp/ok.safetensors" > /dev/null
"$MGC" compile "$SRC/tests/cli/log_of_pixels.mg" --devices cpu:0 -o "$tmp/nan.mgx"
expect_fail "mgc: op 'log': produced -Inf (element 0, replica 0, step 1) at $SRC/tests/cli/log_of_pixels.mg:9:12" \
  "$MGC" run "$tmp/nan.mgx" --steps 3 --check-numerics
# an unwritable checkpoint path: exit 1, the old checkpoint intact
cp "$tmp/ok.safetensors" "$tmp/keep.safetensors"
expect_fail "mgc: $tmp/no/such/dir/x.safetensors: cannot write: No such file or directory" \
  "$MGC" run "$tmp/m.mgx" --steps 1 --save "$tmp/no/such/dir/x.safetensors"
cmp "$tmp/ok.safetensors" "$tmp/keep.safetensors" || fail "the old checkpoint changed"
echo ok
