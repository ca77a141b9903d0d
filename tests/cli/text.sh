# text data and mgc generate (issue 13): a bigram character model trained on
# "abcabc..." continues "ab" with "cabcabcabc" at temperature 0 (the logits of
# the prompt's last position, also once the text outgrows the window); a seed
# gives one text, another seed another; 2 devices train the params of 1
# device; every error names the file and what is wrong.
source "$SRC/tests/cli/lib.sh"

model="$SRC/tests/train/char_bigram.mg"
"$MGC" compile "$model" --devices cpu:0 -o "$tmp/m1.mgx" 2>/dev/null
"$MGC" compile "$model" --devices cpu:0,cpu:1 -o "$tmp/m2.mgx" 2>/dev/null
"$PY" -c "open('$tmp/abc.txt', 'w').write('abc' * 400)"   # 1200 bytes: 1080 train, 120 validation
"$MGC" run "$tmp/m1.mgx" --data "text:$tmp/abc.txt" --context 8 --steps 100 --save "$tmp/w1.safetensors" > "$tmp/run1"
"$MGC" run "$tmp/m2.mgx" --data "text:$tmp/abc.txt" --steps 100 --save "$tmp/w2.safetensors" > "$tmp/run2"
# (1079 / 8) = 134 training windows of 8 per epoch: 16 steps of 8; (119 / 8) = 14 validation windows
expect_line "$tmp/run1" '^16/16 '
expect_line "$tmp/run1" '^epoch 7/7 - test loss: 0\.0[0-9]+ \(14 examples\)$'

