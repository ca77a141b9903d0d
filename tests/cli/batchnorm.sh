# batch_norm's moving statistics (state): shown by inspect, trained, averaged
# over replicas when saved, and what eval reads after save -> load, exactly.
. "$(dirname "$0")/lib.sh"
model="$SRC/tests/train/local_bn.mg"
"$MGC" compile "$model" --devices cpu:0,cpu:1 -o "$tmp/two.mgx"
"$MGC" compile "$model" --devices cpu:0 -o "$tmp/one.mgx"
"$MGC" inspect "$tmp/two.mgx" > "$tmp/inspect"
expect_line "$tmp/inspect" '^state \(non-trainable\)$'
expect_line "$tmp/inspect" '^  batch_norm/moving_variance +f32\[8\] +8$'
expect_line "$tmp/inspect" '^non-trainable parameters: 16$'

"$MGC" run "$tmp/two.mgx" --steps 40 --save "$tmp/a.safetensors" --history "$tmp/h.jsonl" > /dev/null
"$MGC" eval "$tmp/two.mgx" --load "$tmp/a.safetensors" --json > "$tmp/e2"
"$MGC" eval "$tmp/one.mgx" --load "$tmp/a.safetensors" --json > "$tmp/e1"
"$PY" - "$tmp/a.safetensors" "$tmp/h.jsonl" "$tmp/e1" "$tmp/e2" <<'PY'
import json, struct, sys
import numpy as np
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
def tensor(name):
    a, b = head[name]["data_offsets"]
    return np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.float32)
mean, var = tensor("batch_norm/moving_mean"), tensor("batch_norm/moving_variance")
assert np.abs(mean).max() > 1e-3 and np.abs(var - 1).max() > 1e-3, (mean, var)  # moved by training
hist = json.loads(open(sys.argv[2]).readline())
e1, e2 = (json.load(open(f)) for f in sys.argv[3:])
# the end-of-training eval (state averaged over the replicas) and eval after
# save -> load read the same statistics: the same bits (replica 0's alone give
# another loss); one device reads them too (its batches sum in another order)
assert e2["loss"] == hist["val_loss"], (e2, hist)
assert abs(e1["loss"] - e2["loss"]) < 1e-6, (e1, e2)
PY

# a checkpoint without the moving statistics is refused, not zero-filled
"$PY" - "$tmp/a.safetensors" "$tmp/no_state.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + n])
keep = {k: v for k, v in head.items() if "moving" not in k}
body, out = b"", {}
for k, v in keep.items():
    if k == "__metadata__":
        out[k] = v
        continue
    a, b = v["data_offsets"]
    out[k] = dict(v, data_offsets=[len(body), len(body) + b - a])
    body += raw[8 + n + a:8 + n + b]
h = json.dumps(out).encode()
open(sys.argv[2], "wb").write(struct.pack("<Q", len(h)) + h + body)
PY
expect_fail "mgc: $tmp/no_state.safetensors: tensor 'batch_norm/moving_mean' is missing" \
  "$MGC" eval "$tmp/two.mgx" --load "$tmp/no_state.safetensors"
echo ok
