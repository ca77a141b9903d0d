# Updates inside the all-reduce (issue 14; docs/runtime.md): on 2 and 4 CPU
# devices the seed CNN (Adam, 4 buckets of 64 KiB) and an SGD-with-momentum
# CNN under a schedule train to the same bytes (params and slots) with the
# updates run inside their buckets' all-reduces as with each device running
# its own (MGC_FUSE_UPDATES=0), replicas checked bit for bit every 5 steps; the
# trace shows the all-reduces that ran them, and none with the switch off.
# An update that clips by the global norm (tests/train/global_clipnorm.mg)
# stays on the compute stream, where it waits for the norm.
source "$SRC/tests/cli/lib.sh"

sed -e 's/optimizer = adam(learning_rate: 0.001)/optimizer = sgd(learning_rate: cosine_decay(0.05, decay_steps: 40), momentum: 0.9, weight_decay: 0.001)/' \
  "$SRC/examples/mnist_cnn.mg" > "$tmp/sgd_cnn.mg"
grep -q 'optimizer = sgd' "$tmp/sgd_cnn.mg" || fail "the SGD model was not made"
for model in "$SRC/examples/mnist_cnn.mg" "$tmp/sgd_cnn.mg"; do
  for devices in cpu:0,cpu:1 cpu:0,cpu:1,cpu:2,cpu:3; do
    name=$(basename "$model" .mg)-$(echo "$devices" | tr -cd , | wc -c)
    "$MGC" compile "$model" --devices "$devices" --bucket-bytes 65536 -o "$tmp/$name.mgx" 2>/dev/null
    "$MGC" run "$tmp/$name.mgx" --steps 12 --check-replicas 5 --save "$tmp/$name-in.safetensors" \
      --trace "$tmp/$name-in.json" --trace-steps 2:2 >/dev/null || fail "$name: the run with updates inside failed"
    MGC_FUSE_UPDATES=0 "$MGC" run "$tmp/$name.mgx" --steps 12 --check-replicas 5 --save "$tmp/$name-apart.safetensors" \
      --trace "$tmp/$name-apart.json" --trace-steps 2:2 >/dev/null || fail "$name: the run with updates apart failed"
    cmp -s "$tmp/$name-in.safetensors" "$tmp/$name-apart.safetensors" ||
      fail "$name: updates inside the all-reduce saved other bytes than updates apart"
    grep -q '"updates":' "$tmp/$name-in.json" || fail "$name: no all_reduce ran updates inside it"
    ! grep -q '"updates":' "$tmp/$name-apart.json" || fail "$name: MGC_FUSE_UPDATES=0 still ran updates inside"
  done
done
"$MGC" compile "$SRC/tests/train/global_clipnorm.mg" --devices cpu:0,cpu:1 -o "$tmp/clip.mgx" 2>/dev/null
"$MGC" dump "$tmp/clip.mgx" --replicated > "$tmp/clip.txt"
"$PY" - "$tmp/clip.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
ops = dict(re.findall(r"^(%\d+) = (\w+)\(", text, re.M))
comm = re.search(r"^# train cpu:0/comm: (.*)$", text, re.M).group(1).split()
compute = re.search(r"^# train cpu:0: (.*)$", text, re.M).group(1).split()
assert not any(ops.get(t, "").endswith("_update") for t in comm), comm
assert any(ops.get(t, "").endswith("_update") for t in compute), compute
PY
echo ok
