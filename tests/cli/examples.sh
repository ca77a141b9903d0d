# The vision examples of issue 12: each compiles for 2 devices with Keras'
# param counts (resnet20, mobilenet, unet), and the U-Net learns its
# segmentation task: after 60 steps its test pixel accuracy beats predicting
# "background" everywhere (0.685) by a clear margin.
. "$(dirname "$0")/lib.sh"
params() { "$MGC" inspect "$tmp/$1.mgx" > "$tmp/$1.txt"; expect_line "$tmp/$1.txt" "^trainable parameters: $2\$"
           expect_line "$tmp/$1.txt" "^non-trainable parameters: $3\$"; }
for ex in resnet20 mobilenet unet; do
  "$MGC" compile "$SRC/examples/$ex.mg" --devices cpu:0,cpu:1 -o "$tmp/$ex.mgx"
done
params resnet20 272,186 1,568
params mobilenet 36,874 1,472
params unet 117,073 640
expect_line "$tmp/unet.txt" '^outputs +mask_logits: f32\[64,28,28,1\]$'

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
