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
expect_line "$tmp/inspect" '^  cpu:1  planned with reuse [0-9.]+ MiB   without reuse [0-9.]+ MiB$'
# 64 a replica: conv 64*26*26*32 outputs * 9 taps, dense 64*5408*128, dense_1 64*128*10, 2 flops a
# multiply-add: forward 113.7 M; the train step adds the conv's filter gradient and both
# gradients of each dense: 316.0 M (no input gradient of the first conv)
expect_line "$tmp/inspect" '^work per replica \(matmul and convolution flops, forward and backward\): train step 0\.316 GFLOP, predict 0\.114 GFLOP$'
"$MGC" dump "$SRC/examples/mnist_cnn.mg" > "$tmp/ir"
expect_line "$tmp/ir" 'conv2d\('
"$MGC" dump "$SRC/examples/mnist_cnn.mg" --format dot | dot -Tsvg > "$tmp/one.svg"
"$MGC" dump "$tmp/m.mgx" --replicated --format dot | dot -Tsvg > "$tmp/rep.svg"
"$MGC" dump "$tmp/m.mgx" --replicated --format svg > "$tmp/rep2.svg"
grep -q '<svg' "$tmp/rep2.svg" || fail "no svg"
grep -q 'all_reduce' "$tmp/rep2.svg" || fail "the replicated picture shows no all_reduce"
# buckets close once they hold --bucket-bytes: dense/kernel closes the first,
# so its all-reduce overlaps the conv layer's backward pass; the schedule:
# each all-reduce waits once (for its
# last gradient), the compute stream once (its first update reads the last
# bucket, and the comm stream runs in order), and views are no work
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 -o "$tmp/b.mgx"
"$MGC" inspect "$tmp/b.mgx" > "$tmp/inspect_b"
expect_line "$tmp/inspect_b" '^  bucket 0: 2\.65 MiB, dense_1/bias dense_1/kernel dense/bias dense/kernel$'
expect_line "$tmp/inspect_b" '^  bucket 1: 1\.2 KiB, conv2d/bias conv2d/kernel$'
grep -c '^  bucket ' "$tmp/inspect_b" | grep -qx 2 || fail "expected 2 buckets: $(cat "$tmp/inspect_b")"
"$MGC" dump "$tmp/b.mgx" --replicated > "$tmp/rep.txt"
"$PY" - "$tmp/rep.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = dict(re.findall(r"^(%\d+) = (\w+)\(", text, re.M))
for dev in ("cpu:0", "cpu:1"):
    comm = re.search(rf"^# train {dev}/comm: (.*)$", text, re.M).group(1).split()
    compute = re.search(rf"^# train {dev}: (.*)$", text, re.M).group(1).split()
    reduces = [k for k, t in enumerate(comm) if t.startswith("%")]
    assert len(reduces) == 3 and all(ops[comm[k]] == "all_reduce" for k in reduces), comm  # 2 buckets + report
    assert all(comm[k - 1].startswith("wait(") for k in reduces), comm
    assert sum(t.startswith("wait(") for t in comm) == 3, comm
    # the updates go in the order their buckets finish: bucket 0's four, then bucket 1's two
    waits = [k for k, t in enumerate(compute) if t.startswith("wait(")]
    assert len(waits) == 2, compute
    between, after = compute[waits[0] + 1 : waits[1]], compute[waits[1] + 1 :]
    assert [ops[t] for t in between] == ["adam_update"] * 4 and [ops[t] for t in after] == ["adam_update"] * 2, compute
    assert not any(ops.get(t) in ("view", "reshape") for t in compute), compute
    # the dense layer's weight gradient comes before its input gradient, so bucket 0's
    # all-reduce (its record) starts while the compute stream works on the rest of the backward
    shapes = dict(re.findall(r"^(%\d+) = matmul\(.* : (f32\[[\d,]+\]) @", text, re.M))
    at = {shapes[t]: k for k, t in enumerate(compute) if t in shapes}
    dw, dx = at["f32[5408,128]"], at["f32[64,5408]"]
    assert compute[dw + 1].startswith("record(") and dw + 1 < dx, compute
PY
# default output path: beside the input
cp "$SRC/examples/mlp.mg" "$tmp/mlp.mg"
"$MGC" compile "$tmp/mlp.mg" 2>/dev/null
[ -s "$tmp/mlp.mgx" ] || fail "compile wrote no $tmp/mlp.mgx"
"$MGC" compile "$tmp/mlp.mg" --dump-after=replicate -o "$tmp/x.mgx" > "$tmp/dump" 2>/dev/null
expect_line "$tmp/dump" 'all_reduce'
# the plan was proven race-free when it was read (issue 10), and inspect says so
expect_line "$tmp/inspect" '^checked       race-free: [1-9][0-9,]* pairs of nodes on different streams touch the same bytes'
# --time-passes: one line per stage, in pipeline order, the plan's node count last
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 -o "$tmp/t.mgx" --time-passes 2> "$tmp/times"
awk '{print $1}' "$tmp/times" | tr '\n' ' ' | grep -qx 'elaborate shapes autodiff optimizer cse epilogue dce fuse replicate schedule memplan check write total ' ||
  fail "--time-passes printed: $(cat "$tmp/times")"
expect_line "$tmp/times" '^  total +[0-9.]+ ms +[1-9][0-9]* nodes$'
echo ok
