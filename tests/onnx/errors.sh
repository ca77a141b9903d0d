# errors.sh - mgc export's errors through the real command line (docs/errors.md),
# without onnxruntime: exit status 1, the exact message, nothing written or
# overwritten; and a model without variables exports (a valid file is made).
. "$SRC/tests/cli/lib.sh"

printf 'use nn\n\nmodel m {\n  input x: f32[batch, 4]\n  output y = relu(x)\n}\n' > "$tmp/relu.mg"
printf 'model g {\n  input x: f32[batch, 4]\n  output y = prim.relu_grad(x, x)\n}\n' > "$tmp/grad.mg"
printf 'use nn\n\nmodel n {\n  input x: f32[batch, 2]\n  input label: i32[batch]\n  l = sparse_softmax_cross_entropy(x, label)\n  loss = l\n}\n' > "$tmp/noout.mg"
for m in relu grad noout; do "$MGC" compile "$tmp/$m.mg" --devices cpu:0 --global-batch 2 -o "$tmp/$m.mgx"; done
printf '\x02\x00\x00\x00\x00\x00\x00\x00{}' > "$tmp/empty.safetensors"  # no variables

expect_fail "mgc: export needs --load CKPT" "$MGC" export "$tmp/relu.mgx" -o "$tmp/a.onnx"
expect_fail "mgc: export needs -o MODEL.onnx" "$MGC" export "$tmp/relu.mgx" --load "$tmp/empty.safetensors"
expect_fail "mgc: export needs one PLAN.mgx" "$MGC" export --load "$tmp/empty.safetensors" -o "$tmp/a.onnx"
expect_fail "mgc: $tmp/no/such/a.onnx: cannot write: No such file or directory" \
  "$MGC" export "$tmp/relu.mgx" --load "$tmp/empty.safetensors" -o "$tmp/no/such/a.onnx"
expect_fail "mgc: $tmp: not a regular file (a directory); mgc writes only regular files" \
  "$MGC" export "$tmp/relu.mgx" --load "$tmp/empty.safetensors" -o "$tmp"
expect_fail "mgc: $tmp/none.safetensors: cannot open: No such file or directory" \
  "$MGC" export "$tmp/relu.mgx" --load "$tmp/none.safetensors" -o "$tmp/a.onnx"
expect_fail "mgc: $tmp/noout.mgx: model 'n' has no output to export" \
  "$MGC" export "$tmp/noout.mgx" --load "$tmp/empty.safetensors" -o "$tmp/a.onnx"
# an op without a mapping: named with its node, line and model; what was at -o stays
echo keep > "$tmp/old.onnx"
expect_fail "mgc: $tmp/grad.mgx: model 'g': op 'relu_grad' (%2 at $tmp/grad.mg:3:14) has no ONNX mapping" \
  "$MGC" export "$tmp/grad.mgx" --load "$tmp/empty.safetensors" -o "$tmp/old.onnx"
[ "$(cat "$tmp/old.onnx")" = keep ] || fail "a failed export changed the file at -o"
[ ! -e "$tmp/a.onnx" ] || fail "a failed export wrote a file"

"$MGC" export "$tmp/relu.mgx" --load "$tmp/empty.safetensors" -o "$tmp/old.onnx" > "$tmp/out"
grep -qxF "exported model 'm' (batch 2) to $tmp/old.onnx" "$tmp/out" || fail "export said: $(cat "$tmp/out")"
# the ModelProto's first field: ir_version 8 (tag 0x08, value 8); the Relu node is in it
[ "$(head -c 2 "$tmp/old.onnx" | od -An -tx1 | tr -d ' ')" = 0808 ] || fail "not an ONNX model of IR version 8"
grep -q Relu "$tmp/old.onnx" || fail "the exported model has no Relu node"
echo "ok"
