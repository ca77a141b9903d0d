# training through the CLI: learns, same seed gives the same bytes, a resumed
# run ends bit-identical to an uninterrupted one, eval and predict work.
. "$(dirname "$0")/lib.sh"
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1 -o "$tmp/m.mgx"
"$MGC" run "$tmp/m.mgx" --steps 120 --seed 3 --save "$tmp/a.safetensors" --history "$tmp/h.jsonl" > "$tmp/log"
expect_line "$tmp/log" '^epoch 1/1 - test loss: [0-9.]+ - test accuracy: 0\.[0-9]+ \(10000 examples\)$'
"$PY" - "$tmp/h.jsonl" <<'PY'
import json, sys
h = [json.loads(l) for l in open(sys.argv[1])]
assert len(h) == 1, h
e = h[0]
for k in ("epoch", "loss", "accuracy", "val_loss", "val_accuracy", "images_per_sec", "seconds"):
    assert k in e, (k, e)
assert e["val_accuracy"] > 0.70, e   # 120 steps of batch 128
assert e["loss"] < 1.0, e
PY
# same seed, same bytes
"$MGC" run "$tmp/m.mgx" --steps 120 --seed 3 --save "$tmp/b.safetensors" > /dev/null
cmp "$tmp/a.safetensors" "$tmp/b.safetensors" || fail "two runs with the same seed differ"
# stop after 50 steps, resume to 120: bit-identical
"$MGC" run "$tmp/m.mgx" --steps 50 --seed 3 --save "$tmp/half.safetensors" > /dev/null
"$MGC" run "$tmp/m.mgx" --steps 120 --load "$tmp/half.safetensors" --save "$tmp/c.safetensors" > /dev/null
cmp "$tmp/a.safetensors" "$tmp/c.safetensors" || fail "a resumed run differs from an uninterrupted one"
# the checkpoint of a 2-replica plan loads into a 1-replica plan and a 3-replica plan, same scores
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0 -o "$tmp/one.mgx"
"$MGC" compile "$SRC/examples/mnist_cnn.mg" --devices cpu:0,cpu:1,cpu:2 --global-batch 96 -o "$tmp/three.mgx"
"$MGC" eval "$tmp/m.mgx" --load "$tmp/a.safetensors" --json > "$tmp/e2"
"$MGC" eval "$tmp/one.mgx" --load "$tmp/a.safetensors" --json > "$tmp/e1"
"$MGC" eval "$tmp/three.mgx" --load "$tmp/a.safetensors" --json > "$tmp/e3"
"$PY" - "$tmp/e1" "$tmp/e2" "$tmp/e3" <<'PY'
import json, sys
r = [json.load(open(f)) for f in sys.argv[1:]]
for e in r:
    assert e["examples"] == 10000, e
    assert abs(e["loss"] - r[0]["loss"]) < 1e-5 and abs(e["accuracy"] - r[0]["accuracy"]) < 1e-9, r
PY
# predict: one row of 10 logits per example, also with a partial last batch
"$PY" - "$tmp/x.npy" <<'PY'
import gzip, numpy as np, sys
raw = gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").read()
x = np.frombuffer(raw[16:], np.uint8).reshape(-1, 28, 28, 1)[:130].astype(np.float32) / 255
np.save(sys.argv[1], x)
PY
"$MGC" predict "$tmp/m.mgx" --load "$tmp/a.safetensors" --input image="$tmp/x.npy" -o "$tmp/y.npy"
"$PY" -c "import numpy as np,sys; y=np.load(sys.argv[1]); assert y.shape==(130,10) and y.dtype==np.float32, y.shape" "$tmp/y.npy"
echo ok
