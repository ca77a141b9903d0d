# issue 14: batch norm's scale/shift in the conv epilogue (conv2d_bn_epilogue,
# docs/epilogue.md). On every model with a convolution's batch norm, a fused
# plan and an unfused one (--no-fuse), trained from the same seed for 2
# epochs with a validation pass after each (the eval program running between
# epochs, in one session), then evaluated and asked for predictions: training
# is the same bits (the fused node is the unfused pass over the convolution in
# the train program); the validation scores after each epoch, eval's loss and
# metrics and the predictions agree within 1e-5 of their scale (eval and
# predict convolve with the filter times the batch-norm scale and add the
# shift as a oneDNN post-op, which rounds otherwise). The fused plan holds the
# fused nodes named and runs their convolutions in the train program only.
. "$(dirname "$0")/lib.sh"
export PYTHONPATH=$SRC/python MGC_LIBRARY=$(dirname "$MGC")/libmgc.so
"$PY" - "$tmp" <<'PY'
import gzip, sys, numpy as np
d = "/usr/share/datasets/fashion-mnist/"
x = np.frombuffer(gzip.open(d + "train-images-idx3-ubyte.gz").read()[16:16 + 320 * 784], np.uint8)
y = np.frombuffer(gzip.open(d + "train-labels-idx1-ubyte.gz").read()[8:8 + 320], np.uint8)
np.save(sys.argv[1] + "/x.npy", (x.reshape(320, 28, 28, 1) / 255).astype(np.float32))
np.save(sys.argv[1] + "/y.npy", y.astype(np.int32))
PY

# same MODEL DEVICES GLOBAL_BATCH FUSED : compile both ways, check the plans, train, eval, predict, compare
same() {
  local model=$1 dev=$2 gb=$3 want=$4
  local tag; tag=$(basename "$model" .mg).${dev//[:,]/_}
  "$MGC" compile "$model" --devices "$dev" --global-batch "$gb" -o "$tmp/$tag.f.mgx" --dump-after memplan > "$tmp/$tag.f.ir"
  "$MGC" compile "$model" --devices "$dev" --global-batch "$gb" --no-fuse -o "$tmp/$tag.n.mgx" \
    --dump-after memplan > "$tmp/$tag.n.ir"
  local replicas; replicas=$(tr ',' '\n' <<< "$dev" | wc -l)
  local got; got=$(grep -c '= conv2d_bn_epilogue(' "$tmp/$tag.f.ir" || true)
  [ "$got" = $((want * replicas)) ] || fail "$tag: $got conv2d_bn_epilogue nodes, expected $((want * replicas))"
  ! grep -q 'conv2d_bn_epilogue' "$tmp/$tag.n.ir" || fail "$tag: --no-fuse holds a conv2d_bn_epilogue"
  # each fused node's convolution runs in training only (besides the unfused
  # plan's train-only ones: a conv2d_transpose's gradient)
  got=$(grep -E '= conv2d\(' "$tmp/$tag.f.ir" | grep -c ' {train} ' || true)
  local base; base=$(grep -E '= conv2d\(' "$tmp/$tag.n.ir" | grep -c ' {train} ' || true)
  [ "$got" = $((base + want * replicas)) ] ||
    fail "$tag: $got train-only conv2d nodes, expected $((base + want * replicas))"
  "$PY" - "$tmp" "$tag" <<'PY'
import sys
import numpy as np
import mgc
tmp, tag = sys.argv[1:]
x, y = np.load(tmp + "/x.npy"), np.load(tmp + "/y.npy")
train, valid = {"image": x[:256], "label": y[:256]}, {"image": x[256:], "label": y[256:]}
runs = {}
for kind in "fn":
    plan = mgc.compile("%s/%s.%s.mgx" % (tmp, tag, kind), seed=5)
    hist = plan.fit(train, epochs=2, validation_data=valid, verbose=0)
    runs[kind] = hist, plan.evaluate(valid), plan.predict(valid)
(hf, ef, pf), (hn, en, pn) = runs["f"], runs["n"]
def close(what, a, b):  # |a - b| <= 1e-5 (|b| + rms(b)), as tests/kern compares kernels
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    worst = float(np.max(np.abs(a - b) / (np.abs(b) + np.sqrt(np.mean(b * b)) + 1e-30)))
    assert worst <= 1e-5, "%s %s: fused vs --no-fuse %.3g apart (%s vs %s)" % (tag, what, worst, a.ravel()[:4], b.ravel()[:4])
    return worst
assert hf.keys() == hn.keys() and "val_loss" in hf, (hf, hn)
for k in hf:
    if k.startswith("val_"):
        close(k + " per epoch", hf[k], hn[k])
    else:
        assert hf[k] == hn[k], (tag, k, hf[k], hn[k])  # training: the same bits
assert hf["val_loss"][0] != hf["val_loss"][1], hf  # the second epoch's eval saw new variables
for k in ef:
    close("eval " + k, ef[k], en[k])
preds = [(pf, pn)] if not isinstance(pf, dict) else [(pf[k], pn[k]) for k in pf]
worst = max(close("predictions", a, b) for a, b in preds)
print("%s: training bit for bit; val %s, eval %s, predictions within %.3g of their scale (largest |difference| %.3g)" %
      (tag, hf["val_loss"], ef, worst, max(float(np.max(np.abs(a - b))) for a, b in preds)))
PY
}

same "$SRC/examples/resnet20.mg" cpu:0 32 21
same "$SRC/examples/mobilenet.mg" cpu:0 32 11
same "$SRC/examples/unet.mg" cpu:0 16 10
same "$SRC/tests/train/local_bn.mg" cpu:0 32 1
same "$SRC/tests/train/sync_bn.mg" cpu:0,cpu:1 32 1
same "$SRC/tests/train/mobilenet_tanh.mg" cpu:0 32 11