# 2 devices at the same global batch end with the params of 1 device
"$PY" - "$tmp/w1.safetensors" "$tmp/w2.safetensors" <<'PY'
import json, struct, sys
import numpy as np
def load(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n]); data = raw[8 + n:]
    return {k: np.frombuffer(data[v["data_offsets"][0]:v["data_offsets"][1]], np.float32)
            for k, v in head.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys() and len(a) >= 3, (a.keys(), b.keys())
worst = max(float(np.abs(a[k] - b[k]).max()) for k in a)
print(f"1 vs 2 devices after 100 steps on text: max |diff| {worst:.2e}")
assert worst < 1e-5, worst
PY

gen=("$MGC" generate "$tmp/m1.mgx" --load "$tmp/w1.safetensors")
[ "$("${gen[@]}" --prompt ab --tokens 10 --temperature 0)" = abcabcabcabc ] || fail "temperature 0: $("${gen[@]}" --prompt ab --tokens 10 --temperature 0)"
[ "$("${gen[@]}" --prompt bcab --tokens 7 --top-k 1 --seed 9)" = bcabcabcabc ] || fail "top-k 1 is not the argmax"
[ "$("${gen[@]}" --prompt ab --tokens 10 --temperature 0 --seed 5)" = abcabcabcabc ] || fail "temperature 0 depends on the seed"
"${gen[@]}" --prompt ab --tokens 40 --temperature 20 --seed 3 > "$tmp/s3"
"${gen[@]}" --prompt ab --tokens 40 --temperature 20 --seed 3 > "$tmp/s3b"
"${gen[@]}" --prompt ab --tokens 40 --temperature 20 --seed 4 > "$tmp/s4"
cmp -s "$tmp/s3" "$tmp/s3b" || fail "seed 3 gave two texts"
! cmp -s "$tmp/s3" "$tmp/s4" || fail "seeds 3 and 4 gave the same text"
[ "$(head -c 2 "$tmp/s3")" = ab ] && [ "$(wc -c < "$tmp/s3")" = 43 ] || fail "not the prompt, 40 bytes and a newline: $(od -c "$tmp/s3" | head)"
"$MGC" eval "$tmp/m2.mgx" --load "$tmp/w1.safetensors" --data "text:$tmp/abc.txt" --context 8 > "$tmp/eval"
expect_line "$tmp/eval" '^test loss: 0\.0[0-9]+ \(14 examples\)$'

# errors
printf '' > "$tmp/empty.txt"
"$PY" -c "open('$tmp/fifty.txt', 'w').write('x' * 50)"
expect_fail "mgc: $tmp/nope.txt: cannot open: No such file or directory" "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/nope.txt"
expect_fail "mgc: $tmp/empty.txt: the file is empty" "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/empty.txt"
expect_fail "mgc: $tmp/fifty.txt: 5 examples of text in its training part, fewer than one global batch of 8" \
  "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/fifty.txt"
expect_fail "mgc: $tmp/fifty.txt: 50 bytes: its validation part (the last 10%, 5 bytes) is too short for one example of --context 8 (9 bytes)" \
  "$MGC" eval "$tmp/m1.mgx" --load "$tmp/w1.safetensors" --data "text:$tmp/fifty.txt"
expect_fail "mgc: $tmp/abc.txt: --context 4 but input 'tokens' is i32[batch,8]" \
  "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/abc.txt" --context 4
expect_fail "mgc: --context 4 needs --data text:PATH" "$MGC" run "$tmp/m1.mgx" --context 4
expect_fail "mgc: --context: '0' is not an integer from 1 to 65536" "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/abc.txt" --context 0
expect_fail "mgc: --data text:$tmp/abc.txt and --input both bind the model's inputs; give one" \
  "$MGC" run "$tmp/m1.mgx" --data "text:$tmp/abc.txt" --input "tokens=$tmp/t.npy"
"$MGC" compile "$SRC/examples/mlp.mg" -o "$tmp/mlp.mgx" 2>/dev/null
expect_fail "mgc: $tmp/abc.txt: text data needs i32 inputs [batch, T], input 'image' is f32[28,28,1]" \
  "$MGC" run "$tmp/mlp.mgx" --data "text:$tmp/abc.txt"
expect_fail "mgc: $tmp/mlp.mgx: generate needs a model whose outputs read one i32 input [batch, T] (the tokens); model 'mlp' reads 1 input f32[28,28,1] per example" \
  "$MGC" generate "$tmp/mlp.mgx" --load "$tmp/w1.safetensors" --prompt a --tokens 3
# the first output must be the logits [batch, T, V <= 256]; prompt bytes must be tokens of the model
sed 's/^  output logits =/  output flat = flatten(e)\n  logits =/' "$model" > "$tmp/flat.mg"
sed 's/^  output logits =/  output small = dense(e, 3)\n  logits =/' "$model" > "$tmp/small.mg"
for v in flat small; do "$MGC" compile "$tmp/$v.mg" -o "$tmp/$v.mgx" 2>/dev/null; done
"$MGC" run "$tmp/small.mgx" --data "text:$tmp/abc.txt" --steps 1 --save "$tmp/small.safetensors" > /dev/null
expect_fail "mgc: $tmp/flat.mgx: generate needs the model's first output to be f32 logits [batch, 8, V] with V <= 256; output 'flat' is not" \
  "$MGC" generate "$tmp/flat.mgx" --load "$tmp/w1.safetensors" --prompt a --tokens 3
expect_fail "mgc: --prompt: byte 1 is 98, outside the model's 3 tokens" \
  "$MGC" generate "$tmp/small.mgx" --load "$tmp/small.safetensors" --prompt $'\002b' --tokens 3
[ "$("$MGC" generate "$tmp/small.mgx" --load "$tmp/small.safetensors" --prompt $'\001' --tokens 20 | tr -d '\000\001\002' | wc -c)" = 1 ] ||
  fail "a model of 3 tokens generated other bytes"
expect_fail "mgc: --prompt is empty: generate needs at least one byte to start from" "${gen[@]}" --prompt "" --tokens 3
expect_fail "mgc: generate needs --tokens N" "${gen[@]}" --prompt a
expect_fail "mgc: --temperature: '-1' is not a number from 0 to 100" "${gen[@]}" --prompt a --tokens 2 --temperature -1
expect_fail "mgc: --top-k: '257' is not an integer from 0 to 256" "${gen[@]}" --prompt a --tokens 2 --top-k 257
echo "text data and generate: ok"
