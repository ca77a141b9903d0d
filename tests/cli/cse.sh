# issue 14: the cse pass (passes/cse.c). A node computing what an earlier one
# computes is read from that one: char_gpt's perplexity metric reads its
# loss's sparse_xent; one a collective reduces in place is not merged; two
# dropouts of one tensor (two call sites: two seeds) stay two; --no-fuse
# keeps the graph as written; the merged plan trains to the unmerged plan's
# params bit for bit on 1 and 2 devices.
. "$(dirname "$0")/lib.sh"
# count OP FILE -> the nodes of OP in an IR dump
count() { grep -cE "^%[0-9]+ = $1\(" "$2" || true; }

# ir MODEL [FLAGS...] -> the IR after the cse pass in $tmp/ir
ir() { local model=$1; shift; "$MGC" compile "$model" --devices cpu:0 "$@" --dump-after cse -o "$tmp/ir.mgx" > "$tmp/ir"; }

ir "$SRC/examples/char_gpt.mg"
[ "$(count sparse_xent "$tmp/ir")" = 1 ] || fail "char_gpt: expected 1 sparse_xent after cse, got $(count sparse_xent "$tmp/ir")"
ir "$SRC/examples/char_gpt.mg" --no-fuse
[ "$(count sparse_xent "$tmp/ir")" = 2 ] || fail "char_gpt --no-fuse: expected 2 sparse_xent, got $(count sparse_xent "$tmp/ir")"
# MobileNet's sync batch norms all-reduce each channel mean in place (the
# memory plan packs it into the bucket) while the backward pass recomputes it:
# merged, the plan failed its race check; the 22 stay 22
ir "$SRC/examples/mobilenet.mg"
[ "$(count channel_mean "$tmp/ir")" = 22 ] || fail "mobilenet: expected its 22 channel_mean kept, got $(count channel_mean "$tmp/ir")"

dup=$SRC/tests/cli/duplicates.mg
ir "$dup"
[ "$(count tanh "$tmp/ir")" = 1 ] || fail "duplicates.mg: expected 1 tanh after cse, got $(count tanh "$tmp/ir")"
[ "$(count dropout "$tmp/ir")" = 2 ] || fail "duplicates.mg: the two dropouts (two seeds) were merged"
"$PY" -c "import numpy as np; np.save('$tmp/x.npy', np.random.default_rng(1).uniform(-1, 1, (256, 8)).astype(np.float32)); np.save('$tmp/y.npy', np.random.default_rng(2).integers(0, 10, 256).astype(np.int32))"
for dev in cpu:0 cpu:0,cpu:1; do
  "$MGC" compile "$dup" --devices "$dev" -o "$tmp/m.mgx"
  "$MGC" compile "$dup" --devices "$dev" --no-fuse -o "$tmp/n.mgx"
  for p in m n; do
    "$MGC" run "$tmp/$p.mgx" --input x="$tmp/x.npy" --input label="$tmp/y.npy" --steps 10 --seed 3 --save "$tmp/$p.st" > /dev/null
  done
  cmp -s "$tmp/m.st" "$tmp/n.st" || fail "duplicates.mg on $dev: the merged plan's params differ from --no-fuse's"
done
echo "cse: ok"
