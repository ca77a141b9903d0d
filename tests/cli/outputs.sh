# Files mgc writes and reads (issue 11): every output path is checked before any work;
# a device node, FIFO or directory in the way is refused and left as it was;
# a symlink is followed (the link stays, its target gets the new bytes); a
# 250-byte file name works (the temporary name is short). A FIFO is never read.
source "$SRC/tests/cli/lib.sh"

"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0 -o "$tmp/m.mgx" 2>/dev/null
"$PY" - "$tmp" <<'PY'
import sys, numpy as np
r = np.random.default_rng(4)
np.save(sys.argv[1] + "/x.npy", r.random((64, 28, 28, 1), dtype=np.float32))
np.save(sys.argv[1] + "/y.npy", r.integers(0, 10, 64).astype(np.int32))
PY
data=(--input "image=$tmp/x.npy" --input "label=$tmp/y.npy")
mknod "$tmp/null" c 1 3
mkfifo "$tmp/fifo"
mkdir "$tmp/dir"
for flag in --save --history; do
  expect_fail "mgc: $tmp/null: not a regular file (a character device); mgc writes only regular files" \
    "$MGC" run "$tmp/m.mgx" --steps 1 "${data[@]}" $flag "$tmp/null"
done
[ -c "$tmp/null" ] || fail "the device node was replaced"
expect_fail "mgc: $tmp/fifo: not a regular file (a FIFO); mgc writes only regular files" \
  "$MGC" predict "$tmp/m.mgx" --load "$tmp/none.safetensors" --input "image=$tmp/x.npy" -o "$tmp/fifo"
[ -p "$tmp/fifo" ] || fail "the FIFO was replaced"
expect_fail "mgc: $tmp/dir: not a regular file (a directory); mgc writes only regular files" \
  "$MGC" compile "$SRC/examples/mlp.mg" -o "$tmp/dir"
expect_fail "mgc: $tmp/nowhere/w.safetensors: cannot write: No such file or directory" \
  "$MGC" run "$tmp/m.mgx" --steps 1 "${data[@]}" --save "$tmp/nowhere/w.safetensors"
expect_fail "mgc: $tmp/m.mgx: not a directory; --checkpoint-dir names one" \
  "$MGC" run "$tmp/m.mgx" --steps 1 "${data[@]}" --checkpoint-dir "$tmp/m.mgx"
# refused before training: no epoch line was printed
! grep -q "^Epoch" "$tmp/out" || fail "training ran before the bad output was refused"

# a symlink is followed
echo old > "$tmp/target.safetensors"
ln -s target.safetensors "$tmp/link.safetensors"
"$MGC" run "$tmp/m.mgx" --steps 1 "${data[@]}" --save "$tmp/link.safetensors" > /dev/null
[ -L "$tmp/link.safetensors" ] || fail "the symlink was replaced by a file"
[ "$(head -c 3 "$tmp/target.safetensors")" != old ] || fail "the symlink's target was not written"

# a 250-byte name
long=$(printf 'w%.0s' $(seq 250))
"$MGC" run "$tmp/m.mgx" --steps 1 "${data[@]}" --save "$tmp/$long" > /dev/null || fail "a 250-byte file name failed"
[ -s "$tmp/$long" ] || fail "nothing written under a 250-byte name"
# reading: a FIFO without a writer is refused at once, not waited on
for cmd in "inspect $tmp/fifo" "run $tmp/m.mgx --steps 1 --load $tmp/fifo ${data[*]}" \
           "run $tmp/m.mgx --steps 1 --input image=$tmp/fifo --input label=$tmp/y.npy"; do
  status=0
  timeout 20 "$MGC" $cmd > /dev/null 2> "$tmp/err" || status=$?
  [ "$status" = 1 ] || fail "mgc $cmd: status $status"
  expect_line "$tmp/err" "^mgc: $tmp/fifo: not a regular file \\(a FIFO\\); mgc reads only regular files$"
done

# --input: the whole example shape must match (1-sized axes aside), not just the element count
"$PY" -c 'import sys, numpy as np; np.save(sys.argv[1], np.zeros((64, 14, 56), np.float32))' "$tmp/x1456.npy"
expect_fail "mgc: $tmp/x1456.npy: examples are 14x56 but input 'image' wants f32[28,28,1]" \
  "$MGC" run "$tmp/m.mgx" --steps 1 --input "image=$tmp/x1456.npy" --input "label=$tmp/y.npy"
# data smaller than one global batch: refused before the plan's arenas are allocated and a
# step runs (that takes ~23 s here; the refusal ~1.6 s, 10 s leaves room for ASan under load)
"$MGC" compile "$SRC/examples/mlp.mg" --devices cpu:0 --global-batch 60001 -o "$tmp/big.mgx" 2>/dev/null
start=$(date +%s%N)
expect_fail "mgc: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz: 60000 examples, fewer than one global batch of 60001" \
  "$MGC" run "$tmp/big.mgx" --steps 1
[ $(( ($(date +%s%N) - start) / 1000000 )) -lt 10000 ] || fail "refusing a too-large global batch took over 10 s"

# --history: never truncated before the first epoch ends, rewritten whole at each epoch end
printf '{"epoch": 1}\n' > "$tmp/h.jsonl"
expect_fail "mgc: $tmp/missing.npy: cannot open: No such file or directory" \
  "$MGC" run "$tmp/m.mgx" --steps 1 --input "image=$tmp/missing.npy" --input "label=$tmp/y.npy" --history "$tmp/h.jsonl"
[ "$(cat "$tmp/h.jsonl")" = '{"epoch": 1}' ] || fail "a run that failed before its first epoch changed the history"
"$MGC" run "$tmp/m.mgx" --epochs 3 "${data[@]}" --history "$tmp/h.jsonl" > /dev/null
"$PY" -c 'import json, sys; e = [json.loads(l) for l in open(sys.argv[1])]; assert [x["epoch"] for x in e] == [1, 2, 3], e' \
  "$tmp/h.jsonl" || fail "history: $(cat "$tmp/h.jsonl")"
# a write error fails the run with the file's name, and the file keeps complete lines
cp "$tmp/h.jsonl" "$tmp/h2.jsonl"
status=0
bash -c 'ulimit -f 1; trap "" XFSZ; exec "$@"' sh "$MGC" run "$tmp/m.mgx" --epochs 20 "${data[@]}" \
  --history "$tmp/h2.jsonl" > /dev/null 2> "$tmp/err" || status=$?
[ "$status" = 1 ] || fail "a history that cannot grow: status $status"
expect_line "$tmp/err" "^mgc: $tmp/h2.jsonl: cannot write: File too large$"
"$PY" -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/h2.jsonl" || fail "a partial history line"
echo ok
