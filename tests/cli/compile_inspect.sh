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
# the schedule: with 3 gradient buckets, each all-reduce waits once (for its
# last gradient), the compute stream once (its first update reads the last
# bucket, and the comm stream runs in order), and views are no work
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 --bucket-bytes 65536 -o "$tmp/b.mgx"
"$MGC" inspect "$tmp/b.mgx" | grep -c '^  bucket ' | grep -qx 3 || fail "expected 3 buckets"
"$MGC" dump "$tmp/b.mgx" --replicated > "$tmp/rep.txt"
"$PY" - "$tmp/rep.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = dict(re.findall(r"^(%\d+) = (\w+)\(", text, re.M))
for dev in ("cpu:0", "cpu:1"):
    comm = re.search(rf"^# train {dev}/comm: (.*)$", text, re.M).group(1).split()
    compute = re.search(rf"^# train {dev}: (.*)$", text, re.M).group(1).split()
    reduces = [k for k, t in enumerate(comm) if t.startswith("%")]
    assert len(reduces) == 4 and all(ops[comm[k]] == "all_reduce" for k in reduces), comm  # 3 buckets + report
    assert all(comm[k - 1].startswith("wait(") for k in reduces), comm
    assert sum(t.startswith("wait(") for t in comm) == 4, comm
    assert sum(t.startswith("wait(") for t in compute) == 1, compute
    assert not any(ops.get(t) in ("view", "reshape") for t in compute), compute
PY
# default output path: beside the input
cp "$SRC/examples/mlp.mg" "$tmp/mlp.mg"
"$MGC" compile "$tmp/mlp.mg" 2>/dev/null
[ -s "$tmp/mlp.mgx" ] || fail "compile wrote no $tmp/mlp.mgx"
"$MGC" compile "$tmp/mlp.mg" --dump-after=replicate -o "$tmp/x.mgx" > "$tmp/dump" 2>/dev/null
expect_line "$tmp/dump" 'all_reduce'
echo ok
