# issue 13: sparse gradient exchange of embedding tables through the command
# line: --sparse-grads always/never/auto as inspect and dump show it, the
# automatic choice from the sizes, and an id
# outside the table is a run-time error naming the input (docs/errors.md).
. "$(dirname "$0")/lib.sh"
seq=$SRC/tests/train/sequence.mg

# a small table (10 x 8): auto keeps it dense, always makes it sparse
"$MGC" compile "$seq" --devices cpu:0,cpu:1 -o "$tmp/auto.mgx"
"$MGC" inspect "$tmp/auto.mgx" >"$tmp/auto.txt"
grep -q "sparse gradients" "$tmp/auto.txt" && fail "auto exchanged a 320-byte table sparsely"
"$MGC" compile "$seq" --devices cpu:0,cpu:1 --sparse-grads always -o "$tmp/s.mgx"
"$MGC" inspect "$tmp/s.mgx" >"$tmp/s.txt"
expect_line "$tmp/s.txt" '^sparse gradients \(--sparse-grads always; bytes each replica sends per step\)$'
expect_line "$tmp/s.txt" '^  embedding/embeddings: ids and rows 13.5 KiB instead of the table.s 320 B$'
grep -q "embedding/embeddings" <(grep "bucket 0" "$tmp/s.txt") && fail "a sparse gradient is still in a bucket"
"$MGC" dump "$tmp/s.mgx" --replicated >"$tmp/s.dump"
expect_line "$tmp/s.dump" '^# devices cpu:0 cpu:1 cross_device=ring bucket_bytes=4194304 sparse_grads=always$'
expect_line "$tmp/s.dump" '^# sparse embedding/embeddings ids=%[0-9]+ rows=%[0-9]+ sparse_bytes=13824 dense_bytes=320$'
[ "$(grep -c '= all_gather(' "$tmp/s.dump")" = 4 ] || fail "expected 4 all_gather nodes (ids and rows on 2 devices)"
"$MGC" compile "$seq" --devices cpu:0,cpu:1 --sparse-grads never -o "$tmp/n.mgx"
"$MGC" dump "$tmp/n.mgx" --replicated | grep -q all_gather && fail "--sparse-grads never still gathers"
expect_fail "mgc: --sparse-grads: 'sometimes' is not one of auto, always, never" \
  "$MGC" compile "$seq" --sparse-grads sometimes -o "$tmp/x.mgx"

# a large table (10000 x 64) with few ids: auto exchanges it sparsely
cat >"$tmp/big.mg" <<'MG'
use nn
model big {
  input tokens: i32[batch, 4]
  input label: i32[batch]
  e = embedding(tokens, 10000, 64)
  logits = dense(flatten(e), 10)
  loss = sparse_softmax_cross_entropy(logits, label)
}
train big {
  optimizer = adam(learning_rate: 0.01)
  batch = 16 global
}
MG
"$MGC" compile "$tmp/big.mg" --devices cpu:0,cpu:1 -o "$tmp/big.mgx"
"$MGC" inspect "$tmp/big.mgx" >"$tmp/big.txt"
expect_line "$tmp/big.txt" '^sparse gradients \(--sparse-grads auto; bytes each replica sends per step\)$'
expect_line "$tmp/big.txt" '^  embedding/embeddings: ids and rows 16.2 KiB instead of the table.s 2.44 MiB$'

# an id outside the table: the run fails naming the input and the embedding call
"$PY" - "$tmp" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
t = np.random.RandomState(0).randint(0, 10, (64, 6)).astype(np.int32)
np.save(f"{d}/tok.npy", t)
t[37, 2] = 10
np.save(f"{d}/bad.npy", t)
np.save(f"{d}/lab.npy", (np.arange(64) % 10).astype(np.int32))
PY
"$MGC" run "$tmp/s.mgx" --input tokens="$tmp/tok.npy" --input label="$tmp/lab.npy" --steps 2 >/dev/null 2>&1 \
  || fail "training with good ids failed"
# --check-numerics looks at all_gather's output only once the collective has filled it
"$MGC" run "$tmp/s.mgx" --input tokens="$tmp/tok.npy" --input label="$tmp/lab.npy" --steps 2 --check-numerics \
  >/dev/null 2>"$tmp/cn.err" || fail "--check-numerics with sparse exchange: $(cat "$tmp/cn.err")"
for plan in s n; do
  expect_fail "mgc: $seq:10:7: embedding id 10 outside the table [0, 10) in input 'tokens'" \
    "$MGC" run "$tmp/$plan.mgx" --input tokens="$tmp/bad.npy" --input label="$tmp/lab.npy" --steps 2
done
echo "cli sparse: ok"
