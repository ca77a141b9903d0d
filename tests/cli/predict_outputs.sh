# several outputs and a weighted sum of losses (issue 12): predict writes
# OUT.NAME.npy for each output (a model with one output writes OUT itself),
# the values are the model's (numpy from the saved weights, with a partial
# last batch on 2 devices), and eval's loss is xent + 0.5 mse plus the
# regularizers' penalties on the saved weights (Keras' reported loss).
source "$SRC/tests/cli/lib.sh"

"$MGC" compile "$SRC/tests/train/losses.mg" --devices cpu:0,cpu:1 --global-batch 16 -o "$tmp/m.mgx" 2>/dev/null
"$MGC" inspect "$tmp/m.mgx" > "$tmp/inspect"
expect_line "$tmp/inspect" '^outputs +logits: f32\[16,4\] regression: f32\[16,3\] +\(predict -o OUT.npy writes OUT.NAME.npy each\)$'
"$PY" - "$tmp" <<'PY'
import sys, numpy as np
r = np.random.default_rng(7)
np.save(sys.argv[1] + "/x.npy", r.uniform(-1, 1, (37, 12)).astype(np.float32))
np.save(sys.argv[1] + "/t.npy", r.uniform(-1, 1, (37, 3)).astype(np.float32))
np.save(sys.argv[1] + "/y.npy", r.integers(0, 4, 37).astype(np.int32))
PY
data=(--input "x=$tmp/x.npy" --input "target=$tmp/t.npy" --input "label=$tmp/y.npy")
"$MGC" run "$tmp/m.mgx" --steps 3 "${data[@]}" --save "$tmp/w.safetensors" > /dev/null
"$MGC" predict "$tmp/m.mgx" --load "$tmp/w.safetensors" --input "x=$tmp/x.npy" -o "$tmp/p.npy"
[ ! -e "$tmp/p.npy" ] || fail "predict of two outputs wrote p.npy"
"$MGC" predict "$tmp/m.mgx" --load "$tmp/w.safetensors" --input "x=$tmp/x.npy" -o "$tmp/q"
"$MGC" eval "$tmp/m.mgx" --load "$tmp/w.safetensors" "${data[@]}" --json > "$tmp/eval.json"
"$PY" - "$tmp" <<'PY'
import json, struct, sys
import numpy as np
d = sys.argv[1]
raw = open(d + "/w.safetensors", "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
w = {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], np.float32).reshape(v["shape"]).astype(np.float64)
     for k, v in head.items() if k != "__metadata__"}
x, t, y = (np.load(d + f).astype(np.float64) for f in ("/x.npy", "/t.npy", "/y.npy"))
h = np.tanh(x @ w["dense/kernel"] + w["dense/bias"])
logits = h @ w["dense_1/kernel"] + w["dense_1/bias"]
regression = h @ w["dense_2/kernel"] + w["dense_2/bias"]
for name, want in (("logits", logits), ("regression", regression)):
    for out in ("p", "q"):
        got = np.load(f"{d}/{out}.{name}.npy")
        assert got.shape == want.shape, (out, name, got.shape)
        err = np.abs(got - want).max()
        assert err < 1e-5, (out, name, err)
z = logits - logits.max(1, keepdims=True)
xent = (np.log(np.exp(z).sum(1)) - z[np.arange(len(y)), y.astype(int)]).mean()
mse = ((regression - t) ** 2).mean()
penalty = (0.01 * (w["dense/kernel"] ** 2).sum() + 0.02 * np.abs(w["dense/bias"]).sum()
           + 0.005 * np.abs(w["dense_1/kernel"]).sum() + 0.03 * (w["dense_1/kernel"] ** 2).sum())
e = json.loads(open(d + "/eval.json").read())
want = xent + 0.5 * mse + penalty
print(f"eval loss {e['loss']:.7f}, xent + 0.5 mse + penalties {want:.7f} (penalties {penalty:.5f})")
assert abs(e["loss"] - want) < 1e-5 * max(1, abs(want)), (e, want)
assert abs(e["xent"] - xent) < 1e-5 and abs(e["mse"] - mse) < 1e-5, (e, xent, mse)
PY
# the naming is in the help (one output: OUT itself, tests/cli/train.sh)
"$MGC" predict --help > "$tmp/help"
expect_line "$tmp/help" 'writes OUT.NAME.npy for each'
