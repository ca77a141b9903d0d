# The vision examples of issue 12: each compiles for 2 devices with Keras'
# param counts (resnet20, mobilenet, unet), and the U-Net learns its
# segmentation task: after 60 steps its test pixel accuracy beats predicting
# "background" everywhere (0.685) by a clear margin. Issue 13: char_gpt
# compiles with its 875,520 params and the tokens/label/logits convention of
# `mgc run --data text:` and `mgc generate`, and takes 3 steps on random bytes.
. "$(dirname "$0")/lib.sh"
params() { "$MGC" inspect "$tmp/$1.mgx" > "$tmp/$1.txt"; expect_line "$tmp/$1.txt" "^trainable parameters: $2\$"
           expect_line "$tmp/$1.txt" "^non-trainable parameters: $3\$"; }
for ex in resnet20 mobilenet unet char_gpt; do
  "$MGC" compile "$SRC/examples/$ex.mg" --devices cpu:0,cpu:1 -o "$tmp/$ex.mgx"
done
params resnet20 272,186 1,568
params mobilenet 36,874 1,472
params unet 117,073 640
expect_line "$tmp/unet.txt" '^outputs +mask_logits: f32\[64,28,28,1\]$'
params char_gpt 875,520 0
expect_line "$tmp/char_gpt.txt" '^inputs +tokens: i32\[32,128\] label: i32\[32,128\]'
expect_line "$tmp/char_gpt.txt" '^outputs +logits: f32\[32,128,256\]$'
$PY - "$tmp" <<'PY'
import numpy as np, sys
bytes_ = np.random.default_rng(1).integers(0, 256, 64 * 128 + 1).astype(np.int32)
np.save(sys.argv[1] + "/tokens.npy", bytes_[:-1].reshape(64, 128))
np.save(sys.argv[1] + "/label.npy", bytes_[1:].reshape(64, 128))
PY
"$MGC" run "$tmp/char_gpt.mgx" --input tokens="$tmp/tokens.npy" --input label="$tmp/label.npy" --steps 3 \
  --history "$tmp/gpt.jsonl" > /dev/null
$PY - "$tmp/gpt.jsonl" <<'PY'
import json, math, sys
r = json.loads(open(sys.argv[1]).readlines()[-1])
print("char_gpt after 3 steps on random bytes: loss", r["loss"], "perplexity", r["perplexity"])
assert 5.0 < r["loss"] < 7.0 and math.isfinite(r["perplexity"]), r  # ln 256 = 5.55 at chance
PY

"$MGC" run "$tmp/unet.mgx" --steps 60 --save "$tmp/unet.st" > /dev/null
"$MGC" eval "$tmp/unet.mgx" --load "$tmp/unet.st" --json > "$tmp/eval.json"
$PY - "$tmp/eval.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
acc = r["pixel_accuracy"] if "pixel_accuracy" in r else r["metrics"]["pixel_accuracy"]
print("unet test pixel accuracy after 60 steps:", acc)
assert acc > 0.80, f"pixel accuracy {acc} is not clearly above the all-background 0.685"
PY
echo ok
