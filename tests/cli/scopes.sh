# Names and masks (issue 10, parts 2 and 3):
# - a user's function never replaces a name inside the stdlib (identity in
#   dense, size in flatten, glorot_uniform as dense's initializer), yet the
#   user's own calls use it;
# - dropout is the identity in eval and predict, and two dropout layers draw
#   different masks (a default seed per call site).
source "$SRC/tests/cli/lib.sh"

cat > "$tmp/base.mg" <<'MG'
use nn
model m {
  input x: f32[batch, 2, 2]
  input label: i32[batch]
  h = dense(flatten(x), 8, activation: relu)
  logits = dense(h, 3)
  loss = sparse_softmax_cross_entropy(logits, label)
}
train m {
  optimizer = sgd
  batch = 4 per replica
}
MG
{ cat "$tmp/base.mg"; printf 'fn identity(x) { return x + x }\nfn size(x) { return 1 }\nfn glorot_uniform(x) { return x }\n'; } \
  > "$tmp/shadow.mg"
ir() { "$MGC" dump "$1" | sed 's/ *#.*//'; }  # positions aside
ir "$tmp/base.mg" > "$tmp/base.ir"
ir "$tmp/shadow.mg" > "$tmp/shadow.ir" || fail "a model defining identity, size and glorot_uniform does not compile"
cmp -s "$tmp/base.ir" "$tmp/shadow.ir" || fail "user functions changed the stdlib's layers: $(diff "$tmp/base.ir" "$tmp/shadow.ir" | head)"
sed 's/logits = dense(h, 3)/logits = dense(identity(h), 3)/' "$tmp/shadow.mg" > "$tmp/own.mg"
ir "$tmp/own.mg" > "$tmp/own.ir"
grep -qE 'add\((%[0-9]+), \1\)' "$tmp/own.ir" || fail "the user's own call of identity does not use the user's function"

cat > "$tmp/drop.mg" <<'MG'
use nn
model m {
  input x: f32[batch, 16]
  input label: i32[batch]
  h = dropout(dense(x, 16, activation: relu), 0.5)
  h = dropout(dense(h, 16, activation: relu), 0.5)
  logits = dense(h, 3)
  loss = sparse_softmax_cross_entropy(logits, label)
  output logits
}
train m {
  optimizer = sgd
  batch = 8 per replica
}
MG
seeds=$("$MGC" dump "$tmp/drop.mg" | sed -n 's/.* dropout(.* seed=\([0-9]*\) .*/\1/p' | sort -u | wc -l)
[ "$seeds" = 2 ] || fail "two dropout layers share a mask seed"
sed 's/, 0\.5)/, 0.0)/' "$tmp/drop.mg" > "$tmp/nodrop.mg"
"$PY" - "$tmp" <<'PY'
import sys, numpy as np
r = np.random.default_rng(1)
np.save(sys.argv[1] + "/x.npy", r.standard_normal((32, 16)).astype(np.float32))
np.save(sys.argv[1] + "/label.npy", r.integers(0, 3, 32).astype(np.int32))
PY
data=(--input "x=$tmp/x.npy" --input "label=$tmp/label.npy")
for m in drop nodrop; do "$MGC" compile "$tmp/$m.mg" --devices cpu:0,cpu:1 -o "$tmp/$m.mgx" 2>/dev/null; done
"$MGC" run "$tmp/drop.mgx" --steps 3 "${data[@]}" --save "$tmp/w.safetensors" > /dev/null
for m in drop nodrop; do
  "$MGC" eval "$tmp/$m.mgx" --load "$tmp/w.safetensors" --json "${data[@]}" > "$tmp/$m.json"
  "$MGC" predict "$tmp/$m.mgx" --load "$tmp/w.safetensors" --input "x=$tmp/x.npy" -o "$tmp/$m.npy" > /dev/null
done
cmp -s "$tmp/drop.json" "$tmp/nodrop.json" || fail "eval with dropout differs from eval without: $(cat "$tmp/drop.json" "$tmp/nodrop.json")"
cmp -s "$tmp/drop.npy" "$tmp/nodrop.npy" || fail "predict with dropout differs from predict without"
echo ok

# a tower shared by name (reuse: true, issue 12) holds one set of params, yet
# its dropout draws a mask per call, as a shared Keras Dropout does; a
# recompile draws the same seeds
cat > "$tmp/siamese.mg" <<'MG'
use nn
fn tower(x: f32[b, n]) {
  return dropout(dense(x, 8, activation: relu), 0.5)
}
model m {
  input a: f32[batch, 16]
  input b: f32[batch, 16]
  d = tower(a, name: "tower") - tower(b, name: "tower", reuse: true)
  output d
}
MG
"$MGC" dump "$tmp/siamese.mg" > "$tmp/siamese.ir"
[ "$(grep -c ' = param(' "$tmp/siamese.ir")" = 2 ] || fail "the shared tower has more than one set of params"
seeds=$(sed -n 's/.* dropout(.* seed=\([0-9]*\) .*/\1/p' "$tmp/siamese.ir" | sort -u | wc -l)
[ "$seeds" = 2 ] || fail "the two uses of a shared tower draw the same dropout mask"
"$MGC" dump "$tmp/siamese.mg" | cmp -s - "$tmp/siamese.ir" || fail "a recompile of the shared tower differs"
