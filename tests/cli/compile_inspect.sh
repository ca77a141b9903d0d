# compile + inspect + dump of the seed CNN: 693,962 params, valid Graphviz.
. "$(dirname "$0")/lib.sh"
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 -o "$tmp/m.mgx"
"$MGC" inspect "$tmp/m.mgx" > "$tmp/inspect"
expect_line "$tmp/inspect" '^trainable parameters: 693,962$'
expect_line "$tmp/inspect" '^  conv2d/kernel +f32\[3,3,1,32\] +288$'
expect_line "$tmp/inspect" '^  dense/kernel +f32\[5408,128\] +692,224$'
expect_line "$tmp/inspect" '^  dense_1/bias +f32\[10\] +10$'
expect_line "$tmp/inspect" 'image: f32\[128,28,28,1\]'
expect_line "$tmp/inspect" '^devices +cpu:0 cpu:1'
expect_line "$tmp/inspect" '^  bucket 0: '
expect_line "$tmp/inspect" '^  cpu:1  planned [0-9.]+ MiB   unplanned [0-9.]+ MiB$'
"$MGC" dump "$SRC/examples/mnist_cnn.mg" > "$tmp/ir"
expect_line "$tmp/ir" 'conv2d\('
"$MGC" dump "$SRC/examples/mnist_cnn.mg" --format dot | dot -Tsvg > "$tmp/one.svg"
"$MGC" dump "$tmp/m.mgx" --replicated --format dot | dot -Tsvg > "$tmp/rep.svg"
"$MGC" dump "$tmp/m.mgx" --replicated --format svg > "$tmp/rep2.svg"
grep -q '<svg' "$tmp/rep2.svg" || fail "no svg"
grep -q 'all_reduce' "$tmp/rep2.svg" || fail "the replicated picture shows no all_reduce"
# default output path: beside the input
cp "$SRC/examples/mlp.mg" "$tmp/mlp.mg"
"$MGC" compile "$tmp/mlp.mg" 2>/dev/null
[ -s "$tmp/mlp.mgx" ] || fail "compile wrote no $tmp/mlp.mgx"
"$MGC" compile "$tmp/mlp.mg" --dump-after=replicate -o "$tmp/x.mgx" > "$tmp/dump" 2>/dev/null
expect_line "$tmp/dump" 'all_reduce'
echo ok
