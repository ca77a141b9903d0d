# Race-free plans (issue 10): the model whose all-reduce once raced the compute
# stream trains on 2 devices with --check-replicas 1 to the same bits run after
# run and within 1e-5 of 1 device; a plan whose comm stream no longer waits for
# the gradients it reduces is refused by every command that loads it, naming
# both nodes, their streams and byte ranges.
source "$SRC/tests/cli/lib.sh"

"$PY" - "$tmp" <<'PY'
import sys, numpy as np
r = np.random.default_rng(0)
np.save(sys.argv[1] + "/x.npy", r.standard_normal((64, 8)).astype(np.float32))
np.save(sys.argv[1] + "/label.npy", r.integers(0, 300000, 64).astype(np.int32))
PY
data=(--input "x=$tmp/x.npy" --input "label=$tmp/label.npy")
"$MGC" compile "$SRC/tests/train/wide_logits.mg" --devices cpu:0,cpu:1 -o "$tmp/w2.mgx" 2>/dev/null
"$MGC" compile "$SRC/tests/train/wide_logits.mg" --devices cpu:0 --global-batch 16 -o "$tmp/w1.mgx" 2>/dev/null
"$MGC" run "$tmp/w1.mgx" --steps 3 "${data[@]}" --save "$tmp/w1.safetensors" >/dev/null
for k in 1 2 3; do
  "$MGC" run "$tmp/w2.mgx" --steps 3 --check-replicas 1 "${data[@]}" --save "$tmp/w2_$k.safetensors" >/dev/null ||
    fail "2-device run $k failed"
done
cmp -s "$tmp/w2_1.safetensors" "$tmp/w2_2.safetensors" && cmp -s "$tmp/w2_1.safetensors" "$tmp/w2_3.safetensors" ||
  fail "three 2-device runs saved different checkpoints"
"$PY" - "$tmp/w1.safetensors" "$tmp/w2_1.safetensors" <<'PY' || fail "2 devices differ from 1 device"
import json, struct, sys
import numpy as np
def load(path):
    b = open(path, "rb").read(); n, = struct.unpack("<Q", b[:8]); h = json.loads(b[8:8 + n])
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], np.float32)
            for k, v in h.items() if k != "__metadata__"}
a, b = load(sys.argv[1]), load(sys.argv[2])
for k in a:
    rel = np.linalg.norm(a[k] - b[k]) / max(np.linalg.norm(a[k]), 1e-30)
    if not rel < 1e-5: sys.exit(f"{k}: relative difference {rel:.2e}")
PY

# list 1 = the train program's comm stream on device 0
"$PY" "$SRC/tests/cli/mgx_edit.py" "$tmp/w2.mgx" "$tmp/racy.mgx" drop-waits 1
race='^mgc: [^ ]*racy.mgx: invalid plan: race in the train program on cpu:0: node [0-9]+ \([a-z_]+, compute stream, [^)]*wide_logits.mg:[0-9]+:[0-9]+\) (writes|reads) bytes \[[0-9]+, [0-9]+\) and node [0-9]+ \(all_reduce, comm stream, [^)]*\) (reads|writes) bytes \[[0-9]+, [0-9]+\), and neither happens before the other'
for cmd in "inspect $tmp/racy.mgx" "run $tmp/racy.mgx --steps 1 ${data[*]}"; do
  status=0
  "$MGC" $cmd >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = 1 ] || fail "mgc $cmd exited $status on a racy plan"
  expect_line "$tmp/err" "$race"
done
echo ok
